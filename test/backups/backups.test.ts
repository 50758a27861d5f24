import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import sharp from "sharp";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { loadConfig } from "../../src/config";
import { mutate } from "../../src/db/mutate";
import { openInstance } from "../../src/app/instance";
import { projectTables, writeSnapshot } from "../../src/platform/backups/snapshot.service";
import { writeStoreSnapshot } from "../../src/platform/backups/store-snapshot.service";
import { scheduleBackups } from "../../src/features/backups/backups.service";
import { features, housekeepingTasks, type Feature } from "../../src/features";
import type { JobKind } from "../../src/platform/jobs/runner";
import { readTar } from "../../src/platform/backups/tar";
import { runHousekeeping } from "../../src/platform/jobs/schedules";
import { createPerson, hashPassword } from "../../src/features/users/users.service";
import { servedUrl, TestServer, tokenOf, until, SLOW_TEST_MS } from "../helpers/server";
import { flagsFor } from "../helpers/s3";
import { freshDatabase } from "../helpers/pg-cluster";

let srv: TestServer;
let alice: { gid: string; token: string };
let bob: { gid: string; token: string };
let project: string;

/** Waits until the job's last `jobs` sync item (as the caller sees it) is final; returns all its items. */
const finished = (s: TestServer, token: string, jobToken: string, since: number) =>
  s.finalJobItems(token, jobToken, since);

async function cursor(token: string) {
  return (await srv.call("/sync/cursors", { token, body: {} })).body.result["cc.cursor"];
}

/** Every row of the project in every backed-up table (its own row too), as JSON, table by table. */
async function projectRows(s: TestServer, gid: string): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  for (const { table, by } of [{ table: "projects", by: "gid" }, ...(await projectTables(s.ctx.db))]) {
    const rows = await s.query(`SELECT * FROM "${table}" WHERE "${by}" = ?`).all(gid);
    out[table] = rows
      .map((r) => {
        // The project row's updated_on moves with every change; last_backed_up and the next backup version are not restored.
        if (table === "projects") {
          const { updated_on: _u, last_backed_up: _l, next_backup_version: _n, ...rest } = r;
          r = rest;
        }
        return JSON.stringify(r, (_k, v) => (v instanceof Uint8Array ? Buffer.from(v).toString("base64") : v));
      })
      .sort();
  }
  return out;
}

/** The project's stored files (relative path → sha256), read through the server's store. */
async function projectFiles(s: TestServer, gid: string): Promise<Record<string, string>> {
  const blobs = s.ctx.storage.blobs;
  const under = `files/projects/${gid}/`;
  const out: [string, string][] = [];
  for await (const e of blobs.list(under)) {
    const bytes = await blobs.bytes(e.key);
    // Listed, then removed before it was read (a test that waits for deletes to finish): gone.
    if (bytes === undefined) continue;
    out.push([e.key.slice(under.length), createHash("sha256").update(bytes).digest("hex")]);
  }
  return Object.fromEntries(out.sort((a, b) => (a[0] < b[0] ? -1 : 1)));
}

/** Puts a file among the project's stored files (the data folder, or the bucket on the S3 pass). */
async function writeProjectFile(s: TestServer, gid: string, rel: string, content: string | Buffer) {
  await s.ctx.storage.blobs.put(`files/projects/${gid}/${rel}`, content);
}

/** The command-line flags naming a server's store (none for the data folder): what `apis backup` is given beside it. */
function storeArgs(s: TestServer): string[] {
  const c = s.ctx.config;
  if (s.ctx.storage.blobs.kind === "file") return dbArgs(s);
  return [
    ...dbArgs(s),
    "--storage",
    c.storage,
    "--s3-endpoint",
    c.s3Endpoint,
    "--s3-region",
    c.s3Region,
    "--s3-access-key-id",
    c.s3AccessKeyId,
    "--s3-secret-access-key",
    c.s3SecretAccessKey,
    "--s3-path-style",
    String(c.s3PathStyle),
  ];
}

/** Flags of another, empty store of the same kind as the server's (a restore's target). */
async function otherStore(s: TestServer, name: string): Promise<Record<string, string>> {
  // On PostgreSQL, another database too: a restore puts the archive's rows into it.
  const database: Record<string, string> = s.kind === "postgres" ? { database: (await freshDatabase(name)).url } : {};
  return { ...database, ...(s.ctx.storage.blobs.kind === "file" ? {} : await flagsFor("s3", name)) };
}

/** `--database` of the server's PostgreSQL database (none on SQLite: the data folder's file). */
function dbArgs(s: TestServer): string[] {
  return s.kind === "postgres" ? ["--database", s.ctx.config.database] : [];
}
const asArgs = (flags: Record<string, string>) => Object.entries(flags).flatMap(([k, v]) => [`--${k}`, v]);

/** The keys of a project's stored backups below `backups/projects/<project>/` (both stores). */
async function storedBackupKeys(s: TestServer, gid: string, under = ""): Promise<string[]> {
  const prefix = `backups/projects/${gid}/${under}`;
  const out: string[] = [];
  for await (const e of s.ctx.storage.blobs.list(prefix)) out.push(e.key.slice(prefix.length));
  return out.sort();
}

beforeAll(async () => {
  srv = await TestServer.start({ "backups-keep": "2" });
  alice = await srv.user("alice");
  bob = await srv.user("bob");
  project = await srv.project(alice.token, "Catalogue");
  await srv.addMember(project, bob.gid);
  // A table of a future area, known to nobody: backups must find it by its project_gid column.
  // Each database's own names for a float and a byte string.
  const [real, blob] = srv.kind === "sqlite" ? ["REAL", "BLOB"] : ["DOUBLE PRECISION", "BYTEA"];
  await srv
    .query(
      `CREATE TABLE widgets (gid TEXT PRIMARY KEY, project_gid TEXT NOT NULL REFERENCES projects(gid), name TEXT, n ${real}, raw ${blob}, owner TEXT REFERENCES users(gid))`,
    )
    .run();
  const ins = srv.query("INSERT INTO widgets VALUES (?, ?, ?, ?, ?, ?)");
  for (let i = 0; i < 1200; i++)
    await ins.run(
      `w${i}`,
      project,
      `widget ${i} ✓`,
      i / 3,
      new Uint8Array([i % 256, 0, 255]),
      i % 2 ? alice.gid : null,
    );
  await ins.run("other", await srv.project(bob.token, "Bob's"), "not ours", 1, null, null);
  // An asset row: a table of a known sync data type, with a full-text index kept by triggers.
  const t = Date.now() / 1000;
  await srv
    .query(
      "INSERT INTO assets (gid, project_gid, type, name, created_on, updated_on) VALUES ('asset1', ?, 'file', 'Spring leaflet', ?, ?)",
    )
    .run(project, t, t);
  await writeProjectFile(srv, project, "originals/a~1.jpg", Buffer.alloc(50_000, 7));
  await writeProjectFile(srv, project, "originals/b~1.png", "bee");
  await writeProjectFile(srv, project, "var/deep/er/c@k.jpg", "see");
  await srv.ctx.storage.blobs.put(`files/icons/${project}-icon.png`, "icon bytes");
  await srv.query("UPDATE projects SET icon = ? WHERE gid = ?").run(`${project}-icon.png`, project);
});
afterAll(() => srv.stop());

