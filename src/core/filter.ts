/*
 * Longer than ~600 lines on purpose: one small language in one place. Its sections (errors, domains,
 * the parsed form, operands, operators, SQL, paging) share the parsed form's types and are each short;
 * apart, every caller would import four files to run one search.
 */
import { sql, type SQL } from "drizzle-orm";
import { PgDialect } from "drizzle-orm/pg-core";
import { SQLiteSyncDialect } from "drizzle-orm/sqlite-core";
import type { Dialect } from "../db/dialect";

/**
 * The search filter language shared by assets, records and schema search, bulk selections and
 * saved queries: parse (validate) once, then turn into one parameterised SQL condition.
 *
 *   ["and" | "or", "", [filter, ...]]     ["not", "", filter]
 *   [field, operator]                     [field, operator, operand]
 *   [[field, op, value], ...]             our older form: a list of conditions that must all hold
 *
 * Pure: knows nothing of the app's tables. Each caller hands in a FilterDomain that says which
 * fields exist, what SQL they read and which type they have. See docs/filter.md.
 *
 * Two SQL targets from the one parser: SQLite (the default, what the server runs) and PostgreSQL
 * (`FilterSqlOptions.dialect`, the section "PostgreSQL" at the end; docs/postgres.md). A field's
 * `sql` is its SQLite expression, `pg` its PostgreSQL one where that differs (JSON values are
 * jsonb there); a custom operator's `buildPg` its PostgreSQL condition.
 */

// ---------------------------------------------------------------------------------------------
// Errors

/** A bad filter or paging member. `path` points into the request, e.g. `filter[2][1]`. */
export class FilterError extends Error {
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(message);
    this.name = "FilterError";
  }

  /** The request member at fault: `filter`, `page.size`, ... (the path up to its first `[`). */
  get param(): string {
    const i = this.path.indexOf("[");
    return i < 0 ? this.path : this.path.slice(0, i);
  }

  /** The first index in the path (the condition of a top-level list), for callers that report it. */
  get index(): number | undefined {
    const m = /^[^[]*\[(\d+)\]/.exec(this.path);
    return m ? Number(m[1]) : undefined;
  }

  /** What a caller puts in the error envelope's `info` (code 400). */
  info(): Record<string, unknown> {
    return { "Invalid parameter": this.param, path: this.path, reason: this.message };
  }
}

type Fail = (reason: string, sub?: string | number) => never;

// ---------------------------------------------------------------------------------------------
// Domains

/**
 * What a field holds; it decides the operators.
 * - text, number, boolean: a plain column or expression.
 * - time: seconds (or milliseconds, see `unit`) since 1970.
 * - json: a scalar taken out of JSON (e.g. `metadata.<key>`): text, number or boolean.
 * - localized: a JSON object of language → text; compared in the search language.
 * - list: a JSON array of scalars (`classes`, `channels`): `has`, `has_not`.
 * - object: a JSON object of keys (`metadata` as a whole): `has`, `has_not` a key, ...
 * - custom: only the operators in `custom` (e.g. `validation`).
 */
type ValueType = "text" | "number" | "boolean" | "time" | "json" | "localized" | "list" | "object" | "custom";

/** An operator a field implements itself (or an override of a generic one). */
export type CustomOperator = {
  /**
   * Checks the operand and returns its normal form; call `fail(reason)` to refuse it. Without
   * this the operator takes no operand (absent or null).
   */
  operand?: (value: unknown, fail: (reason: string) => never) => unknown;
  build: (operand: any, options: FilterSqlOptions) => SQL;
  /** The PostgreSQL condition (without it, the operator cannot compile for PostgreSQL). */
  buildPg?: (operand: any, options: FilterSqlOptions) => SQL;
};

export type FieldSpec = {
  type: ValueType;
  /** The SQL the field reads (unused for `custom`). Dynamic parts (JSON paths) as parameters. */
  sql?: SQL;
  /** Only these of the type's operators (default: all of them). */
  operators?: readonly string[];
  /** Operators of this field only, or replacing a generic one of the same name. */
  custom?: ReadonlyMap<string, CustomOperator>;
  /** For time fields: how the column counts (default seconds). */
  unit?: "s" | "ms";
  /**
   * The PostgreSQL expression, when it differs from `sql`: for json, localized, list and object
   * fields a jsonb value (`r.vals -> 'en' -> '<gid>'`), for boolean fields a boolean.
   */
  pg?: SQL;
};

/** Resolves a client's field name. Implementations look names up in Maps, never `obj[name]`. */
export interface FilterDomain {
  field(name: string): FieldSpec | undefined;
  /** For the unknown-field message. */
  names?(): string[];
}

/** A field family reached with a dotted name, `metadata.<key>`: gets the part after the dot. */
type DottedField = (key: string) => FieldSpec | undefined;

/**
 * A domain from a Map of fields and a Map of dotted prefixes. `metadata.a.b` asks the `metadata`
 * prefix for the key `a.b` (one key holding a dot, not a nested path).
 */
export function makeDomain(
  fields: Iterable<readonly [string, FieldSpec]>,
  dotted: Iterable<readonly [string, DottedField]> = [],
): FilterDomain {
  const byName = new Map(fields);
  const byPrefix = new Map(dotted);
  return {
    field(name) {
      const exact = byName.get(name);
      if (exact) return exact;
      const dot = name.indexOf(".");
      if (dot <= 0) return undefined;
      const family = byPrefix.get(name.slice(0, dot));
      return family ? family(name.slice(dot + 1)) : undefined;
    },
    names: () => [...byName.keys(), ...[...byPrefix.keys()].map((p) => `${p}.<key>`)],
  };
}

