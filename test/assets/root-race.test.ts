import { afterAll, beforeAll, expect, test } from "bun:test";
import { TestServer } from "../helpers/server";

/**
 * The root folder `/` is made on a project's first use of its assets. A page asks for the folder
 * and the folder tree at once: on PostgreSQL the two units run side by side, and each used to make
 * a root (the second then hung below the first as a folder named "" with the pathname "/").
 */

let srv: TestServer;
let token: string;

beforeAll(async () => {
  srv = await TestServer.start({ "rate-limit": "0" });
  token = (await srv.user("root-racer")).token;
});
afterAll(() => srv.stop());

test("first requests of a new project that arrive together make one root folder, with no child of its own name", async () => {
  for (let round = 0; round < 5; round++) {
    const project = await srv.project(token, `Race ${round}`);
    const call = (path: string, body: unknown) => srv.call(`/api/p/${project}/assets/${path}`, { token, body });
    const answers = await Promise.all([
      call("children", { pathname: "/" }),
      call("search", { filter: ["type", "is", "folder"], sort: "pathname" }),
      call("root", {}),
      call("children", { pathname: "/" }),
    ]);
    for (const a of answers) expect(a.status).toBe(200);
    const roots = await srv
      .query<{ n: number }>("SELECT count(*) AS n FROM assets WHERE project_gid = ? AND pathname = '/'")
      .get(project);
    expect(Number(roots!.n)).toBe(1);
    const children = await call("children", { pathname: "/" });
    expect(children.body.result.children).toEqual([]);
  }
});
