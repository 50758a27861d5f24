/**
 * The benchmark runner: `npm run bench` runs every `bench/*.bench.ts`, `npm run bench -- api dam`
 * only those named. Each module exports
 *
 *   async function run(): Promise<{ name, rows: { metric, value, unit, ceiling?, ratio?, target? }[], notes? }>
 *
 * and the runner writes `bench/RESULTS.md`: the machine, then one section per benchmark. Sections
 * of benchmarks not run this time are kept from the previous file, each with its own date.
 *
 * `target` is a comparison the runner checks: `ratio >= 0.6` compares the ratio, `< 300 ms` or
 * `<= 120 MB` the value (the unit word is for the reader). Other text is shown, not checked.
 *
 * Environment: BENCH_SECONDS (per load run, default 8), BENCH_ROUNDS (alternating rounds, 2),
 * BENCH_CONNECTIONS (10), BENCH_COLD_RUNS (5).
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, loadavg, totalmem } from "node:os";
import { basename, join } from "node:path";
import type { BenchResult, Row } from "./harness";

const DIR = import.meta.dir;
const RESULTS = join(DIR, "RESULTS.md");

/** pass/fail of one row, or null when it has no checkable target. */
export function verdict(row: Row): boolean | null {
  if (!row.target) return null;
  const m = /^\s*(ratio\s*)?(<=|>=|<|>|≤|≥)\s*(-?[\d.]+)/i.exec(row.target);
  if (!m) return null;
  const subject = m[1] || /ratio|×|x ceiling/i.test(row.target) ? row.ratio : row.value;
  if (subject === undefined || Number.isNaN(subject)) return null;
  const limit = Number(m[3]);
  switch (m[2]) {
    case "<":
      return subject < limit;
    case "<=":
    case "≤":
      return subject <= limit;
    case ">":
      return subject > limit;
    default:
      return subject >= limit;
  }
}

const fmt = (v: number | undefined) => (v === undefined || Number.isNaN(v) ? "—" : String(v));

function section(r: BenchResult, date: string, seconds: number): string {
  const lines = [`<!-- bench:${r.name} -->`, `## ${r.name}`, "", `Run ${date} (${seconds.toFixed(0)} s).`, ""];
  lines.push(
    "| metric | value | unit | ceiling (same run) | ratio | target | result |",
    "|---|---:|---|---:|---:|---|---|",
  );
  for (const row of r.rows) {
    const v = verdict(row);
    lines.push(
      `| ${row.metric} | ${fmt(row.value)} | ${row.unit} | ${fmt(row.ceiling)} | ${fmt(row.ratio)} | ${row.target ?? "—"} | ${v === null ? "—" : v ? "pass" : "**FAIL**"} |`,
    );
  }
  if (r.notes?.length) lines.push("", ...r.notes.map((n) => `- ${n}`));
  lines.push(`<!-- /bench:${r.name} -->`);
  return lines.join("\n");
}

function failedSection(name: string, date: string, err: unknown): string {
  const msg = String((err as Error)?.message ?? err).split("\n")[0];
  return [
    `<!-- bench:${name} -->`,
    `## ${name}`,
    "",
    `Run ${date}: **did not complete**: ${msg}`,
    `<!-- /bench:${name} -->`,
  ].join("\n");
}

/** Sections of the previous RESULTS.md by benchmark name. */
function previousSections(): Map<string, string> {
  const out = new Map<string, string>();
  if (!existsSync(RESULTS)) return out;
  const text = readFileSync(RESULTS, "utf8");
  for (const m of text.matchAll(/<!-- bench:([\w-]+) -->[\s\S]*?<!-- \/bench:\1 -->/g)) out.set(m[1]!, m[0]);
  return out;
}

function machine(date: string): string {
  const cpu = cpus();
  return [
    "# Benchmark results",
    "",
    "Written by `npm run bench` (bench/run.ts); each benchmark compares Apis with a ceiling measured in the same run.",
    "",
    `- Last written: ${date}`,
    `- Machine: ${cpu.length} cores (${cpu[0]?.model.trim() ?? "unknown CPU"}), ${(totalmem() / 2 ** 30).toFixed(1)} GiB memory, ${process.platform}/${process.arch}`,
    `- Bun ${Bun.version}`,
    `- Load average when the run began: ${loadavg()
      .map((x) => x.toFixed(2))
      .join(", ")} (other work on the machine makes numbers noisy; ratios are steadier than absolute figures)`,
  ].join("\n");
}

async function main(names: string[]) {
  const available = readdirSync(DIR)
    .filter((f) => f.endsWith(".bench.ts"))
    .map((f) => basename(f, ".bench.ts"))
    .sort();
  const unknown = names.filter((n) => !available.includes(n));
  if (unknown.length) {
    console.error(`unknown benchmark(s): ${unknown.join(", ")}; available: ${available.join(", ")}`);
    return 2;
  }
  const chosen = names.length ? names : available;
  const header = machine(new Date().toISOString());
  const sections = previousSections();
  let failed = false;
  for (const name of chosen) {
    const date = new Date().toISOString();
    const t0 = performance.now();
    console.log(`bench ${name} ...`);
    try {
      const mod = await import(join(DIR, `${name}.bench.ts`));
      const result: BenchResult = await mod.run();
      const text = section({ ...result, name }, date, (performance.now() - t0) / 1000);
      sections.set(name, text);
      console.log(
        text
          .split("\n")
          .filter((l) => !l.startsWith("<!--"))
          .join("\n") + "\n",
      );
      if (result.rows.some((r) => verdict(r) === false)) failed = true;
    } catch (err) {
      failed = true;
      console.error(`bench ${name} failed:`, err);
      sections.set(name, failedSection(name, date, err));
    }
  }
  const body = [...sections.keys()]
    .filter((k) => available.includes(k))
    .sort()
    .map((k) => sections.get(k)!);
  writeFileSync(RESULTS, [header, ...body].join("\n\n") + "\n");
  console.log(`wrote ${RESULTS}`);
  return failed ? 1 : 0;
}

process.exit(await main(process.argv.slice(2)));