describe("project backups", () => {
  let backup: string;
  let version: number;
  let rowsAtBackup: Record<string, string[]>;
  let filesAtBackup: Record<string, string>;

  test("only members of the project may back up, list or restore", async () => {
    const carol = await srv.user("carol");
    for (const op of ["create", "get", "update", "restore", "delete"]) {
      const r = await srv.call(`/api/p/${project}/backups/${op}`, {
        token: carol.token,
        body: { version: 1, created_by: "x" },
      });
      expect(r.status).toBe(403);
      expect(r.body.result.message).toBe("Not a member of the project");
    }
    expect((await srv.call(`/api/p/${project}/backups/create`, { body: {} })).status).toBe(401);
    const noCreator = await srv.call(`/api/p/${project}/backups/create`, { token: alice.token, body: {} });
    expect(noCreator.status).toBe(400);
    expect(noCreator.body.result.info).toEqual({ "Missing parameter": "created_by" });
  });

  test("a backup is a job from queued to done that records the backup and sets last_backed_up", async () => {
    rowsAtBackup = await projectRows(srv, project);
    filesAtBackup = await projectFiles(srv, project);
    expect(rowsAtBackup.widgets).toHaveLength(1200);
    expect(rowsAtBackup.memberships).toHaveLength(2);
    const since = await cursor(alice.token);
    const r = await srv.call(`/api/p/${project}/backups/create`, {
      token: alice.token,
      body: { created_by: "Nightly export script", name: "Before the big edit", notes: "safe point" },
    });
    expect(r.status).toBe(200);
    const token = r.body.result["job.token"];
    version = r.body.result.version;
    expect(version).toBe(1);
    expect(r.body.result).toEqual({ project, version: 1, last_backed_up: expect.any(Number), "job.token": token });
    expect(Object.keys(r.body.data)).toEqual(["cc.projects"]);
    // The version becomes valid (listed) once the job is done.
    expect(r.body.data["cc.projects"][project].backups).toEqual({ versions: [], next_version: 2 });
    const items = await finished(srv, alice.token, token, since);
    expect(items[0].data.status).toBe("queued");
    expect(items.at(-1).data).toMatchObject({
      project_gid: project,
      job: "backup_project",
      status: "done",
      info: { version: 1, remaining: 0, files: 3 },
    });
    const got = await srv.call(`/api/p/${project}/backups/get`, { token: alice.token, body: { version } });
    expect(got.body.result).toMatchObject({ project, version: 1 });
    expect(got.body.result.backup).toMatchObject({
      version: 1,
      name: "Before the big edit",
      created_by: "Nightly export script",
      started_by: alice.gid,
      notes: "safe point",
      status: "ready",
      files: 3,
      // the project, its two memberships, the widgets, the asset, and the root record with its Base definition and layout
      rows: 1 + 2 + 1200 + 1 + 3,
      scheduled: false,
      completed_on: expect.any(Number),
      "job.token": token,
    });
    backup = (await srv
      .query<{ gid: string }>("SELECT gid FROM backups WHERE project_gid = ? AND version = 1")
      .get(project))!.gid;
    const p = await srv.call("/api/projects/get", { token: alice.token, body: { project } });
    expect(p.body.data["cc.projects"][project].backups).toEqual({
      versions: [
        {
          version: 1,
          name: "Before the big edit",
          created_by: "Nightly export script",
          timestamp: r.body.result.last_backed_up,
        },
      ],
      next_version: 2,
    });
    const init = await srv.call(`/api/p/${project}/init`, { token: alice.token, method: "GET" });
    expect(init.body.result.last_backed_up).toBe(r.body.result.last_backed_up);
    // The change travels as a cc.projects item, never as an item of a data type the spec does not list.
    const seen = (await srv.call("/sync/get", { token: alice.token, body: { cc_cursor: since } })).body.result
      .sync as any[];
    expect(seen).toContainEqual(
      expect.objectContaining({ action: "UPDATE", data_type: "cc.projects", data_key: project }),
    );
    expect(seen.every((i) => ["cc.projects", "jobs"].includes(i.data_type))).toBe(true);
    const tops = new Set((await storedBackupKeys(srv, project, `${backup}/`)).map((k) => k.split("/")[0]));
    expect([...tops].sort()).toEqual(["files", "icon", "manifest.json", "tables"]);
    // Bob is a member but did not start it: he does not see the job.
    const bobs = await srv.call("/sync/get", { token: bob.token, body: { cc_cursor: since } });
    expect(bobs.body.result.sync.filter((i: any) => i.data_type === "jobs")).toEqual([]);
  });

  test("a restore returns every row and every file to the backed-up state and tells clients", async () => {
    // Change everything after the backup.
    await srv.call("/api/projects/update", { token: alice.token, body: { project, name: "Renamed" } });
    await srv.query("UPDATE widgets SET name = 'changed', n = 0 WHERE project_gid = ? AND gid LIKE '%7'").run(project);
    await srv.query("DELETE FROM widgets WHERE gid IN ('w1', 'w2')").run();
    await srv.query("INSERT INTO widgets VALUES ('new', ?, 'added later', 1, NULL, NULL)").run(project);
    await srv.query("UPDATE assets SET name = 'Autumn leaflet' WHERE gid = 'asset1'").run();
    await srv.query("DELETE FROM memberships WHERE project_gid = ? AND user_gid = ?").run(project, bob.gid);
    await writeProjectFile(srv, project, "originals/b~1.png", "changed bytes");
    await srv.ctx.storage.blobs.deletePrefix(`files/projects/${project}/var/`);
    await writeProjectFile(srv, project, "originals/new~1.jpg", "new file");
    await srv.ctx.storage.blobs.delete(`files/icons/${project}-icon.png`);
    expect(await projectRows(srv, project)).not.toEqual(rowsAtBackup);

    const since = await cursor(alice.token);
    const pSince = (await srv.call("/sync/cursors", { token: alice.token, body: { project } })).body.result.cursor;
    const r = await srv.call(`/api/p/${project}/backups/restore`, { token: alice.token, body: { version } });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      success: true,
      result: { project, version, last_restored: expect.any(Number), "job.token": expect.any(String) },
      data: {},
    });
    const items = await finished(srv, alice.token, r.body.result["job.token"], since);
    expect(items.at(-1).data).toMatchObject({
      job: "restore_project",
      status: "done",
      info: { version, files: 3, remaining: 0 },
    });

    expect(await projectRows(srv, project)).toEqual(rowsAtBackup);
    expect(await projectFiles(srv, project)).toEqual(filesAtBackup);
    expect(await (await srv.ctx.storage.blobs.get(`files/icons/${project}-icon.png`))?.text()).toBe("icon bytes");
    // Rows of other projects are untouched.
    expect(await srv.query("SELECT name FROM widgets WHERE gid = 'other'").get()).toEqual({ name: "not ours" });

    const cc = (await srv.call("/sync/get", { token: alice.token, body: { cc_cursor: since } })).body.result
      .sync as any[];
    expect(cc).toContainEqual(
      expect.objectContaining({ action: "UPDATE", data_type: "cc.projects", data_key: project }),
    );
    expect(cc).toContainEqual(
      expect.objectContaining({
        action: "INSERT",
        data_type: "cc.projects_members",
        data_key: `${project}/${bob.gid}`,
      }),
    );
    // Bob, back in the project, hears of it too.
    const bobs = (await srv.call("/sync/get", { token: bob.token, body: { cc_cursor: since } })).body.result
      .sync as any[];
    expect(bobs.map((i) => i.data_type)).toEqual(expect.arrayContaining(["cc.projects", "cc.projects_members"]));
    const p = await srv.call("/api/projects/get", { token: alice.token, body: { project } });
    expect(p.body.data["cc.projects"][project].name).toBe("Catalogue");
    const items2 = (await srv.call("/sync/get", { token: bob.token, body: { project, cursor: pSince } })).body.result
      .sync as any[];
    expect(items2).toContainEqual(
      expect.objectContaining({ type: project, action: "UPDATE", data_type: "assets", data_key: "asset1", data: null }),
    );
    // Widgets are no known data type: no items for them.
    expect(items2.every((i) => i.data_type === "assets")).toBe(true);
    // The full-text index follows the restored rows.
    // (SQLite: the FTS5 table kept by triggers; PostgreSQL: the generated tsvector column of assets.)
    const fts = await srv
      .query(
        srv.kind === "sqlite"
          ? "SELECT name FROM assets_fts WHERE project_gid = ?"
          : "SELECT name FROM assets WHERE project_gid = ? AND search @@ to_tsquery('apis_simple', 'spring')",
      )
      .all(project);
    expect(fts).toEqual([{ name: "Spring leaflet" }]);
  });

  test("backups can be renamed, listed newest first and deleted by version or versions with their files", async () => {
    const u = await srv.call(`/api/p/${project}/backups/update`, {
      token: alice.token,
      body: { version, name: "Renamed backup", notes: "n" },
    });
    expect(u.body.result).toEqual({ project, version });
    expect(u.body.data["cc.projects"][project].backups.versions[0]).toMatchObject({ version, name: "Renamed backup" });
    const bad = await srv.call(`/api/p/${project}/backups/update`, {
      token: alice.token,
      body: { version, name: " " },
    });
    expect(bad.status).toBe(422);
    expect(bad.body.result.code).toBe(1001);
    // The default name of another version cannot be imitated; a version's own can.
    const nothing = await srv.call(`/api/p/${project}/backups/update`, { token: alice.token, body: { version } });
    expect([nothing.status, nothing.body.result.info]).toEqual([400, { "Missing parameter": "name" }]);
    const imitation = await srv.call(`/api/p/${project}/backups/update`, {
      token: alice.token,
      body: { version, name: "Backup 7" },
    });
    expect(imitation.body.result.info.validation).toEqual([
      expect.objectContaining({ field: "name", rule: "reserved" }),
    ]);
    expect(
      (await srv.call(`/api/p/${project}/backups/update`, { token: alice.token, body: { version, name: "Backup 1" } }))
        .status,
    ).toBe(200);
    await srv.call(`/api/p/${project}/backups/update`, {
      token: alice.token,
      body: { version, name: "Renamed backup" },
    });
    const unknown = await srv.call(`/api/p/${project}/backups/update`, {
      token: alice.token,
      body: { version: 99, name: "x" },
    });
    expect(unknown.status).toBe(422);
    expect(unknown.body.result.message).toBe("Backup version invalid");
    // A member who is not the owner may back up too (as the reference allows).
    const since = await cursor(bob.token);
    const second = await srv.call(`/api/p/${project}/backups/create`, {
      token: bob.token,
      body: { created_by: "bob" },
    });
    expect(second.body.result.version).toBe(2);
    const third = await srv.call(`/api/p/${project}/backups/create`, { token: bob.token, body: { created_by: "bob" } });
    expect(third.body.result.version).toBe(3);
    await finished(srv, bob.token, second.body.result["job.token"], since);
    await finished(srv, bob.token, third.body.result["job.token"], since);
    const list = await srv.call(`/api/p/${project}/backups/get`, { token: alice.token, body: {} });
    expect(list.body.result.backups.map((b: any) => b.version)).toEqual([3, 2, 1]);
    expect(list.body.result.backups[0].name).toBe("Backup 3");
    const gid2 = (await srv
      .query<{ gid: string }>("SELECT gid FROM backups WHERE project_gid = ? AND version = 2")
      .get(project))!.gid;
    const d = await srv.call(`/api/p/${project}/backups/delete`, {
      token: alice.token,
      body: { versions: [2, 3, 99] },
    });
    expect(d.body.result).toEqual({ project });
    expect(d.body.data["cc.projects"][project].backups).toEqual({
      versions: [expect.objectContaining({ version: 1 })],
      next_version: 4,
    });
    await until(async () => (await storedBackupKeys(srv, project, `${gid2}`)).length === 0);
    const gone = await srv.call(`/api/p/${project}/backups/get`, { token: alice.token, body: { version: 2 } });
    expect(gone.status).toBe(422);
    expect(gone.body.result.message).toBe("Backup version invalid");
    // Versions are never reused.
    const sinceNext = await cursor(alice.token);
    const next = await srv.call(`/api/p/${project}/backups/create`, {
      token: alice.token,
      body: { created_by: "test" },
    });
    expect(next.body.result.version).toBe(4);
    await finished(srv, alice.token, next.body.result["job.token"], sinceNext);
    const one = await srv.call(`/api/p/${project}/backups/delete`, {
      token: alice.token,
      body: { version: 4, versions: [1] },
    });
    expect(one.body.data["cc.projects"][project].backups.versions.map((v: any) => v.version)).toEqual([1]);
    expect(
      (await srv.call(`/api/p/${project}/backups/restore`, { token: alice.token, body: {} })).body.result.info,
    ).toEqual({ "Missing parameter": "version" });
    expect(
      (await srv.call(`/api/p/${project}/backups/restore`, { token: alice.token, body: { version: 0 } })).body.result
        .message,
    ).toBe("Backup version invalid");
  });

  test("a restore that cannot start answers 1003 with info.process", async () => {
    await srv.query("UPDATE backups SET status = 'failed' WHERE gid = ?").run(backup);
    try {
      const r = await srv.call(`/api/p/${project}/backups/restore`, { token: alice.token, body: { version } });
      expect(r.status).toBe(422);
      expect(r.body).toEqual({
        success: false,
        result: { code: 1003, message: "Process error", info: { process: "restore", reason: "The backup failed" } },
        data: {},
      });
    } finally {
      await srv.query("UPDATE backups SET status = 'ready' WHERE gid = ?").run(backup);
    }
  });

  test("a damaged backup is rejected on restore with info.error and the project is left alone", async () => {
    const since = await cursor(alice.token);
    const blobs = srv.ctx.storage.blobs;
    const at = `backups/projects/${project}/${backup}/`;
    const manifest = JSON.parse(new TextDecoder().decode(await blobs.bytes(`${at}manifest.json`)));
    const victim = `${at}${manifest.files[0].path}`;
    const original = (await blobs.bytes(victim))!;
    await blobs.put(victim, "tampered");
    const before = await projectRows(srv, project);
    const r = await srv.call(`/api/p/${project}/backups/restore`, { token: alice.token, body: { version } });
    const items = await finished(srv, alice.token, r.body.result["job.token"], since);
    expect(items.at(-1).data.status).toBe("rejected");
    expect(items.at(-1).data.info).toMatchObject({ error: "Backup is damaged", code: 422 });
    expect(await projectRows(srv, project)).toEqual(before);
    await blobs.put(victim, original);
  });

  test("backups and restores of one project never run at once, and run in the order they were asked for", async () => {
    const since = await cursor(alice.token);
    const a = await srv.call(`/api/p/${project}/backups/create`, { token: alice.token, body: { created_by: "test" } });
    const b = await srv.call(`/api/p/${project}/backups/restore`, { token: alice.token, body: { version } });
    const c = await srv.call(`/api/p/${project}/backups/create`, { token: alice.token, body: { created_by: "test" } });
    const tokens = [a, b, c].map((x) => x.body.result["job.token"]);
    await Promise.all(tokens.map((t) => finished(srv, alice.token, t, since)));
    const jobs = (await Promise.all(tokens.map((t) => srv.ctx.jobs.get(t)))).map((j) => j!);
    expect(jobs.map((j) => j.status)).toEqual(["done", "done", "done"]);
    // One after the other, in the order they were asked for (the restore between the two backups).
    const spans = jobs.map((j) => [j.startedOn!, j.finishedOn!]);
    for (let i = 1; i < spans.length; i++) expect(spans[i]![0]!).toBeGreaterThanOrEqual(spans[i - 1]![1]!);
  });

  test("a file deleted while a backup runs is still in the backup when its row is", async () => {
    const gid = await srv.project(alice.token, "Deleting meanwhile");
    const t = Date.now() / 1000;
    await srv
      .query(
        "INSERT INTO assets (gid, project_gid, type, name, storage_name, status, created_on, updated_on) VALUES ('racefile01', ?, 'file', 'doomed', 'racefile01~1.bin', 'deleted', ?, ?)",
      )
      .run(gid, t, t);
    await writeProjectFile(srv, gid, "originals/racefile01~1.bin", "doomed bytes");
    const blobs = srv.ctx.storage.blobs;
    const at = `backups/projects/${gid}/racebackup01/`;
    let deleted = false;
    // The snapshot's rows are read, then (at its first progress step) the asset is deleted for good.
    const progress = {
      signal: new AbortController().signal,
      set() {},
      total() {},
      async step() {
        if (deleted) return;
        deleted = true;
        const r = await srv.call(`/api/p/${gid}/assets/permanent_delete`, {
          token: alice.token,
          body: { asset: "racefile01" },
        });
        expect(r.status).toBe(200);
        await until(async () => !(await blobs.stat(`files/projects/${gid}/originals/racefile01~1.bin`)));
      },
    };
    // The snapshot as the backup job writes it on this store (a folder of the data folder, or objects).
    const dir = blobs.localPath(at.slice(0, -1));
    const m = dir
      ? await writeSnapshot(srv.ctx, gid, "racebackup01", dir, progress as never)
      : (await writeStoreSnapshot(srv.ctx, gid, "racebackup01", at, progress as never)).manifest;
    expect(deleted).toBe(true);
    expect(m.tables.assets!.rows).toBe(1);
    expect(m.files.map((f) => f.path)).toEqual(["files/originals/racefile01~1.bin"]);
    expect(await (await blobs.get(`${at}files/originals/racefile01~1.bin`))!.text()).toBe("doomed bytes");
    await blobs.deletePrefix(at);
  });

  test("scheduled backups skip unchanged projects and keep only the newest --backups-keep", async () => {
    const run = async () => {
      const since = await cursor(alice.token);
      const summary = await scheduleBackups(srv.ctx);
      const r = await srv.call("/sync/get", { token: alice.token, body: { cc_cursor: since } });
      const queued = (r.body.result.sync as any[]).filter((i) => i.data_type === "jobs" && i.data.status === "queued");
      for (const q of queued) await finished(srv, alice.token, q.data_key, since);
      return summary;
    };
    const scheduled = async () =>
      (await srv.query("SELECT gid FROM backups WHERE project_gid = ? AND scheduled = TRUE").all(project)).length;
    // Backed up by the test before and unchanged since: nothing to do.
    await run();
    expect(await scheduled()).toBe(0);
    await Bun.sleep(10);
    await srv.call("/api/projects/update", { token: alice.token, body: { project, name: "Changed" } });
    await run();
    expect(await scheduled()).toBe(1);
    // Nothing changed since: no new backup.
    await run();
    expect(await scheduled()).toBe(1);
    for (let i = 0; i < 2; i++) {
      await Bun.sleep(10);
      await srv.call("/api/projects/update", { token: alice.token, body: { project, name: `Catalogue ${i}` } });
      await run();
    }
    expect(await scheduled()).toBe(2);
  });
});

