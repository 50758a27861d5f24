/**
 * The feature graph of src/features/, measured from the code: which feature imports which (every
 * import counts: static, `export ... from`, `import()`, `require()`, type-only ones too), and each
 * feature's front door (`<area>.api.ts`). `bun scripts/feature-graph.ts` writes it into
 * docs/architecture.md between the feature-graph markers (a mermaid block and a table);
 * `--check` exits 1 when the page is not current (test/architecture.test.ts checks it too).
 *
 * The source reading here is the one test/architecture.test.ts uses for all its rules.
 */
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

export const SRC = resolve(import.meta.dir, "../src");
export const DOC = resolve(import.meta.dir, "../docs/architecture.md");
export const START = "<!-- feature-graph:start (written by scripts/feature-graph.ts; do not edit) -->";
export const END = "<!-- feature-graph:end -->";

/** `onUse`: an `import()` or `require()`, loaded when that line runs, not with the importing module. */
export type Import = { spec: string; target?: string; typeOnly: boolean; names: string[]; onUse?: boolean };
export type SourceFile = { path: string; rel: string; text: string; code: string; imports: Import[] };

/**
 * The web console's browser app (src/features/console/ apart from its `console.*.ts` server files)
 * runs in browsers and speaks only the public interface: it is no part of the server's graph.
 */
export const isBrowserCode = (path: string) => {
  const r = relative(SRC, path).split("\\").join("/");
  return r.startsWith("features/console/") && !/^features\/console\/console\.[a-z]+\.ts$/.test(r);
};

function walk(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (isBrowserCode(p)) continue;
    if (statSync(p).isDirectory()) walk(p, out);
    else if (p.endsWith(".ts")) out.push(p);
  }
  return out;
}

/** The source without comments (strings are kept; a `//` inside a string such as a URL is left alone). */
export function stripComments(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[\s;{}(),])\/\/.*$/gm, "$1");
}

export function resolveSpec(from: string, spec: string): string | undefined {
  if (!spec.startsWith(".")) return undefined;
  const base = resolve(dirname(from), spec);
  for (const c of [base, `${base}.ts`, join(base, "index.ts")]) if (existsSync(c) && statSync(c).isFile()) return c;
  return undefined;
}