/**
 * The SQLite JSON path of one object key, `$."key"`, or undefined for a key SQLite cannot quote
 * (`"`, `\`, control characters) or longer than 100 characters. Bind it as a parameter.
 */
export function jsonKeyPath(key: string): string | undefined {
  if (key.length < 1 || key.length > 100 || /["\\\u0000-\u001f\u007f]/.test(key)) return undefined;
  return `$."${key}"`;
}

/** The checks of the `validation` property. */
export type ValidationCheck = "any" | "is_empty" | "not_translated";

/**
 * The `validation` property: operators `any`, `is_empty`, `not_translated`, each with an optional
 * field name as operand. `build` gives the SQL (it depends on how the caller keeps validation
 * results), `buildPg` PostgreSQL's when the caller has one (a domain made for one database may
 * give the same function for both); `fields`, when given, lists the field names allowed as operand.
 */
export function validationField(opts: {
  build: (check: ValidationCheck, field: string | undefined, options: FilterSqlOptions) => SQL;
  buildPg?: (check: ValidationCheck, field: string | undefined, options: FilterSqlOptions) => SQL;
  fields?: (name: string) => boolean;
}): FieldSpec {
  const operand = (value: unknown, fail: (reason: string) => never) => {
    if (value === undefined || value === null || value === "") return undefined;
    if (typeof value !== "string") fail("the operand is a field name, or nothing for any field");
    if (opts.fields && !opts.fields(value)) fail(`no field ${value} to validate here`);
    return value;
  };
  const custom = new Map<string, CustomOperator>();
  for (const check of ["any", "is_empty", "not_translated"] as const) {
    const buildPg = opts.buildPg;
    custom.set(check, {
      operand,
      build: (field, options) => opts.build(check, field, options),
      ...(buildPg ? { buildPg: (field: any, options: FilterSqlOptions) => buildPg(check, field, options) } : {}),
    });
  }
  return { type: "custom", custom };
}

// ---------------------------------------------------------------------------------------------
// Parsed form

type FilterLeaf = {
  kind: "leaf";
  field: string;
  op: string;
  operand: unknown;
  spec: FieldSpec;
};

export type FilterNode =
  | { kind: "and"; children: FilterNode[] }
  | { kind: "or"; children: FilterNode[] }
  | { kind: "not"; child: FilterNode }
  | FilterLeaf;

/** Bounds on what one filter may ask, so a request cannot make SQLite's parser or stack suffer. */
const FILTER_LIMITS = {
  /** Nesting of and/or/not. */
  depth: 16,
  /** Conditions and groups in one filter. */
  nodes: 500,
  /** Values of one `in` / `not_in`. */
  list: 1000,
  /** Characters of one text operand. */
  text: 10_000,
  /** Terms of one `q`. */
  terms: 32,
} as const;

type ParseOptions = {
  /** The request member the filter came in, for error paths (default `filter`). */
  root?: string;
};

/** The "matches everything" filter (what an absent or empty filter means). */
export const MATCH_ALL: FilterNode = Object.freeze({
  kind: "and",
  children: Object.freeze([]) as unknown as FilterNode[],
});

/**
 * Validates a filter from a client against a domain. Absent, null or `[]` is MATCH_ALL. Throws
 * FilterError naming the member at fault.
 */
export function parseFilter(input: unknown, domain: FilterDomain, opts: ParseOptions = {}): FilterNode {
  const root = opts.root ?? "filter";
  if (input === undefined || input === null) return MATCH_ALL;
  const state = { nodes: 0 };
  return parseNode(input, domain, root, 0, state);
}

const GROUPS = new Set(["and", "or", "not"]);

function parseNode(
  input: unknown,
  domain: FilterDomain,
  path: string,
  depth: number,
  state: { nodes: number },
): FilterNode {
  const fail: Fail = (reason, sub) => {
    throw new FilterError(sub === undefined ? path : `${path}[${sub}]`, reason);
  };
  if (!Array.isArray(input)) fail('a filter is a list: [field, operator, operand] or ["and"|"or"|"not", "", ...]');
  if (++state.nodes > FILTER_LIMITS.nodes) fail(`a filter holds at most ${FILTER_LIMITS.nodes} conditions and groups`);
  if (depth > FILTER_LIMITS.depth) fail(`filters nest at most ${FILTER_LIMITS.depth} deep`);
  const list = input as unknown[];
  if (list.length === 0) return MATCH_ALL;

  // Our older form: a list of conditions, all of which must hold.
  if (Array.isArray(list[0])) {
    return { kind: "and", children: list.map((c, i) => parseNode(c, domain, `${path}[${i}]`, depth + 1, state)) };
  }

  const [head, op] = list;
  if (typeof head !== "string") fail("the first member is a field name or and/or/not", 0);
  if (GROUPS.has(head) && (op === "" || op === null)) {
    if (list.length !== 3) fail(`${head} takes "" and ${head === "not" ? "one filter" : "a list of filters"}`);
    const operands = list[2];
    if (head === "not") return { kind: "not", child: parseNode(operands, domain, `${path}[2]`, depth + 1, state) };
    if (!Array.isArray(operands)) fail(`${head} takes a list of filters`, 2);
    const children = (operands as unknown[]).map((c, i) => parseNode(c, domain, `${path}[2][${i}]`, depth + 1, state));
    return { kind: head as "and" | "or", children };
  }
  return parseLeaf(list, domain, path, fail);
}

function parseLeaf(list: unknown[], domain: FilterDomain, _path: string, fail: Fail): FilterLeaf {
  if (list.length < 2 || list.length > 3) fail("a condition is [field, operator] or [field, operator, operand]");
  const field = list[0] as string;
  const spec = field.length <= 200 ? domain.field(field) : undefined;
  if (!spec) {
    const known = domain.names?.();
    fail(
      `unknown field ${JSON.stringify(field.slice(0, 200))}${known?.length ? `; fields: ${known.join(", ")}` : ""}`,
      0,
    );
  }
  if (typeof list[1] !== "string") fail("the operator is a string", 1);
  const op = (list[1] as string).toLowerCase();
  const raw = list[2];
  const operandFail = (reason: string): never => fail(reason, 2);

  const custom = spec.custom?.get(op);
  if (custom) {
    if (custom.operand) return { kind: "leaf", field, op, operand: custom.operand(raw, operandFail), spec };
    if (raw !== undefined && raw !== null) operandFail(`${op} takes no operand`);
    return { kind: "leaf", field, op, operand: undefined, spec };
  }
  const generic = OPERATORS.get(spec.type)?.get(op);
  if (!generic || (spec.operators && !spec.operators.includes(op))) {
    fail(
      `operator ${JSON.stringify(op.slice(0, 50))} does not apply to ${field}; operators: ${operatorsOf(spec).join(", ")}`,
      1,
    );
  }
  return { kind: "leaf", field, op, operand: generic.operand(raw, spec, operandFail, op), spec };
}

/** The operators a field accepts. */
export function operatorsOf(spec: FieldSpec): string[] {
  const generic = [...(OPERATORS.get(spec.type)?.keys() ?? [])].filter(
    (o) => !spec.operators || spec.operators.includes(o),
  );
  const own = [...(spec.custom?.keys() ?? [])];
  return [...new Set([...generic, ...own])];
}

/** Every field name a parsed filter mentions (e.g. to tell whether a client asked about `status`). */
export function fieldsOf(node: FilterNode, into = new Set<string>()): Set<string> {
  if (node.kind === "leaf") into.add(node.field);
  else if (node.kind === "not") fieldsOf(node.child, into);
  else for (const c of node.children) fieldsOf(c, into);
  return into;
}

// ---------------------------------------------------------------------------------------------
// Operands

type Scalar = string | number;

function textOperand(v: unknown, fail: (r: string) => never): string {
  if (typeof v === "number" && Number.isFinite(v)) return String(v);
  if (typeof v !== "string") return fail("the operand must be a string");
  if (v.length > FILTER_LIMITS.text) return fail(`at most ${FILTER_LIMITS.text} characters`);
  return v;
}

function numberOperand(v: unknown, fail: (r: string) => never): number {
  if (typeof v === "boolean") return v ? 1 : 0;
  if (typeof v !== "number") return fail("the operand must be a number");
  if (!Number.isFinite(v)) return fail("the operand must be a finite number");
  return v;
}

function booleanOperand(v: unknown, fail: (r: string) => never): number {
  if (v === true || v === 1) return 1;
  if (v === false || v === 0) return 0;
  return fail("the operand must be true or false");
}

/** Seconds since 1970 from a number of seconds or an ISO 8601 date. */
function timeOperand(v: unknown, fail: (r: string) => never): number {
  if (typeof v === "string") {
    const ms = v.length <= 40 ? Date.parse(v) : NaN;
    if (Number.isNaN(ms)) return fail(`not a date: ${JSON.stringify(v.slice(0, 40))}`);
    return ms / 1000;
  }
  if (typeof v !== "number" || !Number.isFinite(v))
    return fail("the operand must be seconds since 1970 or an ISO 8601 date");
  return v;
}

function jsonOperand(v: unknown, fail: (r: string) => never): Scalar {
  if (typeof v === "boolean") return v ? 1 : 0;
  if (typeof v === "number") return numberOperand(v, fail);
  if (typeof v === "string") return textOperand(v, fail);
  return fail("the operand must be a string, number or boolean");
}

/** The scalar checker of a type (for =, <, in, between, ...). */
function scalarOf(spec: FieldSpec): (v: unknown, fail: (r: string) => never) => Scalar {
  switch (spec.type) {
    case "number":
      return numberOperand;
    case "boolean":
      return booleanOperand;
    case "time":
      return timeOperand;
    case "json":
      return jsonOperand;
    default:
      return textOperand;
  }
}

function noOperand(v: unknown, _spec: FieldSpec, fail: (r: string) => never, op: string): undefined {
  if (v !== undefined && v !== null) fail(`${op} takes no operand`);
  return undefined;
}

/** `[n, "days"]`: an age, for `<` / `>` on time fields. */
type Age = { days: number };
const isAge = (v: unknown): v is Age =>
  typeof v === "object" && v !== null && !Array.isArray(v) && typeof (v as Age).days === "number";

/** The terms of a `q`: `+must`, `-mustnot`, plain (at least one of them when there is no `+`). */
type Terms = { required: string[]; excluded: string[]; optional: string[] };

/**
 * Splits search text into terms: words or `"quoted phrases"`, each optionally prefixed `+`
 * (required) or `-` (excluded). Terms without a letter or digit are dropped. At most
 * FILTER_LIMITS.terms terms; the rest is ignored.
 */
export function parseTerms(q: string): Terms {
  const out: Terms = { required: [], excluded: [], optional: [] };
  const re = /([+-]?)(?:"([^"]*)"|(\S+))/g;
  let n = 0;
  for (let m = re.exec(q); m && n < FILTER_LIMITS.terms; m = re.exec(q)) {
    const text = (m[2] ?? m[3] ?? "").replace(/[\u0000-\u001f\u007f]/g, " ").trim();
    if (!/[\p{L}\p{N}]/u.test(text)) continue;
    n++;
    (m[1] === "+" ? out.required : m[1] === "-" ? out.excluded : out.optional).push(text);
  }
  return out;
}

function termsOperand(v: unknown, fail: (r: string) => never): Terms {
  const text = textOperand(v, fail);
  const t = parseTerms(text);
  if (!t.required.length && !t.excluded.length && !t.optional.length) return fail("q needs at least one search term");
  return t;
}

// ---------------------------------------------------------------------------------------------
// Generic operators

/** Options of the SQL build: the search language (localized fields) and the clock (ages). */
export type FilterSqlOptions = {
  /** The language searched in: localized fields compare its text (else any language's). */
  language?: string;
  /** Now, in seconds since 1970 (default the clock). */
  now?: number;
  /**
   * The SQL to make: SQLite's (default) or PostgreSQL's. Searches pass the name of the dialect of
   * the database they run on (`dialectOf(tx).name`, src/db/query.ts).
   */
  dialect?: FilterDialect;
};

/**
 * Which database a filter compiles for: a dialect's name (src/db/dialect.ts). The filter language
 * spells each target itself (the sections "SQL" and "PostgreSQL" of this file) rather than through
 * the dialect's helpers: its SQLite text is pinned byte for byte by a fixture
 * (test/db/pg/filter.test.ts), and its PostgreSQL text reads jsonb by the operand's type, which no
 * general helper does.
 */
export type FilterDialect = Dialect["name"];

type Op = {
  operand: (v: unknown, spec: FieldSpec, fail: (r: string) => never, op: string) => unknown;
  build: (e: SQL, operand: any, spec: FieldSpec, options: FilterSqlOptions, op: string) => SQL;
};

const lowered = (s: string) => s.toLowerCase();
/** Length in characters as SQLite counts them (code points), not UTF-16 units. */
const cpLength = (s: string) => [...s].length;

/** Converts seconds to the column's unit. */
const inUnit = (seconds: number, spec: FieldSpec) => (spec.unit === "ms" ? seconds * 1000 : seconds);
const param = (v: Scalar, spec: FieldSpec) => (spec.type === "time" && typeof v === "number" ? inUnit(v, spec) : v);
const list = (values: Scalar[], spec: FieldSpec) =>
  sql.join(
    values.map((v) => sql`${param(v, spec)}`),
    sql`, `,
  );

function containsSql(e: SQL, needle: string): SQL {
  return sql`instr(lower(${e}), ${lowered(needle)}) > 0`;
}

function termsSql(e: SQL, t: Terms): SQL {
  const parts: SQL[] = [];
  for (const r of t.required) parts.push(containsSql(e, r));
  for (const x of t.excluded) parts.push(sql`coalesce(instr(lower(${e}), ${lowered(x)}), 0) = 0`);
  // Plain terms only rank when a + term is there; alone, at least one of them must match.
  if (!t.required.length && t.optional.length)
    parts.push(
      sql`(${sql.join(
        t.optional.map((o) => containsSql(e, o)),
        sql` OR `,
      )})`,
    );
  return sql.join(parts, sql` AND `);
}

function isSql(e: SQL, v: Scalar, spec: FieldSpec): SQL {
  if (typeof v === "string" && spec.type !== "number" && spec.type !== "time" && spec.type !== "boolean")
    return sql`lower(${e}) = ${lowered(v)}`;
  return sql`${e} = ${param(v, spec)}`;
}

const scalarOperand = (v: unknown, spec: FieldSpec, fail: (r: string) => never) => scalarOf(spec)(v, fail);
const nullableOperand = (v: unknown, spec: FieldSpec, fail: (r: string) => never) =>
  v === null ? null : scalarOf(spec)(v, fail);

function compareOperand(v: unknown, spec: FieldSpec, fail: (r: string) => never, op: string): Scalar | Age {
  if (Array.isArray(v) && spec.type === "time" && (op === "<" || op === ">")) {
    if (v.length !== 2 || v[1] !== "days" || typeof v[0] !== "number" || !Number.isFinite(v[0]) || v[0] < 0) {
      return fail(`${op} takes [number of days, "days"], seconds or a date`);
    }
    return { days: v[0] };
  }
  if (v === null || v === undefined) return fail(`${op} needs an operand`);
  return scalarOf(spec)(v, fail);
}

function compareSql(e: SQL, v: Scalar | Age, spec: FieldSpec, options: FilterSqlOptions, op: string): SQL {
  if (isAge(v)) {
    // Fewer than n days ago (<) is a time after now - n days; more than n days ago (>) before it.
    const edge = inUnit((options.now ?? Date.now() / 1000) - v.days * 86400, spec);
    return op === "<" ? sql`${e} > ${edge}` : sql`${e} < ${edge}`;
  }
  return typed(e, v, spec, sql`${e} ${sql.raw(op)} ${param(v, spec)}`);
}

/**
 * SQLite sorts every text above every number, so on JSON values (which carry their own type) an
 * ordered comparison only looks at values of the operand's type: 100 is never below "150".
 */
function typed(e: SQL, v: Scalar, spec: FieldSpec, condition: SQL): SQL {
  if (spec.type !== "json") return condition;
  return typeof v === "number"
    ? sql`typeof(${e}) IN ('integer', 'real') AND ${condition}`
    : sql`typeof(${e}) = 'text' AND ${condition}`;
}

function rangeOperand(v: unknown, spec: FieldSpec, fail: (r: string) => never): [Scalar, Scalar] {
  if (!Array.isArray(v) || v.length !== 2) return fail("between takes [from, until]");
  const check = scalarOf(spec);
  const range: [Scalar, Scalar] = [check(v[0], (r) => fail(`from: ${r}`)), check(v[1], (r) => fail(`until: ${r}`))];
  if (typeof range[0] !== typeof range[1]) return fail("from and until are both numbers or both text");
  return range;
}

function listOperand(v: unknown, spec: FieldSpec, fail: (r: string) => never, op: string): Scalar[] {
  if (!Array.isArray(v) || v.length === 0 || v.length > FILTER_LIMITS.list)
    return fail(`${op} takes a list of 1 to ${FILTER_LIMITS.list} values`);
  const check = scalarOf(spec);
  return v.map((x, i) => check(x, (r) => fail(`value ${i}: ${r}`)));
}

function existsOperand(v: unknown, _spec: FieldSpec, fail: (r: string) => never): boolean {
  if (v === undefined || v === null) return true;
  if (typeof v !== "boolean") return fail("exists takes true (default) or false");
  return v;
}

const textOnly = (v: unknown, _spec: FieldSpec, fail: (r: string) => never) => textOperand(v, fail);

const OP_DEFS: Record<string, Op> = {
  // Ours (docs/assets.md), kept as they were.
  "=": {
    operand: nullableOperand,
    build: (e, v, spec) => (v === null ? sql`${e} IS NULL` : sql`${e} = ${param(v, spec)}`),
  },
  "!=": { operand: nullableOperand, build: (e, v, spec) => sql`${e} IS NOT ${v === null ? null : param(v, spec)}` },
  "<": { operand: compareOperand, build: compareSql },
  "<=": { operand: compareOperand, build: compareSql },
  ">": { operand: compareOperand, build: compareSql },
  ">=": { operand: compareOperand, build: compareSql },
  between: {
    operand: rangeOperand,
    build: (e, [lo, hi], spec) => typed(e, lo, spec, sql`${e} BETWEEN ${param(lo, spec)} AND ${param(hi, spec)}`),
  },
  in: { operand: listOperand, build: (e, vs, spec) => sql`${e} IN (${list(vs, spec)})` },
  // The field appears twice; drizzle binds its own parameters (a JSON path) once per appearance.
  not_in: { operand: listOperand, build: (e, vs, spec) => sql`(${e} IS NULL OR ${e} NOT IN (${list(vs, spec)}))` },
  contains: { operand: textOnly, build: (e, v) => containsSql(e, v) },
  not_contains: { operand: textOnly, build: (e, v) => sql`coalesce(instr(lower(${e}), ${lowered(v)}), 0) = 0` },
  starts_with: {
    operand: textOnly,
    build: (e, v) => (v ? sql`substr(lower(${e}), 1, ${cpLength(lowered(v))}) = ${lowered(v)}` : sql`${e} IS NOT NULL`),
  },
  ends_with: {
    operand: textOnly,
    build: (e, v) => (v ? sql`substr(lower(${e}), ${-cpLength(lowered(v))}) = ${lowered(v)}` : sql`${e} IS NOT NULL`),
  },
  exists: { operand: existsOperand, build: (e, v) => (v ? sql`${e} IS NOT NULL` : sql`${e} IS NULL`) },
  // The reference's.
  is: { operand: scalarOperand, build: (e, v, spec) => isSql(e, v, spec) },
  q: { operand: (v, _s, fail) => termsOperand(v, fail), build: (e, t) => termsSql(e, t) },
  is_true: { operand: noOperand, build: (e) => sql`${e} = 1` },
  is_false: { operand: noOperand, build: (e) => sql`${e} = 0` },
};

/** `has` / `has_not` on a JSON array: one scalar member. */
const LIST_OPS: Record<string, Op> = {
  has: {
    operand: (v, _s, fail) => jsonOperand(v, fail),
    build: (e, v) => sql`EXISTS (SELECT 1 FROM json_each(${e}) AS je WHERE je.value = ${v})`,
  },
  has_not: {
    operand: (v, _s, fail) => jsonOperand(v, fail),
    build: (e, v) => sql`NOT EXISTS (SELECT 1 FROM json_each(${e}) AS je WHERE je.value = ${v})`,
  },
};

/** A key of a JSON object, as operand: checked and turned into its JSON path. */
function keyPath(v: unknown, fail: (r: string) => never): string {
  if (typeof v !== "string") return fail("the operand is a key");
  return jsonKeyPath(v) ?? fail('a key has 1 to 100 characters and no ", \\ or control characters');
}

function keyValue<T>(
  v: unknown,
  fail: (r: string) => never,
  value: (x: unknown, f: (r: string) => never) => T,
): { path: string; value: T } {
  if (!Array.isArray(v) || v.length !== 2) return fail("the operand is [key, value]");
  return { path: keyPath(v[0], (r) => fail(`key: ${r}`)), value: value(v[1], (r) => fail(`value: ${r}`)) };
}

/** On a JSON object (`metadata`): a key is there / not; a key's value is / matches; true / false. */
const OBJECT_OPS: Record<string, Op> = {
  has: { operand: (v, _s, fail) => keyPath(v, fail), build: (e, p) => sql`json_type(${e}, ${p}) IS NOT NULL` },
  has_not: { operand: (v, _s, fail) => keyPath(v, fail), build: (e, p) => sql`json_type(${e}, ${p}) IS NULL` },
  is: {
    operand: (v, _s, fail) => keyValue(v, fail, jsonOperand),
    build: (e, kv) => isSql(sql`json_extract(${e}, ${kv.path})`, kv.value, { type: "json" }),
  },
  q: {
    operand: (v, _s, fail) => keyValue(v, fail, termsOperand),
    build: (e, kv) => termsSql(sql`json_extract(${e}, ${kv.path})`, kv.value),
  },
  is_true: { operand: (v, _s, fail) => keyPath(v, fail), build: (e, p) => sql`json_type(${e}, ${p}) = 'true'` },
  is_false: { operand: (v, _s, fail) => keyPath(v, fail), build: (e, p) => sql`json_type(${e}, ${p}) = 'false'` },
};

const pick = (names: string[], from: Record<string, Op> = OP_DEFS) => new Map(names.map((n) => [n, from[n]!] as const));
const ORDERED = ["=", "!=", "<", "<=", ">", ">=", "between", "in", "not_in", "exists", "is"];
const TEXTUAL = ["contains", "not_contains", "starts_with", "ends_with", "q"];

/** The generic operators of each type. */
const OPERATORS: ReadonlyMap<ValueType, ReadonlyMap<string, Op>> = new Map<ValueType, ReadonlyMap<string, Op>>([
  ["text", pick([...ORDERED, ...TEXTUAL])],
  ["localized", pick([...ORDERED, ...TEXTUAL])],
  ["json", pick([...ORDERED, ...TEXTUAL, "is_true", "is_false"])],
  ["number", pick(ORDERED)],
  ["time", pick(ORDERED)],
  ["boolean", pick(["=", "!=", "is", "exists", "is_true", "is_false"])],
  ["list", pick(["has", "has_not"], LIST_OPS)],
  ["object", pick(["has", "has_not", "is", "q", "is_true", "is_false"], OBJECT_OPS)],
  ["custom", new Map()],
]);

// ---------------------------------------------------------------------------------------------
// SQL

const TRUE = sql`1`;
const FALSE = sql`0`;

/**
 * The parsed filter as one SQL condition, every value a bound parameter. Groups and conditions are
 * parenthesised; `not` treats a condition that cannot be decided (a NULL column) as false first,
 * so `not` is the exact complement. An empty `and` is true, an empty `or` false.
 */
export function filterToSql(node: FilterNode, options: FilterSqlOptions = {}): SQL {
  if (options.dialect === "postgres") return pgFilterToSql(node, options);
  switch (node.kind) {
    case "and":
    case "or":
      if (!node.children.length) return node.kind === "and" ? TRUE : FALSE;
      return sql`(${sql.join(
        node.children.map((c) => filterToSql(c, options)),
        node.kind === "and" ? sql` AND ` : sql` OR `,
      )})`;
    case "not":
      return sql`(NOT coalesce(${filterToSql(node.child, options)}, 0))`;
    case "leaf":
      return sql`(${leafSql(node, options)})`;
  }
}

function leafSql(leaf: FilterLeaf, options: FilterSqlOptions): SQL {
  const { spec, op, operand } = leaf;
  const custom = spec.custom?.get(op);
  if (custom) return custom.build(operand, options);
  const generic = OPERATORS.get(spec.type)!.get(op)!;
  if (!spec.sql) throw new Error(`filter field ${leaf.field} has no SQL`);
  if (spec.type !== "localized") return generic.build(spec.sql, operand, spec, options, op);
  if (options.language !== undefined) {
    const path = jsonKeyPath(options.language);
    if (!path || !/^[A-Za-z0-9_-]{1,35}$/.test(options.language))
      throw new FilterError("language", "not a language code");
    return generic.build(sql`json_extract(${spec.sql}, ${path})`, operand, spec, options, op);
  }
  // No language: any language's text may match.
  return sql`EXISTS (SELECT 1 FROM json_each(${spec.sql}) AS lang WHERE ${generic.build(sql`lang.value`, operand, spec, options, op)})`;
}

const dialect = new SQLiteSyncDialect();

/** SQL text and parameters of a fragment, for code that runs statements with bun:sqlite directly. */
export function sqlText(fragment: SQL): { sql: string; params: unknown[] } {
  const q = dialect.sqlToQuery(fragment);
  return { sql: q.sql, params: q.params };
}

// ---------------------------------------------------------------------------------------------
// Paging of searches (page.top / page.size)

type PageWindow = { top: number; size: number };
type PageDefaults = { size: number; max: number };

/**
 * The reference's defaults: `page.top` 0; `page.size` 10 for assets and records search, 10,000
 * for schema search. It names no maximum; ours clamps to `max`.
 */
export const SEARCH_PAGE = {
  assets: { size: 10, max: 1000 },
  records: { size: 10, max: 1000 },
  schema: { size: 10_000, max: 10_000 },
} as const satisfies Record<string, PageDefaults>;

/**
 * `page.top` / `page.size` of a search body: absent or null takes the default; a size above `max`
 * is lowered to `max`; anything but a whole number ≥ 0 is a FilterError on that member.
 */
export function pageWindow(body: unknown, defaults: PageDefaults): PageWindow {
  const read = (name: string, fallback: number): number => {
    const v =
      typeof body === "object" && body !== null && Object.hasOwn(body, name)
        ? (body as Record<string, unknown>)[name]
        : undefined;
    if (v === undefined || v === null) return fallback;
    if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0)
      throw new FilterError(name, "a whole number of 0 or more");
    return v;
  };
  return { top: read("page.top", 0), size: Math.min(read("page.size", defaults.size), defaults.max) };
}