describe("API users in project backups", () => {
  test(
    "a restore gives API users back their names, keys and rate limits, returns deleted ones and removes later ones",
    async () => {
      const keys = await srv.project(alice.token, "Keys");
      const call = (path: string, body: Record<string, unknown> = {}) =>
        srv.call(`/api/p/${keys}/${path}`, { token: alice.token, body });
      const made = async (name: string, rate?: number) => {
        const r = await call("apikeys/create", { name, ...(rate ? { rate_limit_per_second: rate } : {}) });
        expect(r.status).toBe(200);
        return { gid: r.body.result.user as string, key: r.body.result.apikey as string };
      };
      const feed = await made("Feed", 5);
      const gone = await made("Gone");
      let since = await cursor(alice.token);
      const b = await call("backups/create", { name: "keys", created_by: "test" });
      expect(b.status).toBe(200);
      await finished(srv, alice.token, b.body.result["job.token"], since);

      expect((await call("apikeys/update", { user: feed.gid, name: "Feed v2", rate_limit_per_second: 9 })).status).toBe(
        200,
      );
      expect((await call("apikeys/delete", { user: gone.gid })).status).toBe(200);
      const later = await made("Later");

      since = await cursor(alice.token);
      const r = await call("backups/restore", { version: b.body.result.version });
      const items = await finished(srv, alice.token, r.body.result["job.token"], since);
      expect(items.at(-1).data.status).toBe("done");

      const list = await call("apikeys/get");
      expect([...list.body.result.apikeys].sort()).toEqual([feed.gid, gone.gid].sort());
      expect(list.body.data["cc.users"][feed.gid].name).toBe("Feed");
      expect(list.body.data["cc.users"][gone.gid].name).toBe("Gone");
      const rates = Object.fromEntries(
        (list.body.data["cc.projects_members"] as any[]).map((m) => [
          m.user_gid,
          m.options?.rate_limit_per_second ?? null,
        ]),
      );
      expect(rates[feed.gid]).toBe(5);
      expect(await srv.query("SELECT count(*) AS n FROM users WHERE gid = ?").get(later.gid)).toEqual({
        n: 0,
      });
      // The keys of the backup work again; the later one does not.
      expect((await srv.call(`/api/p/${keys}/auth`, { body: { api_key: gone.key } })).status).toBe(200);
      expect((await srv.call(`/api/p/${keys}/auth`, { body: { api_key: later.key } })).status).not.toBe(200);
      const cc = await srv.ccItems(alice.token, since);
      expect(cc).toEqual(
        expect.arrayContaining([
          `UPDATE cc.users ${feed.gid}`,
          `INSERT cc.users ${gone.gid}`,
          `DELETE cc.users ${later.gid}`,
        ]),
      );
    },
    SLOW_TEST_MS,
  );
});

