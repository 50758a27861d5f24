import { afterAll, beforeAll, expect, test } from "bun:test";
import { TestServer } from "../helpers/server";

let srv: TestServer;
let project: string;
let token: string;

beforeAll(async () => {
  srv = await TestServer.start();
  token = (await srv.user("quiet")).token;
  project = await srv.project(token, "Quiet");
});
afterAll(() => srv.stop());

test("the first request to each /dam route writes nothing to the console (the framework once warned for the wildcard member)", async () => {
  const written: unknown[][] = [];
  const saved = { warn: console.warn, error: console.error, log: console.log };
  console.warn = (...a: unknown[]) => void written.push(a);
  console.error = (...a: unknown[]) => void written.push(a);
  console.log = (...a: unknown[]) => void written.push(a);
  try {
    for (const op of ["transform", "publish", "unpublish", "info", "details"]) {
      const path =
        op === "transform" ? `/dam/p/${project}/transform/nothing.jpg/width=10` : `/dam/p/${project}/${op}/nothing.jpg`;
      const r = await srv.call(path, { token, method: "GET" });
      // Unknown asset: an answer in the envelope, not a 500.
      expect(r.status).toBeLessThan(500);
      expect(r.body.success).toBe(false);
    }
  } finally {
    Object.assign(console, saved);
  }
  expect(written).toEqual([]);
});
