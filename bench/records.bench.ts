/**
 * The records benchmark (issue 11): a generated catalogue of BENCH_RECORDS records (default
 * 100,000) in 3 languages with 40 fields, 5 levels deep (root, 10 groups, 100 families, up to 1,000
 * series, leaves; one series holds 10,000 leaves), then:
 *
 * - `records/bulk/get` paging through every record (page.size 1000, language en) against a raw
 *   bun:sqlite scan of the same rows serialised to the same JSON in this process (ratio >= 0.5);
 * - `records/children` of the 10,000-child parent, one page of 100 at a random place in an
 *   ordering: p99 < 20 ms;
 * - `records/search`, a `+word` full-text query and one field filter: p99 < 50 ms;
 * - `records/update` of one value of a random leaf (authenticated, validated, change log, sync item)
 *   against a bare Bun.serve doing the same SQLite UPDATE with the same JWT check
 *   (bench/records-bare.ts), 10 concurrent clients, alternating rounds: ratio >= 0.4;
 * - rows written by moving one record among the 10,000 siblings: <= 3;
 * - the server's RSS, sampled after every phase: < 300 MB;
 * - beside latencies, the server's CPU time per request (/proc), steadier on a busy machine.
 *
 * The catalogue is written by the records code itself (insertRecordIn, in transactions of 5,000)
 * before the server starts; Apis and the bare server then run in their own processes.
 * Runnable alone: `bun bench/records.bench.ts`, or `npm run bench -- records`;
 * `BENCH_RECORDS=10000` for a quick run. bench/records-1m.bench.ts runs the same on the
 * 1,000,000-record catalogue (issue 41), built once and kept in bench/.tmp (bench/catalogue.ts);
 * there bulk/get reads the first BENCH_BULK_PAGES pages (100) rather than all 1,000.
 */
import { Database } from "bun:sqlite";
import { eq } from "drizzle-orm";
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { loadConfig } from "../src/config";
import { openInstance } from "../src/app/instance";
import { mutate } from "../src/db/mutate";
import { createProject } from "../src/features/projects/projects.service";
import { projects } from "../src/features/projects/projects.table";
import { getRoot, insertRecordIn, mustRecord, recordsWrite, type Rec } from "../src/features/records/records.service";
import { moveRecord } from "../src/features/records/tree.service";
import { commitDefinition, createDefinition } from "../src/features/schema/definitions.service";
import { commitField, createField } from "../src/features/schema/fields.service";
import { createPerson, hashPassword } from "../src/features/users/users.service";
import {
  BUN,
  ROOT,
  freePort,
  median,
  round,
  ROUNDS,
  rssMb,
  SECONDS,
  spawnServer,
  type BenchResult,
  type Child,
  type Row,
  spawnApis,
} from "./harness";

const N = Number(process.env.BENCH_RECORDS ?? 100_000);
export const USER = { username: "recbench", email: "recbench@example.test", password: "bench-password-1" };
export const LANGS = ["en", "nl", "de"];
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 300);
const CLIENTS = 10;
/** Calls made before a latency phase is timed (on other records than the ones measured). */
const WARMUP = 20;

function rng(seed: number) {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
}
const rand = rng(42);
const pick = <T>(xs: T[]) => xs[Math.floor(rand() * xs.length)]!;

/** 3,000 pseudo-words, some with accents (the index folds them). */
const SYL = [
  "ka",
  "lo",
  "mi",
  "ne",
  "ru",
  "sa",
  "ti",
  "vo",
  "zé",
  "bra",
  "kü",
  "dor",
  "fen",
  "gal",
  "hin",
  "jor",
  "mar",
  "nel",
  "pos",
  "quel",
  "ris",
  "tan",
  "ul",
  "ves",
];
export const VOCAB = Array.from(
  { length: 3000 },
  (_, i) => SYL[i % 24]! + SYL[Math.floor(i / 24) % 24]! + (i >= 576 ? SYL[Math.floor(i / 576) % 24]! : ""),
);
const words = (n: number) => Array.from({ length: n }, () => pick(VOCAB)).join(" ");

