/**
 * Issue 39 item 6: the job runner's claims on SQLite (one process, locks in memory) and on
 * PostgreSQL (`FOR UPDATE SKIP LOCKED`, lock keys, leases, src/platform/jobs/claimer.pg.ts).
 *
 *   bun bench/jobs-claim.micro.ts                             # SQLite
 *   APIS_TEST_DATABASE=postgres bun bench/jobs-claim.micro.ts # a throw-away PostgreSQL database
 *
 * One test server (2 workers); JOBS_N (300) jobs that do nothing enqueued one by one, then waited
 * for: without a lock, and with the default lock over 4 projects. Prints the enqueue rate and the
 * jobs per second from the first enqueue to the last job done (claims, `processing` and `done`
 * writes with their sync items). Run it on two trees, alternating, to compare.
 */
import { features, type Feature } from "../src/features";
import type { JobKind } from "../src/platform/jobs/runner";
import { TestServer, until } from "../test/helpers/server";

const N = Number(process.env.JOBS_N ?? 300);
let ran = 0;
const count = () => {
  ran++;
};
const kinds: Record<string, JobKind> = {
  "bench.free": { handler: count, lock: () => null },
  "bench.project": { handler: count },
};
const list: Feature[] = [...features, { name: "bench", jobs: kinds }];
const srv = await TestServer.start({ workers: "2" }, undefined, list);
for (const kind of Object.keys(kinds)) {
  ran = 0;
  const t0 = performance.now();
  for (let i = 0; i < N; i++) await srv.ctx.jobs.enqueue({ kind, projectGid: `p${i % 4}` });
  const t1 = performance.now();
  await until(() => ran === N, 600_000, "every job run");
  const t2 = performance.now();
  console.log(
    `${srv.kind} ${kind}: enqueue ${(N / ((t1 - t0) / 1000)).toFixed(0)}/s; ${N} jobs done in ${((t2 - t0) / 1000).toFixed(2)} s (${(N / ((t2 - t0) / 1000)).toFixed(0)} jobs/s end to end)`,
  );
}
await srv.stop();
process.exit(0);