describe("what a restore announces", () => {
  test(
    "a folder whose file count changes back gets its UPDATE: snapshot, delete a file, restore, read /sync/get from before the restore",
    async () => {
      const shop = await srv.project(alice.token, "Counted");
      const call = (path: string, body: unknown = {}) =>
        srv.call(`/api/p/${shop}/${path}`, { token: alice.token, body });
      const folder = (await call("assets/create", { name: "Shoes" })).body.result.asset as string;
      const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: "#204060" } })
        .png()
        .toBuffer();
      const fd = new FormData();
      fd.append("parent", folder);
      fd.append("upload_file", new Blob([png]), "shoe.png");
      const up = await srv.call(`/api/p/${shop}/assets/upload`, { token: alice.token, body: fd });
      expect(up.status).toBe(200);
      const file = up.body.result.asset as string;
      const count = async () => (await call("assets/get", { asset: folder })).body.data.assets[folder].childcount;
      expect(await count()).toBe(1);

      let since = await cursor(alice.token);
      const b = await call("backups/create", { name: "with the shoe", created_by: "test" });
      await finished(srv, alice.token, b.body.result["job.token"], since);
      expect((await call("assets/delete", { asset: file })).status).toBe(200);
      expect(await count()).toBe(0);

      const before = (await srv.call("/sync/cursors", { token: alice.token, body: { project: shop } })).body.result
        .cursor;
      since = await cursor(alice.token);
      const r = await call("backups/restore", { version: b.body.result.version });
      expect((await finished(srv, alice.token, r.body.result["job.token"], since)).at(-1).data.status).toBe("done");
      expect(await count()).toBe(1);
      const items = (
        (await srv.call("/sync/get", { token: alice.token, body: { project: shop, cursor: before } })).body.result
          .sync as any[]
      ).map((i) => `${i.action} ${i.data_type} ${i.data_key}`);
      expect(items).toContain(`UPDATE assets ${file}`);
      expect(items).toContain(`UPDATE assets ${folder}`);
      // Nothing else changed form: the root folder, the root record and the schema are not announced.
      expect(items.filter((i) => i.startsWith("UPDATE ")).sort()).toEqual(
        [`UPDATE assets ${file}`, `UPDATE assets ${folder}`].sort(),
      );
    },
    SLOW_TEST_MS,
  );
});