export type FieldDef = { name: string; type: string; localized: boolean; gid?: string };
export const FIELDS: FieldDef[] = [
  { name: "name", type: "textline", localized: true },
  { name: "description", type: "text", localized: true },
  ...Array.from({ length: 8 }, (_, i) => ({ name: `label_${i}`, type: "textline", localized: true })),
  ...Array.from({ length: 10 }, (_, i) => ({ name: `count_${i}`, type: "number", localized: false })),
  { name: "price", type: "decimal", localized: false },
  ...Array.from({ length: 9 }, (_, i) => ({ name: `measure_${i}`, type: "decimal", localized: false })),
  ...Array.from({ length: 5 }, (_, i) => ({ name: `flag_${i}`, type: "boolean", localized: false })),
  ...Array.from({ length: 5 }, (_, i) => ({ name: `code_${i}`, type: "textline", localized: false })),
];

function valuesOf(i: number): Record<string, Record<string, unknown>> {
  const vals: Record<string, Record<string, unknown>> = { "*": {} };
  for (const l of LANGS) vals[l] = {};
  for (const f of FIELDS) {
    if (f.localized)
      for (const l of LANGS)
        vals[l]![f.gid!] = f.type === "text" ? words(10) : f.name === "name" ? `${words(3)} ${i}` : words(2);
    else if (f.type === "number") vals["*"]![f.gid!] = Math.floor(rand() * 10_000);
    else if (f.type === "decimal") vals["*"]![f.gid!] = Math.round(rand() * 100_000) / 100;
    else if (f.type === "boolean") vals["*"]![f.gid!] = rand() < 0.5;
    else vals["*"]![f.gid!] = `C-${Math.floor(rand() * 1e6)}`;
  }
  return vals;
}

export type Catalogue = {
  project: string;
  big: string;
  other: string;
  bigChildren: string[];
  leaves: string[];
  definition: string;
  moveRows: number;
};

/**
 * Writes the catalogue of `records` records into a fresh data folder with the records code; returns what
 * the measurements need (FIELDS get their gids). Also used by bench/schema.bench.ts.
 */
export async function generate(
  data: string,
  notes: string[],
  records = N,
  /** Leaves under the one big parent (bench/pg-api.bench.ts asks for 10,000 in a smaller catalogue). */
  bigLeaves = Math.min(10_000, Math.floor(records / 10)),
): Promise<Catalogue> {
  const t0 = performance.now();
  const ctx = await openInstance(loadConfig({ data, "log-level": "warn", port: "0" }, {}));
  try {
    const hash = await hashPassword(USER.password);
    const user = await mutate(
      ctx.db,
      ctx.hub,
      async (tx, log) =>
        await createPerson(tx, log, { username: USER.username, email: USER.email, passwordHash: hash }),
    );
    const project = (await createProject(ctx, { userGid: user.gid, kind: "person" }, { name: "Records bench" })).result
      .project as string;
    ctx.db
      .update(projects)
      .set({ options: { languages: LANGS, orderings: { ord: "Manual" }, channels: { web: "Web" } } })
      .where(eq(projects.gid, project))
      .run();
    const actor = { userGid: user.gid, kind: "person" as const };
    for (const f of FIELDS) {
      f.gid = (await createField(ctx, actor, project, { name: f.name, type: f.type, is_localized: f.localized })).result
        .field as string;
      await commitField(ctx, actor, project, { field: f.gid });
    }
    const def = async (name: string, fields: string[], child?: string) => {
      const g = (
        await createDefinition(ctx, actor, project, {
          name,
          fields,
          titlefield: FIELDS[0]!.gid!,
          childdefinitions: child ? [child] : [],
        })
      ).result.definition as string;
      await commitDefinition(ctx, actor, project, { definition: g });
      return g;
    };
    const article = await def(
      "article",
      FIELDS.map((f) => f.gid!),
    );
    const group = await def("group", [FIELDS[0]!.gid!, FIELDS[1]!.gid!]);
    const root = (await getRoot(ctx, actor, project, {})).result.root as string;
    const levels = [10, 100, Math.max(10, Math.min(1000, Math.floor(records / 100)))];
    const big = Math.min(bigLeaves, records - 1 - levels.reduce((a, b) => a + b, 0));
    let made = 1;
    let parents: Rec[] = [await recordsWrite(ctx, actor, project, async (tx) => await mustRecord(tx, project, root))];
    for (const n of levels) {
      const next: Rec[] = [];
      await recordsWrite(ctx, actor, project, async (tx, _log, view, touch) => {
        for (let i = 0; i < n; i++)
          next.push(
            await insertRecordIn(tx, view, touch, {
              parent: parents[i % parents.length]!,
              definition: group,
              vals: { en: { [FIELDS[0]!.gid!]: words(2) } },
              ordering: "ord",
            }),
          );
      });
      made += n;
      parents = next;
    }
    const bigParent = parents[0]!;
    const others = parents.slice(1);
    const leaves: string[] = [];
    const bigChildren: string[] = [];
    const total = records - made;
    const BATCH = 5000;
    for (let start = 0; start < total; start += BATCH) {
      await recordsWrite(ctx, actor, project, async (tx, _log, view, touch) => {
        for (let i = start; i < Math.min(total, start + BATCH); i++) {
          const parent = i < big ? bigParent : others[i % others.length]!;
          const r = await insertRecordIn(tx, view, touch, {
            parent,
            definition: article,
            vals: valuesOf(i),
            ordering: "ord",
          });
          leaves.push(r.gid);
          if (i < big) bigChildren.push(r.gid);
        }
      });
    }
    // Rows written by one move among the big parent's siblings (place, record, sync item).
    const sqlite = ctx.db.$client;
    const changes = () => (sqlite.query("SELECT total_changes() AS n").get() as { n: number }).n;
    const before = changes();
    await moveRecord(ctx, actor, project, {
      record: bigChildren[bigChildren.length - 1],
      parent: bigParent.gid,
      ordering: "ord",
      before_record: bigChildren[Math.floor(bigChildren.length / 2)],
    });
    const moveRows = changes() - before;
    const count = (
      sqlite.query("SELECT count(*) AS n FROM records WHERE project_gid = ?").get(project) as { n: number }
    ).n;
    notes.push(
      `Catalogue: ${count} records (${levels.join(" + ")} inner records, ${big} leaves under one parent), ${FIELDS.length} fields (${FIELDS.filter((f) => f.localized).length} localized) in ${LANGS.length} languages, written by insertRecordIn in ${round((performance.now() - t0) / 1000, 1)} s (${round(count / ((performance.now() - t0) / 1000), 0)} records/s including validation, search index and sync items).`,
    );
    return { project, big: bigParent.gid, other: others[0]!.gid, bigChildren, leaves, definition: article, moveRows };
  } finally {
    ctx.db.$client.close();
  }
}

