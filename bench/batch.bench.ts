/**
 * The batch benchmark (issue 12, "A batch of 50 record updates vs 50 separate calls: at least 5x
 * faster"): the same 50 updates sent as 50 separate `POST /api/p/<project>/<operation>` calls
 * (one after another, as a client script does; and 10 at a time) against one
 * `POST /api/p/<project>/batch` holding all 50, in alternating rounds. The ratio is the time of
 * the separate calls over the time of the batch; target >= 5 for the calls sent one after another
 * (the comparison: a client script's loop against one batch). Sent 10 at a time, the
 * separate calls share their log syncs (group commit, since 2026-12-04), so that row is for
 * information: it measures how well concurrent writers overlap, not what a batch saves.
 *
 * The operation is a parameter: BENCH_BATCH_OP (default `records/update`: one textline and one
 * number of an article record; `queries/update` is the other workload). BENCH_BATCH_SIZE (50) and
 * BENCH_BATCH_ROUNDS (20) set the size and the rounds. Apis runs in its own process
 * (`bun src/main.ts serve`, --rate-limit 0 so the request limit does not throttle the separate
 * calls); the client runs in this one. Runnable alone: `bun bench/batch.bench.ts`, or through the
 * runner: `npm run bench -- batch`.
 */
import { join } from "node:path";
import { BUN, median, removeDir, round, tempDir, type BenchResult, type Child, type Row, spawnApis } from "./harness";

const USER = { username: "batchbench", email: "batchbench@example.test", password: "bench-password-1" };
const OP = process.env.BENCH_BATCH_OP ?? "records/update";
const SIZE = Number(process.env.BENCH_BATCH_SIZE ?? 50);
const ROUNDS = Number(process.env.BENCH_BATCH_ROUNDS ?? 20);

type Client = (path: string, body: unknown) => Promise<any>;

/**
 * What a benchmarked operation needs: `setup` creates what `SIZE` updates will change and
 * returns the body of update `i` in round `r` (each round changes every item, so no update is a
 * no-op).
 */
type Workload = { setup: (call: Client, size: number) => Promise<(i: number, r: number) => unknown> };

const workloads = new Map<string, Workload>([
  [
    "records/update",
    {
      async setup(call, size) {
        // An `article` definition (a textline and a number) offered by the root's Base definition.
        const field = async (name: string, type: string) => {
          const g = (await call("fields/create", { name, type })).result.field as string;
          await call("fields/commit", { field: g });
          return g;
        };
        const fields = [await field("name", "textline"), await field("stock", "number")];
        const article = (await call("definitions/create", { name: "article", fields, titlefield: fields[0] })).result
          .definition as string;
        await call("definitions/commit", { definition: article });
        const rootAnswer = await call("records/root", {});
        const root = rootAnswer.result.root as string;
        const base = rootAnswer.data.records[root].definition as string;
        await call("definitions/childdefinitions/add", { definition: base, childdefinition: article });
        await call("definitions/commit", { definition: base });
        const gids: string[] = [];
        for (let i = 0; i < size; i++)
          gids.push((await call("records/create", { parent: root, language: "en" })).result.record);
        return (i, r) => ({
          record: gids[i],
          language: "en",
          fields: { en: { name: `Item ${i} round ${r}`, stock: r * 100 + i } },
        });
      },
    },
  ],
  [
    "queries/update",
    {
      async setup(call, size) {
        const gids: string[] = [];
        for (let i = 0; i < size; i++)
          gids.push((await call("queries/create", { type: "record", name: `Query ${i}`, q: "shoe" })).result.query);
        return (i, r) => ({ query: gids[i], name: `Query ${i} round ${r}`, q: `shoe ${r}` });
      },
    },
  ],
]);

async function cli(args: string[]) {
  const p = Bun.spawn([BUN, "src/main.ts", ...args], {
    cwd: join(import.meta.dir, ".."),
    stdout: "pipe",
    stderr: "pipe",
  });
  if ((await p.exited) !== 0) throw new Error(`apis ${args.join(" ")}: ${await new Response(p.stderr).text()}`);
}