// ---------------------------------------------------------------------------------------------
// PostgreSQL
//
// The same parsed filter, the same answers as on SQLite (test/db/pg/filter.test.ts runs both over
// one table). What SQLite does implicitly is spelled out:
// - JSON values are jsonb, not SQL scalars: a value is read as a number (numbers, and booleans as
//   1/0, as json_extract gives them), as a string (strings only), or as text (what SQLite's lower()
//   and instr() make of any value), depending on the operand; JSON null is SQL NULL.
// - Conditions are booleans (SQLite's are integers): `not` coalesces to false.
// - Text is ordered by code point (COLLATE "C", SQLite's BINARY), whatever the database's locale.
// - lower() folds the case of every letter (SQLite's only of A-Z): a known difference for
//   non-ASCII text (docs/postgres.md).

/** A value the PostgreSQL operators compare: its SQL read as each kind. */
type PgValue = {
  /** NULL when there is no value (SQL NULL, or JSON null). */
  any: SQL;
  /** As a number (NULL when it is none). */
  num: SQL;
  /** As a string (NULL when it is none). */
  str: SQL;
  /** As text, for case-insensitive and substring comparisons. */
  text: SQL;
};

/** A plain column or expression (text, number, time). */
const pgPlain = (e: SQL): PgValue => ({ any: e, num: e, str: e, text: e });