/** The imports of one file's code (comments stripped): static, re-exports, `import()` and `require()`. */
export function importsOf(path: string, code: string): Import[] {
  const imports: Import[] = [];
  const names = (clause: string | undefined) =>
    (clause ?? "")
      .replace(/^[^{]*\{|\}[^}]*$/g, "")
      .split(",")
      .map((n) => n.trim())
      .filter(Boolean);
  for (const m of code.matchAll(/^\s*(?:import|export)\s+(type\s+)?(?:([^'"`;]*?)\s+from\s+)?["']([^"']+)["']/gm))
    imports.push({
      spec: m[3]!,
      target: resolveSpec(path, m[3]!),
      typeOnly: !!m[1],
      names: m[2]?.includes("{") ? names(m[2]) : m[2] ? [m[2].trim()] : [],
    });
  for (const m of code.matchAll(/\b(?:import|require)\(\s*["']([^"']+)["']\s*\)/g))
    imports.push({ spec: m[1]!, target: resolveSpec(path, m[1]!), typeOnly: false, names: [], onUse: true });
  return imports;
}

/** Every server source file of src/ with its imports. */
export function sourceFiles(src = SRC): SourceFile[] {
  return walk(src).map((path) => {
    const text = readFileSync(path, "utf8");
    const code = stripComments(text);
    return { path, rel: relative(src, path).split("\\").join("/"), text, code, imports: importsOf(path, code) };
  });
}

/** The feature a file belongs to (`features/<name>/...`), or undefined (features/index.ts, other layers). */
export const featureOf = (relPath: string) =>
  relPath.startsWith("features/") && relPath.split("/").length > 2 ? relPath.split("/")[1]! : undefined;

/** The front door of a feature: what other features may import of it. */
export const frontDoorOf = (feature: string) => `features/${feature}/${feature}.api.ts`;

/** Feature → the features it imports, each with the files whose imports make the edge. */
export function featureGraph(files: SourceFile[], src = SRC): Map<string, Map<string, Set<string>>> {
  const graph = new Map<string, Map<string, Set<string>>>();
  for (const f of files) {
    const mine = featureOf(f.rel);
    if (!mine) continue;
    if (!graph.has(mine)) graph.set(mine, new Map());
    for (const i of f.imports) {
      if (!i.target) continue;
      const theirs = featureOf(relative(src, i.target).split("\\").join("/"));
      if (!theirs || theirs === mine) continue;
      const edges = graph.get(mine)!;
      if (!edges.has(theirs)) edges.set(theirs, new Set());
      edges.get(theirs)!.add(f.rel);
    }
  }
  return graph;
}

/** The strongly connected components (Tarjan) of a graph with more than one node: its circles. */
export function circles(edges: Map<string, Iterable<string>>): string[][] {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string) => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1 || [...(edges.get(v) ?? [])].includes(v)) out.push(scc.sort());
    }
  };
  for (const v of [...edges.keys()].sort()) if (!idx.has(v)) visit(v);
  return out;
}

/** The features in layers: each feature after every feature it imports (its depth: the longest path down). */
function depths(graph: Map<string, Map<string, Set<string>>>): Map<string, number> {
  const depth = new Map<string, number>();
  const of = (f: string, seen: Set<string>): number => {
    if (depth.has(f)) return depth.get(f)!;
    if (seen.has(f)) return 0; // a circle (the test reports it)
    seen.add(f);
    const d = Math.max(-1, ...[...(graph.get(f)?.keys() ?? [])].map((g) => of(g, seen))) + 1;
    depth.set(f, d);
    return d;
  };
  for (const f of graph.keys()) of(f, new Set());
  return depth;
}

/** The generated part of docs/architecture.md: the graph as mermaid, and a table of front doors and edges. */
export function renderFeatureGraph(files: SourceFile[] = sourceFiles()): string {
  const graph = featureGraph(files);
  const depth = depths(graph);
  const features = [...graph.keys()].sort((a, b) => depth.get(a)! - depth.get(b)! || a.localeCompare(b));
  const doors = new Map(
    features.map((f) => {
      const door = files.find((x) => x.rel === frontDoorOf(f));
      const exported = door
        ? [
            ...door.imports.flatMap((i) => i.names).map((n) => n.replace(/^type\s+/, "").replace(/^.*\s+as\s+/, "")),
            ...[...door.code.matchAll(/^export\s+(?:function|const|class|type)\s+(\w+)/gm)].map((m) => m[1]!),
          ].sort((x, y) => x.localeCompare(y))
        : [];
      return [f, door ? exported : undefined] as const;
    }),
  );
  const lines = [START, "", "```mermaid", "flowchart BT"];
  for (const f of features) {
    const to = [...graph.get(f)!.keys()].sort();
    if (to.length === 0) lines.push(`  ${f}`);
    for (const t of to) lines.push(`  ${f} --> ${t}`);
  }
  lines.push("```", "");
  lines.push("| layer | feature | imports | front door (what others may use) |", "|---|---|---|---|");
  for (const f of features) {
    const to = [...graph.get(f)!.keys()].sort().join(", ") || "–";
    const names = doors.get(f);
    const door = names ? `\`${f}.api.ts\`: ${names.join(", ")}` : "none (nobody imports it)";
    lines.push(`| ${depth.get(f)} | ${f} | ${to} | ${door} |`);
  }
  lines.push("", END);
  return lines.join("\n");
}

/** docs/architecture.md with the generated part replaced (the markers must be there). */
export function withFeatureGraph(doc: string, generated: string): string {
  const a = doc.indexOf(START);
  const b = doc.indexOf(END);
  if (a < 0 || b < a) throw new Error(`docs/architecture.md has no ${START} ... ${END} markers`);
  return doc.slice(0, a) + generated + doc.slice(b + END.length);
}

if (import.meta.main) {
  const doc = readFileSync(DOC, "utf8");
  const next = withFeatureGraph(doc, renderFeatureGraph());
  if (process.argv.includes("--check")) {
    if (next !== doc) {
      console.error("docs/architecture.md: the feature graph is not current; run `bun scripts/feature-graph.ts`");
      process.exit(1);
    }
    console.log("docs/architecture.md: the feature graph is current");
  } else if (next !== doc) {
    writeFileSync(DOC, next);
    console.log("docs/architecture.md: feature graph written");
  } else console.log("docs/architecture.md: the feature graph was current");
}