/** Medians in ms of the three ways of sending the SIZE updates, on a new server started with `args`. */
async function measure(workload: Workload, args: string[]): Promise<{ b: number; s: number; c: number }> {
  const data = tempDir();
  let apis: Child | undefined;
  try {
    await cli([
      "user",
      "create",
      "--data",
      data,
      "--username",
      USER.username,
      "--email",
      USER.email,
      "--password",
      USER.password,
      "--name",
      "Batch Bench",
    ]);
    apis = await spawnApis(data, ["--rate-limit", "0", ...args], { profileDir: process.env.BENCH_PROFILE });
    const base = apis.url;
    const login = await fetch(base + "/api/login", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ username: USER.username, password: USER.password }),
    });
    await login.arrayBuffer();
    const auth = login.headers.get("authorization");
    if (!login.ok || !auth) throw new Error(`login failed: ${login.status}`);
    const post = async (path: string, body: unknown) => {
      const res = await fetch(base + path, {
        method: "POST",
        headers: { authorization: auth, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      const json = (await res.json()) as any;
      if (!res.ok) throw new Error(`${path}: ${res.status} ${JSON.stringify(json).slice(0, 500)}`);
      return json;
    };
    const project = (await post("/api/projects/create", { name: "Batch bench" })).result.project as string;
    const call: Client = (path, body) => post(`/api/p/${project}/${path}`, body);
    const bodyOf = await workload.setup(call, SIZE);

    let r = 0;
    const sequential = async () => {
      const round = ++r;
      const t0 = performance.now();
      for (let i = 0; i < SIZE; i++) await call(OP, bodyOf(i, round));
      return performance.now() - t0;
    };
    const concurrent = async () => {
      const round = ++r;
      const t0 = performance.now();
      let next = 0;
      await Promise.all(
        Array.from({ length: 10 }, async () => {
          while (next < SIZE) {
            const i = next++;
            await call(OP, bodyOf(i, round));
          }
        }),
      );
      return performance.now() - t0;
    };
    const batched = async () => {
      const round = ++r;
      const t0 = performance.now();
      const answer = await call("batch", {
        requests: Array.from({ length: SIZE }, (_, i) => ({ path: OP, body: bodyOf(i, round) })),
      });
      const ms = performance.now() - t0;
      if (answer.result.results.length !== SIZE) throw new Error("the batch did not answer every sub-request");
      return ms;
    };

    // Warm-up: JIT, SQLite page cache, the connection.
    for (let i = 0; i < 3; i++) {
      await sequential();
      await concurrent();
      await batched();
    }
    const seq: number[] = [];
    const conc: number[] = [];
    const bat: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      seq.push(await sequential());
      bat.push(await batched());
      conc.push(await concurrent());
      bat.push(await batched());
    }
    return { b: median(bat), s: median(seq), c: median(conc) };
  } finally {
    await apis?.stop();
    removeDir(data);
  }
}

export async function run(): Promise<BenchResult> {
  const workload = workloads.get(OP);
  if (!workload) throw new Error(`BENCH_BATCH_OP=${OP}: no workload (known: ${[...workloads.keys()].join(", ")})`);
  const normalFirst = process.env.APIS_SQLITE_SYNCHRONOUS === "normal";
  const { b, s, c } = await measure(workload, []);
  // The other durability setting, for what FULL costs (no targets).
  const other = normalFirst ? "full" : "normal";
  const o = await measure(workload, ["--sqlite-synchronous", other]);
  const rows: Row[] = [
    { metric: `${SIZE} × ${OP} as one batch`, value: round(b, 1), unit: "ms" },
    {
      metric: `${SIZE} separate ${OP} calls, one after another`,
      value: round(s, 1),
      unit: "ms",
      ceiling: round(b, 1),
      ratio: round(s / b),
      target: "ratio >= 5",
    },
    {
      metric: `${SIZE} separate ${OP} calls, 10 at a time (for information)`,
      value: round(c, 1),
      unit: "ms",
      ceiling: round(b, 1),
      ratio: round(c / b),
    },
    { metric: `${SIZE} × ${OP} as one batch, --sqlite-synchronous ${other}`, value: round(o.b, 1), unit: "ms" },
    {
      metric: `${SIZE} separate ${OP} calls, one after another, --sqlite-synchronous ${other}`,
      value: round(o.s, 1),
      unit: "ms",
      ceiling: round(o.b, 1),
      ratio: round(o.s / o.b),
    },
    {
      metric: `${SIZE} separate ${OP} calls, 10 at a time, --sqlite-synchronous ${other}`,
      value: round(o.c, 1),
      unit: "ms",
      ceiling: round(o.b, 1),
      ratio: round(o.c / o.b),
    },
  ];
  return {
    name: "batch",
    rows,
    notes: [
      `The same ${SIZE} updates of \`${OP}\` (each changes its item) per round: one \`POST /api/p/<project>/batch\` against ${SIZE} separate calls, sent one after another or 10 at a time over keep-alive connections; medians of ${ROUNDS} alternating rounds after 3 warm-up rounds. "ceiling" is the batch's time and "ratio" how many times longer the separate calls took.`,
      "The target (5×) is on the calls sent one after another, as a client script's loop sends them: what one batch saves against it. Until 2026-12-04 it was on the calls sent 10 at a time too (5.16× on 2026-12-03); since then concurrent writes share their log syncs (group commit: docs/architecture.md), which made those calls about 1.6 times as fast (38 ms for the 50 on 2026-12-03, 19 to 23 ms on 2026-12-04) while the batch kept its time, so that row now measures how well concurrent writers overlap and is for information (under `normal`, with no syncs to share, it was 3.85× on 2026-12-03).",
      "Apis runs as `bun src/main.ts serve` with --rate-limit 0 in its own process; the client (fetch) in the benchmark's process. Each separate call verifies the JWT, checks the membership and commits its own transaction; the batch does that once and commits once, and its steps share the access facts and the records' schema view (docs/batch.md, section Speed).",
      `The operation is BENCH_BATCH_OP (here ${OP}; default records/update: each update writes a textline and a number of one of ${SIZE} article records and answers the record's form; queries/update is the other workload).`,
      `SQLite durability: synchronous=${normalFirst ? "NORMAL (APIS_SQLITE_SYNCHRONOUS=normal)" : "FULL (the default): every commit syncs the write-ahead log"}. The rows marked \`--sqlite-synchronous ${other}\` repeat the measurement on a second server (new data folder) with that setting, for what durability costs: under FULL, the separate calls one after another take ${round(normalFirst ? o.s / s : s / o.s)}× as long as under NORMAL, 10 at a time ${round(normalFirst ? o.c / c : c / o.c)}×, the batch ${round(normalFirst ? o.b / b : b / o.b)}× (one commit, one sync).`,
    ],
  };
}

if (import.meta.main) console.log(JSON.stringify(await run(), null, 2));