/** A boolean column: compared as 1/0, as on SQLite. */
const pgBoolean = (e: SQL): PgValue => ({
  any: e,
  num: sql`(${e})::int`,
  str: sql`NULL::text`,
  text: sql`((${e})::int)::text`,
});

/** A jsonb value. */
function pgJson(x: SQL): PgValue {
  return {
    any: sql`(CASE WHEN jsonb_typeof(${x}) <> 'null' THEN ${x} END)`,
    num: sql`(CASE jsonb_typeof(${x}) WHEN 'number' THEN (${x} #>> '{}')::numeric WHEN 'boolean' THEN (CASE WHEN ${x} = 'true'::jsonb THEN 1 ELSE 0 END) END)`,
    str: sql`(CASE WHEN jsonb_typeof(${x}) = 'string' THEN ${x} #>> '{}' END)`,
    text: sql`(CASE jsonb_typeof(${x}) WHEN 'string' THEN ${x} #>> '{}' WHEN 'number' THEN ${x} #>> '{}' WHEN 'boolean' THEN (CASE WHEN ${x} = 'true'::jsonb THEN '1' ELSE '0' END) WHEN 'null' THEN NULL ELSE ${x}::text END)`,
  };
}

/** A bound value with its type spelled out (PostgreSQL cannot always infer it). */
function pgParam(v: Scalar): SQL {
  if (typeof v === "string") return sql`${v}::text`;
  return Number.isSafeInteger(v) ? sql`${v}::bigint` : sql`${v}::float8`;
}
const pgParamOf = (v: Scalar, spec: FieldSpec) => pgParam(param(v, spec));
/** The reading of a value that compares with `v`: its number for a number, else its string. */
const pgSide = (x: PgValue, v: Scalar) => (typeof v === "number" ? x.num : x.str);
const pgC = (v: Scalar) => (typeof v === "string" ? sql` COLLATE "C"` : sql``);

