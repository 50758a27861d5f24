// The token secret of nodes sharing a PostgreSQL database (docs/deploy.md, "Several nodes"): the
// database's row, made by the first node; a node given --jwt-secret makes it the database's, so a
// node started without the setting afterwards accepts its tokens, and says so in a warning when it
// replaced another secret (the nodes still running with that one refuse its tokens until restarted).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { startNode } from "../helpers/cluster";
import { freshDatabase, pgAvailable, pgSkipReason } from "../helpers/pg-cluster";
import { SLOW_TEST_MS, TestServer, until } from "../helpers/server";

const SECRET = "a-site-secret-set-on-one-node-0123456789";

if (!pgAvailable) test.skip(pgSkipReason, () => {});

describe.skipIf(!pgAvailable)("a node started with --jwt-secret among nodes without it", () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  const servers: TestServer[] = [];
  let node: Awaited<ReturnType<typeof startNode>> | undefined;

  beforeAll(async () => {
    db = await freshDatabase("secret");
  });
  afterAll(async () => {
    node?.proc.kill();
    await node?.proc.exited;
    for (const s of servers) await s.stop();
    if (node) rmSync(node.folder, { recursive: true, force: true });
    await db?.close();
  });

  test(
    "makes its secret the database's, so nodes started without the setting afterwards accept its tokens, and warns that the running ones do not",
    async () => {
      const first = await TestServer.start({ database: db.url });
      servers.push(first);
      const { token: before } = await first.user("secretuser");
      const held = async () =>
        (await db.sql`SELECT value FROM meta WHERE key = 'jwt_secret'`)[0]?.value as string | undefined;
      expect(await held()).not.toBe(SECRET);

      node = await startNode(db.url, ["--jwt-secret", SECRET, "--log-level", "warn"], { keepLog: true });
      const { url } = node;
      const said = () => node!.log();
      await until(() => said().includes("--jwt-secret differs"), undefined, "the warning");
      expect(said()).toContain(
        "--jwt-secret differs from the token secret the database held, which nodes started without --jwt-secret use: it is the database's secret now, but nodes still running with the old one refuse the tokens this node signs (401)",
      );
      expect(said()).not.toContain(SECRET);
      expect(await held()).toBe(SECRET);

      const login = await fetch(`${url}/api/login`, {
        method: "POST",
        body: JSON.stringify({ username: "secretuser", password: "password1" }),
      });
      expect(login.status).toBe(200);
      const signed = login.headers.get("authorization")!.replace(/^Bearer /, "");
      // A node started now, without the setting, takes the database's secret: the token works there.
      const later = await TestServer.start({ database: db.url });
      servers.push(later);
      expect((await later.call("/sync/cursors", { token: signed, body: {} })).status).toBe(200);
      // The node that was running keeps the secret it started with, as the warning says.
      expect((await first.call("/sync/cursors", { token: signed, body: {} })).status).toBe(401);
      expect((await first.call("/sync/cursors", { token: before, body: {} })).status).toBe(200);
    },
    SLOW_TEST_MS,
  );
});