describe("permanent deletion during a backup", () => {
  test(
    "deleting a project for good while its backup runs stops the job first, logs no error and leaves no backup folder",
    async () => {
      // The real backup job, each progress step slowed so the deletion lands in the middle of it.
      const slowed: Feature[] = features.map((f) => {
        if (f.name !== "backups" || !f.jobs) return f;
        const real = f.jobs["backup_project"]!;
        const handler: JobKind["handler"] = (ctx, job, progress) =>
          real.handler(ctx, job, {
            signal: progress.signal,
            set: (i) => progress.set(i),
            total: (n, done) => progress.total(n, done),
            yield: () => progress.yield(),
            resume: progress.resume,
            save: (tx, state) => progress.save(tx, state),
            step: async (n) => {
              await Bun.sleep(25);
              return progress.step(n);
            },
          });
        return { ...f, jobs: { ...f.jobs, backup_project: { ...real, handler } } };
      });
      const s = await TestServer.start({}, undefined, slowed);
      const errors: string[] = [];
      const logError = s.ctx.log.error.bind(s.ctx.log);
      s.ctx.log.error = (msg: string, extra?: Record<string, unknown>) => {
        errors.push(`${msg} ${JSON.stringify(extra ?? {})}`);
        logError(msg, extra);
      };
      try {
        const ann = await s.user("ann");
        const gid = await s.project(ann.token, "Doomed");
        for (let i = 0; i < 60; i++) await writeProjectFile(s, gid, `originals/f${i}~1.bin`, `file ${i}`);
        const since = await s.ccCursor(ann.token);
        const started = await s.call(`/api/p/${gid}/backups/create`, {
          token: ann.token,
          body: { name: "running", created_by: "test" },
        });
        const job = started.body.result["job.token"];
        await until(async () => s.ctx.jobs.busy === 1 && (await storedBackupKeys(s, gid)).length > 0);
        expect((await s.call("/api/projects/delete", { token: ann.token, body: { project: gid } })).status).toBe(200);
        const gone = await s.call("/api/projects/permanent_delete", { token: ann.token, body: { project: gid } });
        expect(gone.status).toBe(200);
        expect(s.ctx.jobs.busy).toBe(0);
        // Its backups and files go (on S3 once the deletes after the commit are through).
        await until(async () => (await storedBackupKeys(s, gid)).length === 0);
        await until(async () => Object.keys(await projectFiles(s, gid)).length === 0);
        if (s.ctx.storage.blobs.kind === "file") expect(existsSync(s.ctx.storage.projectDir(gid))).toBe(false);
        const items = (await s.call("/sync/get", { token: ann.token, body: { cc_cursor: since } })).body.result
          .sync as any[];
        const last = items.filter((i) => i.data_type === "jobs" && i.data_key === job).at(-1);
        expect(last.data).toMatchObject({ status: "rejected", info: { error: "The project is being deleted" } });
        // Nothing of it is left running or queued, and nothing complained.
        expect(await s.query("SELECT count(*) AS n FROM jobs WHERE project_gid = ?").get(gid)).toEqual({
          n: 0,
        });
        expect(errors).toEqual([]);
      } finally {
        await s.stop();
      }
    },
    SLOW_TEST_MS,
  );
});