function pgContains(x: PgValue, needle: string): SQL {
  return sql`strpos(lower(${x.text}), ${lowered(needle)}::text) > 0`;
}
function pgNotContains(x: PgValue, needle: string): SQL {
  return sql`coalesce(strpos(lower(${x.text}), ${lowered(needle)}::text), 0) = 0`;
}
function pgTerms(x: PgValue, t: Terms): SQL {
  const parts: SQL[] = [];
  for (const r of t.required) parts.push(pgContains(x, r));
  for (const e of t.excluded) parts.push(pgNotContains(x, e));
  if (!t.required.length && t.optional.length)
    parts.push(
      sql`(${sql.join(
        t.optional.map((o) => pgContains(x, o)),
        sql` OR `,
      )})`,
    );
  return sql.join(parts, sql` AND `);
}

function pgIs(x: PgValue, v: Scalar, spec: FieldSpec): SQL {
  if (typeof v === "string" && spec.type !== "number" && spec.type !== "time" && spec.type !== "boolean")
    return sql`lower(${x.text}) = ${lowered(v)}::text`;
  return sql`${pgSide(x, v)} = ${pgParamOf(v, spec)}`;
}

/** `x` is one of `vs` (NULL when undecided, as SQLite's IN). */
function pgIn(x: PgValue, vs: Scalar[], spec: FieldSpec): SQL {
  const strings = vs.filter((v) => typeof v === "string");
  const numbers = vs.filter((v) => typeof v === "number");
  const parts: SQL[] = [];
  const of = (side: SQL, values: Scalar[]) =>
    sql`${side} IN (${sql.join(
      values.map((v) => pgParamOf(v, spec)),
      sql`, `,
    )})`;
  if (strings.length) parts.push(of(x.str, strings));
  if (numbers.length) parts.push(of(x.num, numbers));
  return parts.length === 1 ? parts[0]! : sql`(${sql.join(parts, sql` OR `)})`;
}

