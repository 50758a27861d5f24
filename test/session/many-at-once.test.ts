import { afterAll, beforeAll, expect, test } from "bun:test";
import { TestServer } from "../helpers/server";

/**
 * More requests at once than the database has connections. On PostgreSQL each read holds one
 * connection of the pool (10) for its life, and the kept access facts read the change log's
 * version: reading it from the pool while holding a connection made 20 project inits at once wait
 * for each other for ever (every connection held by a read waiting for one more), and the clients
 * saw their connections reset. On SQLite the same requests take turns on its connections.
 */

let srv: TestServer;
let token: string;
let project: string;

beforeAll(async () => {
  srv = await TestServer.start({ "rate-limit": "0" });
  token = (await srv.user("crowd")).token;
  project = await srv.project(token, "Crowd");
});
afterAll(() => srv.stop());

test("sixty init requests at once, after a write each round, are all answered", async () => {
  for (let round = 0; round < 3; round++) {
    // A write forgets the kept facts and payloads: every request reads them again.
    const field = await srv.call(`/api/p/${project}/fields/create`, {
      token,
      body: { name: `round${round}`, type: "textline" },
    });
    expect(field.status).toBe(200);
    const answers = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        srv.call(i % 3 === 0 ? "/api/init" : `/api/p/${project}/init`, { token, method: "GET" }),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
  }
});