describe("crash during a backup", () => {
  test(
    "a server killed with SIGKILL in the middle of a backup job finishes it after a restart",
    async () => {
      const dir = mkdtempSync(join(tmpdir(), "apis-kill-"));
      try {
        // Bootstrap an account in the folder, as `apis user create` would.
        const boot = await openInstance(loadConfig({ data: dir, "log-level": "silent" }, {}));
        const hash = await hashPassword("password1");
        await mutate(
          boot.db,
          boot.hub,
          async (tx, log) =>
            await createPerson(tx, log, { username: "kim", email: "kim@example.test", passwordHash: hash }),
        );
        boot.db.$client.close();

        const spawnServer = async (env: Record<string, string> = {}) => {
          // The bun running this test (as `npx bun` would find it), spawned directly so SIGKILL hits the server itself.
          const child = Bun.spawn(
            [
              process.execPath,
              "src/main.ts",
              "serve",
              "--port",
              "0",
              "--host",
              "127.0.0.1",
              "--data",
              dir,
              "--log-level",
              "error",
            ],
            {
              cwd: join(import.meta.dir, "../.."),
              env: { ...process.env, ...env },
              stdout: "pipe",
              stderr: "inherit",
            },
          );
          return { child, url: await servedUrl(child) };
        };
        const call = async (url: string, path: string, body: unknown, token?: string) => {
          const res = await fetch(url + path, {
            method: "POST",
            headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
            body: JSON.stringify(body),
          });
          return { status: res.status, body: (await res.json()) as any, headers: res.headers };
        };

        // Every progress step sleeps 40 ms in this run, so the backup of 40 files takes ~2 s.
        let s = await spawnServer({ APIS_TEST_JOB_STEP_MS: "40" });
        const login = await call(s.url, "/api/login", { username: "kim", password: "password1" });
        const token = tokenOf(login as any);
        const gid = (await call(s.url, "/api/projects/create", { name: "Big" }, token)).body.result.project;
        for (let i = 0; i < 40; i++) {
          const f = join(dir, "files", "projects", gid, "originals", `f${i}~1.bin`);
          mkdirSync(dirname(f), { recursive: true });
          writeFileSync(f, `file ${i} `.repeat(1000));
        }
        const started = await call(s.url, `/api/p/${gid}/backups/create`, { created_by: "kim", name: "killed" }, token);
        const job = started.body.result["job.token"];
        const version = started.body.result.version;
        await until(async () => {
          const j = await call(s.url, `/api/p/${gid}/jobs/get`, { token: job }, token);
          const info = j.body.result.job;
          return info?.status === "processing" && info.info.remaining < info.info.total - 3 ? true : undefined;
        });
        s.child.kill("SIGKILL");
        await s.child.exited;
        // The backup's folder is still being written (its name is the backup's internal gid).
        const partials = readdirSync(join(dir, "backups", "projects", gid)).filter((d) => d.endsWith(".partial"));
        expect(partials).toHaveLength(1);
        const backup = partials[0]!.replace(/\.partial$/, "");

        s = await spawnServer();
        try {
          const done = await until(async () => {
            const j = await call(s.url, `/api/p/${gid}/jobs/get`, { token: job }, token);
            const info = j.body.result.job;
            return info?.status === "done" ? info : undefined;
          });
          expect(done.info).toMatchObject({ version, files: 40, remaining: 0 });
          const b = await call(s.url, `/api/p/${gid}/backups/get`, { version }, token);
          expect(b.body.result.backup).toMatchObject({ status: "ready", files: 40 });
          expect(existsSync(join(dir, "backups", "projects", gid, `${backup}.partial`))).toBe(false);
          const manifest = JSON.parse(
            readFileSync(join(dir, "backups", "projects", gid, backup, "manifest.json"), "utf8"),
          );
          expect(manifest.files).toHaveLength(40);
          const attempts = (await call(s.url, "/api/jobs/get", { token: job }, token)).status;
          expect(attempts).toBe(200);
        } finally {
          s.child.kill("SIGTERM");
          await s.child.exited;
        }
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
    SLOW_TEST_MS,
  );
});

// On PostgreSQL the archive's apis.db is the database's rows copied into a SQLite file, and a
// restore copies them into the database named by --database (src/db/archive.ts).
describe("instance backup CLI", () => {
  const root = join(import.meta.dir, "../..");
  const apis = (...args: string[]) => {
    const r = Bun.spawnSync([process.execPath, "src/main.ts", ...args], {
      cwd: root,
      env: { ...process.env, APIS_LOG_LEVEL: "silent" },
    });
    return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() };
  };

  test(
    "create beside a running server, verify, and restore into another folder give back every row and file",
    async () => {
      const work = mkdtempSync(join(tmpdir(), "apis-cli-"));
      const archive = join(work, "instance.tar");
      const rowsBefore = await projectRows(srv, project);
      const filesBefore = await projectFiles(srv, project);
      try {
        const created = apis("backup", "create", "--data", srv.dataDir, "--out", archive, "--json", ...storeArgs(srv));
        expect(created.err).toBe("");
        expect(created.code).toBe(0);
        const c = JSON.parse(created.out);
        expect(c.file).toBe(archive);
        expect(c.entries).toBeGreaterThan(4);

        const verified = apis("backup", "verify", archive, "--json");
        expect(verified.code).toBe(0);
        const v = JSON.parse(verified.out);
        expect(v).toMatchObject({ ok: true, problems: [], entries: c.entries });
        // The archive is a plain tar.
        const listing = Bun.spawnSync(["tar", "-tf", archive]).stdout.toString().split("\n");
        expect(listing).toEqual(
          expect.arrayContaining([
            "apis.db",
            "apis-backup.json",
            "jwt.secret",
            `files/projects/${project}/var/deep/er/c@k.jpg`,
          ]),
        );
        expect(listing.some((n) => n.startsWith("backups/") || n.startsWith("tmp/"))).toBe(false);

        // A running server holds its folder: restore refuses.
        const refused = apis("backup", "restore", archive, "--data", srv.dataDir, "--yes");
        expect(refused.code).toBe(1);
        expect(refused.err).toMatch(/server \(pid \d+\) is using/);

        // Into another folder (and, on S3, another empty prefix of the bucket: the objects go there).
        const target = join(work, "restored");
        const targetStore = await otherStore(srv, "restored");
        const restored = apis("backup", "restore", archive, "--data", target, "--yes", ...asArgs(targetStore));
        expect(restored.err).toBe("");
        expect(restored.code).toBe(0);
        const other = await TestServer.start(targetStore, target);
        try {
          // The test's own table (widgets) is not in Apis' schema: an archive of a PostgreSQL
          // instance holds the tables Apis' SQLite schema has (docs/postgres.md).
          if (srv.kind === "postgres") delete rowsBefore.widgets;
          expect(await projectRows(other, project)).toEqual(rowsBefore);
          expect(await projectFiles(other, project)).toEqual(filesBefore);
          // Same secret: a token issued by the original server works on the restored one.
          const init = await other.call("/api/init", { token: alice.token });
          expect(init.status).toBe(200);
          expect(init.body.result.user).toBe(alice.gid);
        } finally {
          await other.stop();
        }
      } finally {
        rmSync(work, { recursive: true, force: true });
      }
    },
    SLOW_TEST_MS,
  );

  test("a file deleted while the archive is written is still in it (its row is in the database copy)", async () => {
    const { createInstanceBackup } = await import("../../src/platform/backups/instance.service");
    const rel = `files/projects/${project}/originals/doomed~1.bin`;
    await writeProjectFile(srv, project, "originals/doomed~1.bin", "doomed bytes");
    const work = mkdtempSync(join(tmpdir(), "apis-pin-"));
    try {
      let deleted = false;
      // The first progress report comes after the database copy: the server deletes the file then.
      const blobs = srv.ctx.storage.blobs;
      const r = await createInstanceBackup(
        srv.dataDir,
        join(work, "a.tar"),
        () => {
          if (deleted) return;
          deleted = true;
          void blobs.delete(rel);
        },
        { store: blobs, database: srv.ctx.config.database },
      );
      expect(deleted).toBe(true);
      expect(await blobs.stat(rel)).toBeUndefined();
      expect(r.manifest.entries.map((e) => e.path)).toContain(rel);
      Bun.spawnSync(["tar", "-xf", join(work, "a.tar"), "-C", work]);
      expect(readFileSync(join(work, rel), "utf8")).toBe("doomed bytes");
      expect(readdirSync(join(srv.dataDir, "tmp")).filter((n) => n.startsWith("pinned-"))).toEqual([]);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });

  test(
    "verify finds a damaged archive; list shows archives and project backups",
    async () => {
      const out = join(srv.dataDir, "backups", "instance", "one.tar");
      expect(apis("backup", "create", "--data", srv.dataDir, "--out", out, ...storeArgs(srv)).code).toBe(0);
      const listed = JSON.parse(apis("backup", "list", "--data", srv.dataDir, "--json", ...dbArgs(srv)).out);
      expect(listed.instance.map((a: any) => a.name)).toContain("one.tar");
      expect(listed.projects.some((b: any) => b.project_gid === project && b.status === "ready")).toBe(true);
      const bytes = readFileSync(out);
      // Flip one byte inside the database entry's content (after its 512-byte header; the first
      // entry on the data folder, after the stored files on an object store).
      let header = 0;
      while (header < bytes.length && bytes.subarray(header, header + 8).toString() !== "apis.db\0") header += 512;
      bytes[header + 600] = bytes[header + 600]! ^ 0xff;
      const bad = join(srv.dataDir, "backups", "instance", "bad.tar");
      writeFileSync(bad, bytes);
      const v = apis("backup", "verify", bad);
      expect(v.code).toBe(1);
      expect(v.out).toMatch(/checksum mismatch: apis\.db|database integrity/);
      expect(apis("backup", "verify", join(srv.dataDir, "nope.tar")).code).toBe(2);
      expect(apis("backup", "frobnicate").code).toBe(2);
    },
    SLOW_TEST_MS,
  );
});

// The restores here go into a new data folder's SQLite file (no --database), also from an archive
// of a PostgreSQL instance: the archive is one format.
describe("instance archives: modes, confirmation, schedule", () => {
  const root = join(import.meta.dir, "../..");
  const apis = (...args: string[]) => {
    const r = Bun.spawnSync([process.execPath, "src/main.ts", ...args], {
      cwd: root,
      env: { ...process.env, APIS_LOG_LEVEL: "silent" },
    });
    return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() };
  };
  const modeOf = (f: string) => statSync(f).mode & 0o777;

  test(
    "an archive is written 0600, keeps every file's mode, and a restore gives them back with jwt.secret at 0600",
    async () => {
      const work = mkdtempSync(join(tmpdir(), "apis-modes-"));
      const secret = join(srv.dataDir, "jwt.secret");
      const shared = join(srv.ctx.storage.projectDir(project), "originals", "shared~1.bin");
      const script = join(srv.ctx.storage.projectDir(project), "originals", "tool~1.sh");
      mkdirSync(dirname(shared), { recursive: true });
      writeFileSync(shared, "shared bytes");
      writeFileSync(script, "#!/bin/sh\n");
      chmodSync(shared, 0o640);
      chmodSync(script, 0o750);
      // On PostgreSQL the secret is a row of the database, archived as jwt.secret (0600) too.
      const onPg = srv.kind === "postgres";
      // As an older archive or a careless admin could have it: the restore still leaves it 0600.
      if (!onPg) chmodSync(secret, 0o644);
      try {
        const archive = join(work, "modes.tar");
        expect(apis("backup", "create", "--data", srv.dataDir, "--out", archive, ...storeArgs(srv)).code).toBe(0);
        expect(modeOf(archive)).toBe(0o600);
        const modes = new Map<string, number>();
        await readTar(archive, (e) => {
          modes.set(e.name, e.mode);
          return null;
        });
        const rel = (f: string) => f.slice(srv.dataDir.length + 1);
        // Files of the data folder keep their modes (objects of a bucket have none: they are archived 0644).
        const local = srv.ctx.storage.blobs.kind === "file";
        if (local) {
          expect(modes.get(rel(shared))).toBe(0o640);
          expect(modes.get(rel(script))).toBe(0o750);
          // Any tar reads it, modes included.
          expect(Bun.spawnSync(["tar", "-tvf", archive]).stdout.toString()).toMatch(/-rwxr-x--- .*tool~1\.sh/);
        }
        expect(modes.get("jwt.secret")).toBe(onPg ? 0o600 : 0o644);

        const target = join(work, "restored");
        const r = apis("backup", "restore", archive, "--data", target, "--yes");
        expect(r.err).toBe("");
        expect(r.code).toBe(0);
        if (local) {
          expect(modeOf(join(target, rel(shared)))).toBe(0o640);
          expect(modeOf(join(target, rel(script)))).toBe(0o750);
        }
        expect(modeOf(join(target, "jwt.secret"))).toBe(0o600);
        const expected = onPg
          ? (await srv.query<{ value: string }>("SELECT value FROM meta WHERE key = 'jwt_secret'").get())!.value
          : readFileSync(secret, "utf8").trim();
        expect(readFileSync(join(target, "jwt.secret"), "utf8").trim()).toBe(expected);
      } finally {
        if (!onPg) chmodSync(secret, 0o600);
        rmSync(shared, { force: true });
        rmSync(script, { force: true });
        rmSync(work, { recursive: true, force: true });
      }
    },
    SLOW_TEST_MS,
  );

  test(
    "restore asks on a terminal and changes nothing unless the answer is yes; without a terminal it needs --yes",
    async () => {
      const work = mkdtempSync(join(tmpdir(), "apis-confirm-"));
      try {
        const archive = join(work, "a.tar");
        expect(apis("backup", "create", "--data", srv.dataDir, "--out", archive, ...storeArgs(srv)).code).toBe(0);
        const target = join(work, "target");
        const answer = async (typed: string) => {
          let screen = "";
          const proc = Bun.spawn([process.execPath, "src/main.ts", "backup", "restore", archive, "--data", target], {
            cwd: root,
            env: { ...process.env, APIS_LOG_LEVEL: "silent" },
            terminal: { cols: 200, rows: 24, data: (_t, bytes) => (screen += new TextDecoder().decode(bytes)) },
          });
          await until(() => screen.includes("Type yes to restore: "));
          expect(screen).toContain(archive);
          proc.terminal!.write(`${typed}\r`);
          return { code: await proc.exited, screen };
        };
        const no = await answer("no");
        expect(no.code).toBe(1);
        expect(no.screen).toContain("nothing was changed");
        expect(existsSync(join(target, "apis.db"))).toBe(false);

        const piped = apis("backup", "restore", archive, "--data", target);
        expect(piped.code).toBe(2);
        expect(piped.err).toContain("--yes");
        expect(existsSync(join(target, "apis.db"))).toBe(false);

        const yes = await answer("yes");
        expect(yes.code).toBe(0);
        expect(yes.screen).toContain("restored");
        expect(existsSync(join(target, "apis.db"))).toBe(true);
      } finally {
        rmSync(work, { recursive: true, force: true });
      }
    },
    SLOW_TEST_MS,
  );

  test(
    "scheduled instance backups are off by default and keep only the newest --instance-backups-keep, never manual archives",
    async () => {
      const task = housekeepingTasks().find((t) => t.name === "instance-backups")!;
      expect(task).toBeDefined();
      expect(task.schedule(loadConfig({}, {}))).toBe("off");
      expect(task.schedule(loadConfig({ "schedule-instance-backups": "0 2 * * *" }, {}))).toBe("0 2 * * *");
      const dir = join(srv.dataDir, "backups", "instance");
      rmSync(dir, { recursive: true, force: true });
      expect(apis("backup", "create", "--data", srv.dataDir, ...storeArgs(srv)).code).toBe(0);
      const manual = readdirSync(dir);
      expect(manual).toHaveLength(1);
      const ctx = { ...srv.ctx, config: { ...srv.ctx.config, instanceBackupsKeep: 2 } };
      const made: string[] = [];
      for (let i = 0; i < 4; i++) {
        const run = await runHousekeeping(ctx, task);
        expect(run.ok).toBe(true);
        made.push(/^wrote (apis-scheduled-\S+\.tar) /.exec(run.summary)![1]!);
      }
      const left = readdirSync(dir).sort();
      expect(left).toEqual([...manual, ...made.slice(2)].sort());
      for (const n of left) expect(modeOf(join(dir, n))).toBe(0o600);
      expect(JSON.parse(apis("backup", "verify", join(dir, made[3]!), "--json").out).ok).toBe(true);
    },
    SLOW_TEST_MS,
  );
});

describe("backup folders", () => {
  test("a complete backup folder the database does not list is recovered; unfinished ones are removed", async () => {
    const since = await cursor(alice.token);
    const r = await srv.call(`/api/p/${project}/backups/create`, {
      token: alice.token,
      body: { created_by: "test", name: "to forget" },
    });
    const made: number = r.body.result.version;
    await finished(srv, alice.token, r.body.result["job.token"], since);
    const gid = (await srv
      .query<{ gid: string }>("SELECT gid FROM backups WHERE project_gid = ? AND version = ?")
      .get(project, made))!.gid;
    await srv.query("DELETE FROM backups WHERE gid = ?").run(gid);
    // An unfinished backup: a folder `.partial` in the data folder, objects without a manifest in a bucket.
    const leftover = srv.ctx.storage.blobs.kind === "file" ? "leftover.partial" : "leftover";
    await srv.ctx.storage.blobs.put(`backups/projects/${project}/${leftover}/tables/x.ndjson`, "[]\n");
    const { tidyBackupFolders } = await import("../../src/features/backups/backups.service");
    expect(await tidyBackupFolders(srv.ctx)).toBe("removed 1 orphaned folder(s), recovered 1 backup(s)");
    const got = await srv.call(`/api/p/${project}/backups/get`, { token: alice.token, body: {} });
    const recovered = got.body.result.backups[0];
    expect(recovered.version).toBeGreaterThan(made);
    expect(recovered.name).toMatch(/^Recovered backup /);
    expect(recovered.status).toBe("ready");
    expect(await storedBackupKeys(srv, project, `${leftover}/`)).toEqual([]);
  });
});
