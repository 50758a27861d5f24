import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import sharp from "sharp";
import { flagsFor, s3Possible } from "../helpers/s3";
import { SLOW_TEST_MS, TestServer, until } from "../helpers/server";

// Issue 37's check: a server whose files are in S3 keeps nothing of them in its data folder. The
// whole DAM session runs over real HTTP against radosgw, then the data folder is listed.

/** Every file under `dir`, relative to it. */
function filesUnder(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(d, e.name));
      else out.push(relative(dir, join(d, e.name)));
    }
  };
  walk(dir);
  return out.sort();
}

/** The database, its log and the token secret: what an S3-backed data folder may hold. */
const DATABASE_FILES = /^(apis\.db(-wal|-shm)?|jwt\.secret|apis\.pid)$/;

describe.skipIf(!s3Possible())("a server on S3", () => {
  let srv: TestServer;
  let token: string;
  let project: string;

  beforeAll(async () => {
    srv = await TestServer.start({ ...(await flagsFor("s3", "session")), "rate-limit": "0", metrics: "true" });
    ({ token } = await srv.user("sessionowner"));
    project = await srv.project(token, "On S3");
  });
  afterAll(async () => {
    await srv?.stop();
  });

  const upload = async (bytes: Buffer, name: string, path = "upload", fields: Record<string, string> = {}) => {
    const fd = new FormData();
    for (const [k, v] of Object.entries(fields)) fd.append(k, v);
    fd.append("upload_file", new Blob([bytes as Uint8Array<ArrayBuffer>], { type: "image/jpeg" }), name);
    return await srv.call(`/api/p/${project}/assets/${path}`, { body: fd, token });
  };

  test(
    "keeps nothing of the DAM session's files in its data folder: uploads, versions, transforms, media, backups and deletions",
    async () => {
      const image = (colour: string) =>
        sharp({ create: { width: 320, height: 200, channels: 3, background: colour } })
          .jpeg()
          .toBuffer();
      const first = await upload(await image("#c03020"), "Red.jpg");
      expect(first.status).toBe(200);
      const gid: string = first.body.result.asset;
      const again = await upload(await image("#2030c0"), "Blue.jpg", "upload_update", { asset: gid });
      expect(again.status).toBe(200);
      const info = await srv.call(`/api/p/${project}/assets/get`, { token, body: { asset: gid } });
      const a = info.body.data.assets[gid];
      // The storage pathname, built from the asset as a client builds it (docs/assets.md).
      const pathname = `${a.gid}~${a.version}.${a.type}`;
      expect(pathname).toMatch(/~2\.jpg$/);

      const made = await srv.call(`/dam/p/${project}/transform/${pathname}/fit=80,50/type=png`, { token });
      expect(made.status).toBe(200);
      const published = await srv.call(`/dam/p/${project}/publish/${pathname}`, { token });
      expect(published.status).toBe(200);
      const ranged = await fetch(published.body.result.public_url, { headers: { range: "bytes=0-9" } });
      expect(ranged.status).toBe(206);
      expect((await ranged.arrayBuffer()).byteLength).toBe(10);
      const variant = await fetch(made.body.result.public_url);
      expect(variant.status).toBe(200);
      // The transform's copy of the original is kept, and counted.
      expect(await (await fetch(`${srv.url}/metrics`)).text()).toMatch(/^apis_dam_source_copies_bytes [1-9]\d*$/m);

      const backup = await srv.call(`/api/p/${project}/backups/create`, {
        token,
        body: { created_by: "The S3 session test", name: "On S3" },
      });
      expect(backup.status).toBe(200);
      const version: number = backup.body.result.version;
      await until(
        async () =>
          (await srv.call(`/api/p/${project}/backups/get`, { token, body: { version } })).body.result?.backup
            ?.status === "ready",
        undefined,
        "the backup",
      );
      const restore = await srv.call(`/api/p/${project}/backups/restore`, { token, body: { version } });
      expect(restore.status).toBe(200);
      await until(
        async () =>
          (await srv.call(`/api/p/${project}/assets/get`, { token, body: { asset: gid } })).status === 200 &&
          (await srv.call(`/sync/get`, { token, body: { cc_cursor: 0 } })).body.result.sync.some(
            (i: { data?: { job?: string; status?: string } }) =>
              i.data?.job === "restore_project" && i.data.status === "done",
          ),
        undefined,
        "the restore",
      );

      expect((await srv.call(`/api/p/${project}/assets/delete`, { token, body: { asset: gid } })).status).toBe(200);
      expect(
        (await srv.call(`/api/p/${project}/assets/permanent_delete`, { token, body: { asset: gid } })).status,
      ).toBe(200);

      const kept = filesUnder(srv.dataDir).filter((f) => !DATABASE_FILES.test(f));
      expect(kept).toEqual([]);
      expect(await (await fetch(`${srv.url}/metrics`)).text()).toMatch(/^apis_dam_source_copies_bytes 0$/m);
    },
    SLOW_TEST_MS,
  );

  test("with --dam-source-cache 0 transforms read the original and keep no copy of it; copies an earlier run left are gone with the first request", async () => {
    const data = mkdtempSync(join(tmpdir(), "apis-test-"));
    const left = join(data, "tmp", "dam-sources", "someproject00000000", "aaaaaaaaaa~1.jpg");
    mkdirSync(dirname(left), { recursive: true });
    writeFileSync(left, "a copy an earlier run left");
    const lean = await TestServer.start({ ...(await flagsFor("s3", "lean")), "dam-source-cache": "0" }, data);
    try {
      const { token: t } = await lean.user("leanowner");
      // Gone once the server has built its routes (for its first request that needs them, the login here).
      expect(existsSync(left)).toBe(false);
      const p = await lean.project(t, "Lean");
      const fd = new FormData();
      const bytes = await sharp({ create: { width: 200, height: 100, channels: 3, background: "#30a050" } })
        .jpeg()
        .toBuffer();
      fd.append("upload_file", new Blob([bytes as Uint8Array<ArrayBuffer>], { type: "image/jpeg" }), "Green.jpg");
      const up = await lean.call(`/api/p/${p}/assets/upload`, { body: fd, token: t });
      expect(up.status).toBe(200);
      const a = up.body.data.assets[up.body.result.asset];
      const pathname = `${a.gid}~${a.version}.${a.type}`;
      for (const options of ["fit=40,20", "fit=40,20", "fit=60,30/type=png"]) {
        const made = await lean.call(`/dam/p/${p}/transform/${pathname}/${options}`, { token: t });
        expect(made.status).toBe(200);
        expect(filesUnder(lean.dataDir).filter((f) => !DATABASE_FILES.test(f))).toEqual([]);
      }
      const info = await lean.call(`/dam/p/${p}/info/${pathname}`, { token: t });
      expect(info.body.result).toMatchObject({ width: 200, height: 100 });
      expect(filesUnder(lean.dataDir).filter((f) => !DATABASE_FILES.test(f))).toEqual([]);
    } finally {
      await lean.stop();
    }
  });
});