async function post(
  url: string,
  token: string,
  body: unknown,
): Promise<{ text: string; ms: number; auth: string | null }> {
  const t = performance.now();
  const send = () =>
    fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: JSON.stringify(body),
    });
  // A pooled keep-alive connection the server closed while idle: send once more on a fresh one.
  const res = await send().catch((e) => (String(e?.code) === "ECONNRESET" ? send() : Promise.reject(e)));
  const text = await res.text();
  if (!res.ok) throw new Error(`${url}: ${res.status} ${text.slice(0, 500)}`);
  return { text, ms: performance.now() - t, auth: res.headers.get("authorization") };
}

/**
 * CPU time a process has used (user + system, ms; /proc, clock ticks of 10 ms). Per request it is
 * steadier than latency on a busy machine: waiting for a core is not counted.
 */
function cpuMs(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(f[11]) + Number(f[12])) * 10;
}

const p99 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * 0.99))]!;

/** The raw ceiling of bulk/get: the same rows by id in pages of 1000, the same JSON, no server. */
function rawScan(
  data: string,
  project: string,
  fields: FieldDef[],
  maxPages = Infinity,
): { ms: number; first: unknown } {
  const db = new Database(join(data, "apis.db"), { readonly: true });
  const t0 = performance.now();
  let after = 0;
  let pages = 0;
  let first: unknown;
  const total = (db.query("SELECT count(*) AS n FROM records WHERE project_gid = ?").get(project) as { n: number }).n;
  const defs = new Map<string, FieldDef[]>();
  const defFields = (gid: string) => {
    let f = defs.get(gid);
    if (!f) {
      const spec = JSON.parse(
        (db.query("SELECT spec FROM definitions WHERE gid = ?").get(gid) as { spec: string }).spec,
      ) as { fields: string[]; titlefield: string | null };
      f = spec.fields.map((g) => fields.find((x) => x.gid === g)!).filter(Boolean);
      defs.set(gid, f);
    }
    return f;
  };
  // The values as JSON text, as Apis reads them (SQLite keeps them as JSONB: src/db/binary-json.ts).
  const page = db.query(
    "SELECT *, json(vals) AS vals FROM records WHERE project_gid = ? AND id > ? ORDER BY id LIMIT 1001",
  );
  const ords = db.query(
    "SELECT record_id, ordering, pos FROM record_orderings WHERE record_id IN (SELECT value FROM json_each(?))",
  );
  for (;;) {
    const rows = page.all(project, after) as Record<string, any>[];
    const more = rows.length > 1000;
    const list = more ? rows.slice(0, 1000) : rows;
    const o = new Map<number, Record<string, number>>();
    for (const r of ords.all(JSON.stringify(list.map((x) => x.id))) as {
      record_id: number;
      ordering: string;
      pos: number;
    }[])
      (o.get(r.record_id) ?? o.set(r.record_id, {}).get(r.record_id)!)[r.ordering] = r.pos;
    const out: Record<string, unknown> = {};
    for (const r of list) {
      const vals = JSON.parse(r.vals);
      const fl = defFields(r.definition);
      const en: Record<string, unknown> = {};
      for (const f of fl) en[f.name] = (f.localized ? vals.en : vals["*"])?.[f.gid!] ?? null;
      out[r.gid] = {
        gid: r.gid,
        parent: r.parent,
        canonical: r.canonical,
        backlinks: [],
        treelevel: r.treelevel,
        path: JSON.parse(r.path),
        childcount: r.childcount,
        definition: r.definition,
        title: { en: vals.en?.[FIELDS[0]!.gid!] ?? "" },
        status: r.status,
        channels: JSON.parse(r.channels),
        orderings: o.get(r.id) ?? {},
        is_link: !!r.is_link,
        fields: { en },
        created_on: r.created_on,
        updated_on: r.updated_on,
      };
    }
    const text = JSON.stringify({
      success: true,
      result: { records: list.map((r) => r.gid), "records.size": total, "page.cursor": more ? "next" : null },
      data: { records: out },
    });
    first ??= JSON.parse(text);
    if (!more || ++pages >= maxPages) break;
    after = list.at(-1)!.id;
  }
  const ms = performance.now() - t0;
  db.close();
  return { ms, first };
}