function pgScalarOp(x: PgValue, op: string, v: any, spec: FieldSpec, options: FilterSqlOptions): SQL {
  switch (op) {
    case "=":
      return v === null ? sql`${x.any} IS NULL` : sql`${pgSide(x, v)} = ${pgParamOf(v, spec)}`;
    case "!=":
      return v === null ? sql`${x.any} IS NOT NULL` : sql`${pgSide(x, v)} IS DISTINCT FROM ${pgParamOf(v, spec)}`;
    case "<":
    case "<=":
    case ">":
    case ">=":
      if (isAge(v)) {
        const edge = inUnit((options.now ?? Date.now() / 1000) - v.days * 86400, spec);
        return op === "<" ? sql`${x.num} > ${pgParam(edge)}` : sql`${x.num} < ${pgParam(edge)}`;
      }
      return sql`${pgSide(x, v)}${pgC(v)} ${sql.raw(op)} ${pgParamOf(v, spec)}`;
    case "between": {
      const [lo, hi] = v as [Scalar, Scalar];
      return sql`${pgSide(x, lo)}${pgC(lo)} BETWEEN ${pgParamOf(lo, spec)} AND ${pgParamOf(hi, spec)}`;
    }
    case "in":
      return pgIn(x, v, spec);
    case "not_in":
      return sql`(${x.any} IS NULL OR NOT coalesce(${pgIn(x, v, spec)}, false))`;
    case "contains":
      return pgContains(x, v);
    case "not_contains":
      return pgNotContains(x, v);
    case "starts_with":
      return v ? sql`left(lower(${x.text}), ${cpLength(lowered(v))}) = ${lowered(v)}::text` : sql`${x.any} IS NOT NULL`;
    case "ends_with":
      return v
        ? sql`right(lower(${x.text}), ${cpLength(lowered(v))}) = ${lowered(v)}::text`
        : sql`${x.any} IS NOT NULL`;
    case "exists":
      return v ? sql`${x.any} IS NOT NULL` : sql`${x.any} IS NULL`;
    case "is":
      return pgIs(x, v, spec);
    case "q":
      return pgTerms(x, v);
    case "is_true":
      return sql`${x.num} = 1`;
    case "is_false":
      return sql`${x.num} = 0`;
  }
  throw new Error(`filter operator ${op} has no PostgreSQL form`);
}

