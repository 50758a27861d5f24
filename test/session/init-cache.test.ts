import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { SQL } from "bun";
import { join } from "node:path";
import { TestServer, until } from "../helpers/server";

// The init payloads are kept until the next write (session.service.ts projectInitOf): these tests
// check that a kept payload is never handed out once something it shows has changed.

type Who = { gid: string; token: string };
let srv: TestServer;
let alice: Who, bob: Who, carol: Who;
let project: string;

beforeAll(async () => {
  srv = await TestServer.start();
  alice = await srv.user("alice");
  bob = await srv.user("bob");
  carol = await srv.user("carol");
  project = await srv.project(alice.token, "Kept");
  await srv.addMember(project, bob.gid);
});
afterAll(() => srv.stop());

const init = async (who: Who) => {
  const r = await srv.call(`/api/p/${project}/init`, { token: who.token, method: "GET" });
  expect(r.status).toBe(200);
  return r.body;
};
const globalInit = async (who: Who) => {
  const r = await srv.call("/api/init", { token: who.token, method: "GET" });
  expect(r.status).toBe(200);
  return r.body;
};

describe("kept init payloads", () => {
  test("a repeated project init answers the same payload, and each caller gets its own", async () => {
    const a1 = await init(alice);
    const b1 = await init(bob);
    expect(await init(alice)).toEqual(a1);
    expect(await init(bob)).toEqual(b1);
    expect(a1.result.user).toBe(alice.gid);
    expect(b1.result.user).toBe(bob.gid);
    // The owner sees full memberships, a member the short form of others'.
    const bobsEntryFor = (body: any) => body.data["cc.projects_members"].find((m: any) => m.user_gid === bob.gid);
    const alicesEntryFor = (body: any) => body.data["cc.projects_members"].find((m: any) => m.user_gid === alice.gid);
    expect(Object.keys(alicesEntryFor(b1)).length).toBeLessThan(Object.keys(alicesEntryFor(a1)).length);
    expect(bobsEntryFor(a1)).toBeDefined();
    // The global init is sent as the JSON kept with it, with the same type as every answer.
    const g = await srv.call("/api/init", { token: alice.token, method: "GET" });
    const again = await srv.call("/api/init", { token: alice.token, method: "GET" });
    expect(g.headers.get("content-type")).toBe("application/json;charset=utf-8");
    expect(again.body).toEqual(g.body);
    expect(g.body.success).toBe(true);
    expect(g.body.result.user).toBe(alice.gid);
  });

  test("a project init after a rename, a new member and a new field shows each of them with a newer cursor", async () => {
    const before = await init(bob);
    expect(
      (await srv.call("/api/projects/update", { token: alice.token, body: { project, name: "Renamed" } })).status,
    ).toBe(200);
    const renamed = await init(bob);
    expect(renamed.data["cc.projects"][project].name).toBe("Renamed");
    expect(renamed.result.cursor).toBeGreaterThan(before.result.cursor);

    // Carol's global init is kept before she joins, and must not be handed out after.
    expect((await globalInit(carol)).data["cc.projects"][project]).toBeUndefined();
    await srv.addMember(project, carol.gid);
    expect((await init(bob)).result.project_members).toContain(carol.gid);
    expect((await globalInit(carol)).data["cc.projects"][project]).toBeDefined();

    const field = await srv.call(`/api/p/${project}/fields/create`, {
      token: alice.token,
      body: { name: "colour", type: "textline", label: { en: "Colour" } },
    });
    expect(field.status).toBe(200);
    expect(Object.keys((await init(bob)).data.fields)).toContain(field.body.result.field);
  });

  test("a project init and the global init see a change another process committed to the database", async () => {
    const first = await init(bob);
    const firstGlobal = await globalInit(alice);
    expect(first.data["cc.projects"][project].name).not.toBe("Changed elsewhere");
    // Another connection, as another `apis` process would be: this server did not write it.
    if (srv.kind === "postgres") {
      // There the server learns of other processes' commits from the change log's sequence
      // (PgPort.externalVersion): every write of Apis draws a cursor for its sync items, so the
      // other process's unit does too.
      const other = new SQL(srv.ctx.config.database);
      try {
        await other.begin(async (tx) => {
          await tx`UPDATE projects SET name = 'Changed elsewhere' WHERE gid = ${project}`;
          await tx`SELECT nextval('changes_cursor_seq')`;
        });
      } finally {
        await other.close();
      }
    } else {
      const db = new Database(join(srv.dataDir, "apis.db"));
      try {
        db.query("UPDATE projects SET name = 'Changed elsewhere' WHERE gid = ?").run(project);
      } finally {
        db.close();
      }
    }
    const seen = await until(async () => {
      const body = await init(bob);
      return body.data["cc.projects"][project].name === "Changed elsewhere" && body;
    });
    expect(seen.result.user).toBe(bob.gid);
    const global = await until(async () => {
      const body = await globalInit(alice);
      return body.data["cc.projects"][project]?.name === "Changed elsewhere" && body;
    });
    expect(global.result.user).toBe(firstGlobal.result.user);
  });

  test("a member removed from the project gets 403 from init at once, not the payload kept for it", async () => {
    await init(carol);
    const r = await srv.call(`/api/p/${project}/members/remove`, { token: alice.token, body: { user: carol.gid } });
    expect(r.status).toBe(200);
    const after = await srv.call(`/api/p/${project}/init`, { token: carol.token, method: "GET" });
    expect(after.status).toBe(403);
  });
});
