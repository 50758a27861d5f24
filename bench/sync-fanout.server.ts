/**
 * The server side of bench/sync-fanout.bench.ts, in its own process so that the Socket.IO
 * clients and the server under test never share an event loop. Started with IPC by the bench:
 *
 *   → {cmd: "setup", members}          ← {url, owner, project, tokens: string[], cursor}
 *   → {cmd: "touch", count}            ← {cmd: "touched", first, last, serverMs}   (serverMs: from the first
 *                                        commit until the fan-out has handed every frame to the sockets)
 *   → {cmd: "rss"}                     ← {cmd: "rss", mb, sockets}   (after a full garbage collection)
 *
 * `setup` makes one project with `members` active member users and signs a JWT for each (written
 * straight into the database, as `apis user create` would, to skip a thousand password hashes).
 * `touch` writes `count` project items through the change-log writer, each its own transaction
 * in its own turn of the event loop, as that many separate record changes would.
 */
import { loadConfig } from "../src/config";
import { mutate } from "../src/db/mutate";
import { writeItems } from "../test/helpers/changes";
import { memberships } from "../src/features/projects/projects.table";
import { users } from "../src/features/users/users.table";
import { newGid, now } from "../src/core/ids";
import { startServer } from "../src/app/server";
import { currentCursor } from "../src/db/cursor";
import { createProject } from "../src/features/projects/projects.service";
import { createPerson } from "../src/features/users/users.service";

const data = process.argv[2];
if (!data || !process.send) throw new Error("usage: started by bench/sync-fanout.bench.ts with IPC and a data folder");

const server = await startServer(loadConfig({ port: "0", host: "127.0.0.1", data, "log-level": "warn" }, {}));
const { ctx } = server;
let project = "";

async function onMessage(msg: any) {
  if (msg.cmd === "setup") {
    const hash = await Bun.password.hash("bench-password-1", { algorithm: "argon2id" });
    const owner = await mutate(
      ctx.db,
      ctx.hub,
      async (tx, log) =>
        await createPerson(tx, log, { username: "owner", email: "owner@example.test", passwordHash: hash }),
    );
    project = String(
      (await createProject(ctx, { userGid: owner.gid, kind: "person" }, { name: "Fan-out" })).result.project,
    );
    const gids: string[] = [];
    await mutate(ctx.db, ctx.hub, async (tx) => {
      const t = now();
      for (let i = 0; i < msg.members; i++) {
        const gid = newGid();
        gids.push(gid);
        await tx
          .insert(users)
          .values({
            gid,
            kind: "person",
            username: `member${i}`,
            email: `member${i}@example.test`,
            passwordHash: hash,
            createdOn: t,
            updatedOn: t,
          })
          .run();
        await tx
          .insert(memberships)
          .values({
            projectGid: project,
            userGid: gid,
            status: "active",
            roles: ["member"],
            createdOn: t,
            updatedOn: t,
          })
          .run();
      }
    });
    // The sync server loads on the first /sync/io request: loaded here (the engine refuses a
    // request without a transport), so that the memory before the clients includes Socket.IO.
    await (await fetch(new URL("/sync/io/", server.url))).arrayBuffer();
    const tokens = await Promise.all(gids.map((g) => ctx.tokens.sign(g, 0)));
    process.send!({
      cmd: "ready",
      url: server.url,
      owner: await ctx.tokens.sign(owner.gid, 0),
      project,
      tokens,
      // Awaited since the data layer is asynchronous (a promise cannot go over IPC).
      cursor: await currentCursor(ctx.db),
    });
  } else if (msg.cmd === "touch") {
    let first = 0;
    let last = 0;
    const t0 = performance.now();
    for (let i = 0; i < msg.count; i++) {
      if (i) await new Promise((r) => setImmediate(r));
      last = await writeItems(ctx.db, ctx.hub, (log) => log.project(project, "UPDATE", "records", newGid()));
      first ||= last;
    }
    // The fan-out runs on the next turn (setImmediate after the commit): this one comes after it.
    await new Promise((r) => setImmediate(r));
    const serverMs = server.sync.pendingBatches === 0 ? performance.now() - t0 : NaN;
    process.send!({ cmd: "touched", first, last, serverMs });
  } else if (msg.cmd === "rss") {
    Bun.gc(true);
    process.send!({
      cmd: "rss",
      mb: process.memoryUsage().rss / 2 ** 20,
      sockets: server.sync.io.of("/").sockets.size,
    });
  } else if (msg.cmd === "stop") {
    await server.stop();
    process.exit(0);
  }
}
process.on("message", (msg: any) => void onMessage(msg));
process.send({ cmd: "started" });
