/**
 * Where the time of one `records/search` goes (issue 41): the statement the server runs for the
 * records benchmark's search (`+word word`, the field filter `price < 500`, language en, a page
 * of 10 with the count of all matches), built by the search code itself, and the same statement
 * cut down to its parts, timed in this process (CPU time per search, and per document the
 * full-text index finds). Not part of `npm run bench` (no `.bench.ts`):
 *
 *   bun bench/records-search.micro.ts <folder>
 *
 * `<folder>` holds `catalogue.json` and the database (`apis.db`, or `data/apis.db`): a COPY of a
 * kept catalogue (bench/catalogue.ts), opened read-only. MICRO_SEARCHES (40) searches per part,
 * MICRO_ROUNDS (4) rounds with the parts alternating. The parts add one step each:
 *
 * - index: the documents of the language (and the shared ones) holding the words (FTS5 alone);
 * - records: each one's record row read (project and status tested): one row, one page, each;
 * - filter: the field filter too (a JSON value of that row);
 * - rank: bm25 of the documents that passed (it reads each one's size from the index);
 * - statement: the whole statement (sum per record, count, order, page).
 */
import { Database } from "bun:sqlite";
import { sql } from "drizzle-orm";
import { existsSync, readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { filterToSql, makeDomain, parseFilter } from "../src/core/filter";
import { sqliteDialect, toQuery } from "../src/db/sqlite/dialect";
import { recordMatchesSqlite, recordSearchPageSqlite } from "../src/db/sqlite/search";
import { SEARCH_SLOT_BITS, searchSlot } from "../src/features/records/values.service";
import { FIELDS, VOCAB } from "./records.bench";

const dir = process.argv[2];
if (!dir) throw new Error("usage: bun bench/records-search.micro.ts <folder with catalogue.json and apis.db>");
const file = [join(dir, "apis.db"), join(dir, "data", "apis.db")].find(existsSync);
if (!file) throw new Error(`no apis.db in ${dir}`);
const kept = JSON.parse(readFileSync(join(dir, "catalogue.json"), "utf8")) as {
  cat: { project: string };
  fields: (string | undefined)[];
};
const SEARCHES = Number(process.env.MICRO_SEARCHES ?? 40);
const ROUNDS = Number(process.env.MICRO_ROUNDS ?? 4);
const db = new Database(file, { readonly: true });
// MICRO_PRAGMAS: pragmas for the connection, `;`-separated (e.g. `mmap_size=8589934592;cache_size=-65536`).
for (const p of (process.env.MICRO_PRAGMAS ?? "").split(";").filter(Boolean)) db.exec(`PRAGMA ${p}`);
const project = kept.cat.project;
const price = kept.fields[FIELDS.findIndex((f) => f.name === "price")]!;

// The search's condition as records.search.ts builds it (the project, the filter, not deleted).
const domain = makeDomain([["price", { type: "json", sql: sqliteDialect.jsonValue(sql`r.vals`, ["*", price]) }]]);
const filter = filterToSql(parseFilter(["price", "<", 500], domain), { language: "en", dialect: "sqlite" });
const where = sql`r.project_gid = ${project} AND ${filter} AND r.status != ${"deleted"}`;
const layout = { slotOf: searchSlot, slotBits: SEARCH_SLOT_BITS };

let seed = 7;
const rand = () => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32;
const pick = () => VOCAB[Math.floor(rand() * VOCAB.length)]!;
const words = Array.from({ length: SEARCHES }, () => `+${pick()} ${pick()}`);

/** The whole statement, and its parts: the same FROM and WHERE, fewer steps. */
function statements(q: string): Map<string, { sql: string; params: unknown[] }> {
  const whole = toQuery(recordSearchPageSqlite(recordMatchesSqlite(q, "en", where, layout)!, { size: 10 }));
  // The statement's own text: `... WHERE records_fts MATCH ? AND <slot test> AND <where> ) SELECT ...`.
  const head = whole.sql.indexOf("FROM records_fts f");
  const tail = whole.sql.indexOf(") SELECT rid");
  const body = whole.sql.slice(head, tail);
  const slotOnly = body.slice(0, body.indexOf(" AND r.project_gid"));
  const noFilter = `${slotOnly} AND r.project_gid = ? AND r.status != ?`;
  const [match, slot] = whole.params as [string, number];
  const from = slotOnly.replace(/ CROSS JOIN records r ON r\.id = \(f\.rowid >> \d+\)/, "");
  return new Map([
    ["index", { sql: `SELECT count(*) AS n ${from}`, params: [match, slot] }],
    ["records", { sql: `SELECT count(r.gid) AS n ${noFilter}`, params: [match, slot, project, "deleted"] }],
    ["filter", { sql: `SELECT count(r.gid) AS n ${body}`, params: whole.params }],
    [
      "rank",
      {
        sql: `WITH d AS MATERIALIZED (SELECT bm25(records_fts, 0, 0, 10, 1) AS s ${body}) SELECT count(*) AS n, sum(s) AS s FROM d`,
        params: whole.params,
      },
    ],
    ["statement", whole],
  ]);
}

const built = words.map(statements);
const parts = [...built[0]!.keys()];
const cpu = new Map(parts.map((p) => [p, 0]));
const found = new Map(parts.map((p) => [p, 0]));
let documents = 0;
for (let round = 0; round < ROUNDS; round++) {
  for (const part of round % 2 ? [...parts].reverse() : parts) {
    const before = process.cpuUsage();
    let n = 0;
    for (const b of built) {
      const s = b.get(part)!;
      const rows = db.query(s.sql).all(...(s.params as never[])) as { n?: number; total?: number }[];
      n += rows[0]?.n ?? rows[0]?.total ?? 0;
    }
    const used = process.cpuUsage(before);
    cpu.set(part, cpu.get(part)! + (used.user + used.system) / 1000);
    found.set(part, n / words.length);
    if (part === "index") documents = n / words.length;
  }
}
const perSearch = (p: string) => cpu.get(p)! / (ROUNDS * words.length);
console.log(
  `${file}: ${words.length} searches x ${ROUNDS} rounds; ${Math.round(documents)} documents found by the index per search; load ${loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")}`,
);
let previous = 0;
for (const p of parts) {
  const ms = perSearch(p);
  console.log(
    `${p.padEnd(10)} ${ms.toFixed(1).padStart(7)} ms CPU per search (+${(ms - previous).toFixed(1)}; ${(((ms - previous) * 1000) / documents).toFixed(2)} µs per document found), ${Math.round(found.get(p)!)} rows or matches`,
  );
  previous = ms;
}
db.close();