/** Requests per second of `send` with CLIENTS concurrent loops for `seconds`. */
async function loop(send: () => Promise<unknown>, seconds = SECONDS): Promise<number> {
  const end = performance.now() + seconds * 1000;
  let n = 0;
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (performance.now() < end) {
        await send();
        n++;
      }
    }),
  );
  return n / seconds;
}

export async function run(): Promise<BenchResult> {
  return runRecords(N, "records");
}

/** The records benchmark on a catalogue of `n` records (kept and copied for 1,000,000: bench/catalogue.ts). */
export async function runRecords(n: number, name: string): Promise<BenchResult> {
  const notes: string[] = [];
  const rows: Row[] = [];
  const { catalogueFor } = await import("./catalogue");
  let done = () => {};
  let data = "";
  let apis: Child | undefined;
  let bare: Child | undefined;
  let rss = 0;
  const sample = () => (rss = Math.max(rss, rssMb(apis!.pid)));
  const push = (row: Row) => (rows.push(row), console.log(JSON.stringify(row)));
  try {
    const made = await catalogueFor(n, notes);
    done = made.done;
    data = made.data;
    const cat = made.cat;
    // What the catalogue costs on disk, and what a start-up migration rebuilding an index of the
    // records table would take at this size (REINDEX of records_parent, before the server opens it).
    const dbBytes = statSync(join(data, "apis.db")).size;
    const reindexMs = (() => {
      const db = new Database(join(data, "apis.db"));
      try {
        const t0 = performance.now();
        db.exec("REINDEX records_parent");
        return performance.now() - t0;
      } finally {
        db.close();
      }
    })();
    apis = await spawnApis(data, ["--rate-limit", "0"], { timeoutMs: 120_000 });
    const login = await fetch(apis.url + "/api/login", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ username: USER.username, password: USER.password }),
    });
    await login.arrayBuffer();
    const token = (login.headers.get("authorization") ?? "").replace(/^Bearer /, "");
    if (!login.ok || !token) throw new Error(`login failed: ${login.status}`);
    const api = (op: string) => `${apis!.url}/api/p/${cat.project}/records/${op}`;
    sample();

    // bulk/get: every record (at most `bulkPages` pages), page.size 1000, against the raw scan (alternating rounds).
    const bulkPages = Number(process.env.BENCH_BULK_PAGES ?? (n > 100_000 ? 100 : Infinity));
    const selection = [{ search: { filter: ["treelevel", ">=", 0] } }];
    let apisMs = 0;
    let rawMs = 0;
    let pages = 0;
    let firstApis: any;
    let rawFirst: any;
    for (let round_ = 0; round_ < ROUNDS; round_++) {
      const t0 = performance.now();
      let cursor: string | null = null;
      let seen = 0;
      pages = 0;
      do {
        const r = await post(api("bulk/get"), token, {
          selection,
          language: "en",
          "page.size": 1000,
          ...(cursor ? { "page.cursor": cursor } : {}),
        });
        const body = JSON.parse(r.text);
        firstApis ??= body;
        cursor = body.result["page.cursor"];
        seen += body.result.records.length;
        pages++;
      } while (cursor && pages < bulkPages);
      apisMs += performance.now() - t0;
      if (seen !== Math.min(n, bulkPages * 1000)) throw new Error(`bulk/get returned ${seen} records, expected ${n}`);
      const raw = rawScan(data, cat.project, FIELDS, bulkPages);
      rawMs += raw.ms;
      rawFirst ??= raw.first;
    }
    sample();
    // The ceiling must produce the same answer (the cursor aside).
    const strip = (b: any) => ({ ...b, result: { ...b.result, "page.cursor": !!b.result["page.cursor"] } });
    if (JSON.stringify(strip(firstApis)) !== JSON.stringify(strip(rawFirst)))
      throw new Error("the raw scan's first page differs from Apis' answer");
    push({
      metric:
        pages * 1000 >= n
          ? `records/bulk/get, all ${n} records (${pages} pages of 1000)`
          : `records/bulk/get, the first ${pages * 1000} of ${n} records (${pages} pages of 1000)`,
      value: round(apisMs / ROUNDS, 0),
      unit: "ms",
      ceiling: round(rawMs / ROUNDS, 0),
      ratio: round(rawMs / apisMs),
      target: "ratio >= 0.5",
    });

    // children of the 10,000-child parent, one page of 100 at a random place.
    const times: number[] = [];
    const size = cat.bigChildren.length;
    // Warm-up: the same call on another parent (about 90 children), so the first samples do not
    // time the compiling of the code path; the big parent's pages stay unread until measured.
    for (let i = 0; i < WARMUP; i++)
      await post(api("children"), token, {
        record: cat.other,
        ordering: "ord",
        language: "en",
        "page.top": 0,
        "page.size": 100,
      });
    // This process built the catalogue: its garbage is collected now, not in the middle of the samples.
    Bun.gc(true);
    const cpu0 = cpuMs(apis.pid);
    for (let i = 0; i < SAMPLES; i++)
      times.push(
        (
          await post(api("children"), token, {
            record: cat.big,
            ordering: "ord",
            language: "en",
            "page.top": Math.floor(rand() * Math.max(1, size - 100)),
            "page.size": 100,
          })
        ).ms,
      );
    sample();
    const childrenCpu = (cpuMs(apis.pid) - cpu0) / SAMPLES;
    push({
      metric: `records/children, page of 100 among ${size} children in an ordering (p50 ${round(median(times), 1)} ms; server CPU ${round(childrenCpu, 1)} ms per request)`,
      value: round(p99(times), 1),
      unit: "ms p99",
      target: "< 20 ms",
    });

    // search: +word and one field filter, first as it is, then with the field's index (apis index add).
    const search = () =>
      post(api("search"), token, {
        language: "en",
        q: `+${pick(VOCAB)} ${pick(VOCAB)}`,
        filter: ["price", "<", 500],
        "page.size": 10,
      });
    /** SAMPLES searches after WARMUP: p50, p99, hits and server CPU per search. */
    const searchRound = async () => {
      const stimes: number[] = [];
      let hits = 0;
      // Warm-up, as for children: the code path compiled and, on a catalogue searched in parts, the
      // reader threads started (at the first search that splits), so the first samples time neither.
      for (let i = 0; i < WARMUP; i++) await search();
      const c0 = cpuMs(apis!.pid);
      for (let i = 0; i < SAMPLES; i++) {
        const r = await search();
        stimes.push(r.ms);
        hits += JSON.parse(r.text).result["records.size"];
      }
      sample();
      return {
        p50: median(stimes),
        p99: p99(stimes),
        hits: hits / SAMPLES,
        cpu: (cpuMs(apis!.pid) - c0) / SAMPLES,
      };
    };
    const plain = await searchRound();
    push({
      metric: `records/search, +word plus a field filter, without a field index (for information: p50 ${round(plain.p50, 1)} ms, ${round(plain.hits, 0)} hits on average; server CPU ${round(plain.cpu, 1)} ms per request)`,
      value: round(plain.p99, 1),
      unit: "ms p99",
    });
    // The field index of price, made as an admin makes it (the server stopped), then the same searches.
    await apis.stop();
    apis = undefined;
    const bytesBefore = statSync(join(data, "apis.db")).size;
    const indexAdd = Bun.spawnSync(
      [BUN, "src/main.ts", "index", "add", "--data", data, "--project", cat.project, "--field", "price", "--json"],
      { cwd: ROOT, env: { ...process.env, APIS_LOG_LEVEL: "error" } },
    );
    if (indexAdd.exitCode !== 0) throw new Error(`apis index add: ${indexAdd.stderr.toString()}`);
    const indexSeconds = (JSON.parse(indexAdd.stdout.toString()) as { seconds: number }).seconds;
    const indexBytes = statSync(join(data, "apis.db")).size - bytesBefore;
    apis = await spawnApis(data, ["--rate-limit", "0"], { timeoutMs: 120_000 });
    const indexed = await searchRound();
    push({
      metric: `records/search, +word plus a field filter, the field indexed (apis index add) (p50 ${round(indexed.p50, 1)} ms, ${round(indexed.hits, 0)} hits on average; server CPU ${round(indexed.cpu, 1)} ms per request)`,
      value: round(indexed.p99, 1),
      unit: "ms p99",
      target: "< 50 ms",
    });
    push({
      metric: "making the field index of price (apis index add, the server stopped)",
      value: round(indexSeconds, 1),
      unit: "s",
    });
    notes.push(
      `Field index (docs/records.md, "Field indexes"): the search rows run first as they are, then the server is stopped, \`apis index add --field price\` makes the project's index of the filtered field (${round(indexSeconds, 1)} s; the file grew by ${round(indexBytes / 2 ** 20, 1)} MiB, ${round(indexBytes / n, 1)} bytes per record), the server is started again and the same searches run (${WARMUP} warm-up searches, then ${SAMPLES} samples); the update rows below run with the index in place, so each update keeps it too. A found document's filter is then read from the index (a few thousand pages, which stay in memory) instead of from its record's row (one random page of the table each).`,
    );

    // update of one value against the bare UPDATE with the same JWT check.
    const stock = FIELDS.find((f) => f.name === "count_0")!.gid!;
    const barePort = await freePort();
    bare = await spawnServer([BUN, "bench/records-bare.ts", String(barePort), data], barePort);
    /** ROUNDS alternating rounds of the update loop against Apis and the bare server: requests per second and CPU ms per request. */
    const updateRounds = async (a: Child, b: Child) => {
      let uA = 0;
      let uB = 0;
      let cpuA = 0;
      let cpuB = 0;
      for (let i = 0; i < ROUNDS; i++) {
        const a0 = cpuMs(a.pid);
        uA += await loop(() =>
          post(api("update"), token, {
            record: pick(cat.leaves),
            fields: { en: { count_0: Math.floor(rand() * 1e6) } },
          }),
        );
        cpuA += cpuMs(a.pid) - a0;
        const b0 = cpuMs(b.pid);
        uB += await loop(() =>
          post(`${b.url}/update`, token, {
            record: pick(cat.leaves),
            field: `"${stock}"`,
            value: Math.floor(rand() * 1e6),
          }),
        );
        cpuB += cpuMs(b.pid) - b0;
      }
      // CPU per request: what each server spends on one update, whatever share of the cores it got.
      return { apis: uA / ROUNDS, bare: uB / ROUNDS, cpuApis: cpuA / (uA * SECONDS), cpuBare: cpuB / (uB * SECONDS) };
    };
    const u = await updateRounds(apis, bare);
    sample();
    push({
      metric: `records/update of one value, ${CLIENTS} concurrent clients`,
      value: round(u.apis, 0),
      unit: "req/s",
      ceiling: round(u.bare, 0),
      ratio: round(u.apis / u.bare),
      target: "ratio >= 0.4",
    });
    push({
      metric: "records/update, server CPU per request (ceiling: the bare server's; ratio = bare / Apis)",
      value: round(u.cpuApis, 2),
      unit: "ms",
      ceiling: round(u.cpuBare, 2),
      ratio: round(u.cpuBare / u.cpuApis),
    });
    // What durability costs: both servers again on the same database with the other setting.
    const normalFirst = process.env.APIS_SQLITE_SYNCHRONOUS === "normal";
    const other = normalFirst ? "full" : "normal";
    await bare.stop();
    await apis.stop();
    bare = apis = undefined;
    apis = await spawnApis(data, ["--rate-limit", "0", "--sqlite-synchronous", other], { timeoutMs: 120_000 });
    bare = await spawnServer([BUN, "bench/records-bare.ts", String(barePort), data], barePort, {
      env: { APIS_SQLITE_SYNCHRONOUS: other },
    });
    // A short warm-up of each (the first loop above followed the search phase).
    await loop(
      () =>
        post(api("update"), token, { record: pick(cat.leaves), fields: { en: { count_0: Math.floor(rand() * 1e6) } } }),
      2,
    );
    await loop(
      () =>
        post(`${bare!.url}/update`, token, {
          record: pick(cat.leaves),
          field: `"${stock}"`,
          value: Math.floor(rand() * 1e6),
        }),
      2,
    );
    const o = await updateRounds(apis, bare);
    sample();
    push({
      metric: `records/update of one value, ${CLIENTS} concurrent clients, --sqlite-synchronous ${other} (both servers)`,
      value: round(o.apis, 0),
      unit: "req/s",
      ceiling: round(o.bare, 0),
      ratio: round(o.apis / o.bare),
    });
    const fullCost = normalFirst ? o.apis / u.apis : u.apis / o.apis;
    push({
      metric: `rows written by moving one record among ${size} siblings (its place, its updated_on, the sync item)`,
      value: cat.moveRows,
      unit: "rows",
      target: "<= 3",
    });
    push({
      metric: "database size per record (the whole file / records)",
      value: round(dbBytes / n, 0),
      unit: "bytes",
    });
    push({
      metric: "a start-up migration rebuilding one index of the records table (REINDEX records_parent)",
      value: round(reindexMs / 1000, 2),
      unit: "s",
    });
    push({
      metric: "server RSS, highest sample after each phase",
      value: round(rss, 0),
      unit: "MB",
      target: "< 300 MB",
    });
    notes.push(
      `Apis runs as \`bun src/main.ts serve --rate-limit 0\` (the per-user request limit, 200/s by default, would otherwise cap the update loop) in its own process; requests are sent one at a time (bulk/get, children, search: ${SAMPLES} samples each; before the children samples, ${WARMUP} calls on another parent compile the code path; before the search samples, ${WARMUP} searches of the same kind compile it and start the reader threads of a split search) or by ${CLIENTS} concurrent loops (${SECONDS} s per round, ${ROUNDS} alternating rounds against the bare server).`,
      "The bulk/get ceiling reads the same rows and orderings with bun:sqlite in this process and builds the same JSON (checked equal to Apis' first page); it has no HTTP, no access check, no per-definition field resolution through the schema.",
      "Server CPU per request: user + system time of the server process (/proc/<pid>/stat, 10 ms ticks) over the phase, divided by its requests; time spent waiting for a core is not counted, so on a shared machine it is steadier than the latencies.",
      "The update ceiling (bench/records-bare.ts) verifies the same JWT with the same code and runs one `jsonb_set` UPDATE (the values stay JSONB, as Apis keeps them); Apis also validates the value, keeps checks and the search text, writes the change log and publishes the sync item. Both answer an update once its commit is on disk; since 2026-12-04 Apis's commits that come together share one sync of the log, run off the event loop (group commit, docs/architecture.md), where the bare server syncs each UPDATE inline as SQLite does by default: with 10 clients Apis waits for fewer syncs than it commits (the row went from 0.41 to about 0.6 of the bare server at 100,000 records), and the row under `--sqlite-synchronous normal`, where neither syncs, compares the work alone.",
      `SQLite durability: synchronous=${normalFirst ? "NORMAL (APIS_SQLITE_SYNCHRONOUS=normal)" : "FULL (the default)"} in Apis and the bare server alike. The row marked \`--sqlite-synchronous ${other}\` restarts both on the same database with that setting and runs the update loop again, for what durability costs: under FULL, Apis answers ${round(fullCost)} as many updates per second as under NORMAL.`,
    );
    return { name, rows, notes };
  } finally {
    await bare?.stop();
    await apis?.stop();
    done();
  }
}

if (import.meta.main) console.log(JSON.stringify(await run(), null, 2));