/** The members of a jsonb list (a scalar is a list of itself, as json_each has it). */
const pgMembers = (e: SQL) =>
  sql`jsonb_array_elements(CASE WHEN jsonb_typeof(${e}) = 'array' THEN ${e} ELSE jsonb_build_array(${e}) END) AS je(value)`;
/** The key of a JSON path `$."key"` (keys hold no `"` or `\`: jsonKeyPath). */
const pgKey = (path: string) => sql`${path.slice(3, -1)}::text`;

function pgLeafSql(leaf: FilterLeaf, options: FilterSqlOptions): SQL {
  const { spec, op } = leaf;
  const operand = leaf.operand as any;
  const custom = spec.custom?.get(op);
  if (custom) {
    if (!custom.buildPg) throw new Error(`filter field ${leaf.field}: ${op} has no PostgreSQL form`);
    return custom.buildPg(operand, options);
  }
  const e = spec.pg ?? spec.sql;
  if (!e) throw new Error(`filter field ${leaf.field} has no SQL`);
  switch (spec.type) {
    case "json":
      return pgScalarOp(pgJson(e), op, operand, spec, options);
    case "boolean":
      return pgScalarOp(pgBoolean(e), op, operand, spec, options);
    case "localized":
      if (options.language !== undefined) {
        if (!jsonKeyPath(options.language) || !/^[A-Za-z0-9_-]{1,35}$/.test(options.language))
          throw new FilterError("language", "not a language code");
        return pgScalarOp(pgJson(sql`(${e} -> ${options.language}::text)`), op, operand, spec, options);
      }
      return sql`EXISTS (SELECT 1 FROM jsonb_each(CASE WHEN jsonb_typeof(${e}) = 'object' THEN ${e} END) AS lang WHERE ${pgScalarOp(pgJson(sql`lang.value`), op, operand, spec, options)})`;
    case "list": {
      const member = sql`${pgSide(pgJson(sql`je.value`), operand)} = ${pgParam(operand)}`;
      return op === "has"
        ? sql`EXISTS (SELECT 1 FROM ${pgMembers(e)} WHERE ${member})`
        : sql`NOT EXISTS (SELECT 1 FROM ${pgMembers(e)} WHERE ${member})`;
    }
    case "object":
      switch (op) {
        case "has":
          return sql`(${e} -> ${pgKey(operand)}) IS NOT NULL`;
        case "has_not":
          return sql`(${e} -> ${pgKey(operand)}) IS NULL`;
        case "is":
          return pgIs(pgJson(sql`(${e} -> ${pgKey(operand.path)})`), operand.value, { type: "json" });
        case "q":
          return pgTerms(pgJson(sql`(${e} -> ${pgKey(operand.path)})`), operand.value);
        case "is_true":
          return sql`(${e} -> ${pgKey(operand)}) = 'true'::jsonb`;
        case "is_false":
          return sql`(${e} -> ${pgKey(operand)}) = 'false'::jsonb`;
      }
      throw new Error(`filter operator ${op} has no PostgreSQL form`);
    default:
      return pgScalarOp(pgPlain(e), op, operand, spec, options);
  }
}

function pgFilterToSql(node: FilterNode, options: FilterSqlOptions): SQL {
  switch (node.kind) {
    case "and":
    case "or":
      if (!node.children.length) return node.kind === "and" ? sql`true` : sql`false`;
      return sql`(${sql.join(
        node.children.map((c) => pgFilterToSql(c, options)),
        node.kind === "and" ? sql` AND ` : sql` OR `,
      )})`;
    case "not":
      return sql`(NOT coalesce(${pgFilterToSql(node.child, options)}, false))`;
    case "leaf":
      return sql`(${pgLeafSql(node, options)})`;
  }
}

const pgDialect = new PgDialect();

/** SQL text (`$1`, `$2`, ...) and parameters of a PostgreSQL fragment, for Bun's `SQL.unsafe`. */
export function pgSqlText(fragment: SQL): { sql: string; params: unknown[] } {
  const q = pgDialect.sqlToQuery(fragment);
  return { sql: q.sql, params: q.params };
}
