import type { z } from "zod";
import { invalidParameter } from "../../core/errors";
import { LANGUAGE_CODES } from "../../core/languages";
import type { Tx } from "../../db/connection";
import { assetsByGids } from "../assets/assets.api";
import {
  rowOf,
  schemaStamp,
  valueContextOf,
  LIST_TYPES,
  valueSchema,
  type FieldLike,
  type FieldType,
  definitionFields,
} from "../schema/schema.api";
import { projectOptions, type Project, type ProjectOptions } from "../projects/projects.api";
import type { RecordChecks, RecordRow } from "./records.table";

/**
 * Values of records: how a definition's fields are read (per request, cached), how a `fields`
 * input is validated and applied (with the report of errors and warnings), how values are shown
 * per language, and what the search index and validation filter keep of them.
 *
 * Storage (records.vals): `{"*": {<field gid>: value}, "<lang>": {<field gid>: value}}`. A value-
 * list field (textline/textlist with `values`) stores keys; it is shown as the label of the
 * language plus `<name>/key` holding the key, as the reference does.
 */

/** The slot of non-localized values in `vals`. */
export const SHARED = "*";

export type FieldInfo = {
  gid: string;
  name: string;
  type: FieldType;
  localized: boolean;
  required: boolean;
  options: Record<string, unknown>;
  initial: Record<string, unknown>;
  /** Value list: key → labels per language. */
  labels?: Map<string, Record<string, string>>;
  schema: () => z.ZodType;
};

export type DefInfo = {
  gid: string;
  fields: FieldInfo[];
  byName: Map<string, FieldInfo>;
  byGid: Map<string, FieldInfo>;
  titlefield: string | null;
  childdefinitions: string[];
};

/** Field types whose values are text: the search index keeps them (so do fields with a value list, by label). */
export const TEXT_TYPES = new Set(["text", "textline", "textlist", "barcode"]);

/**
 * Definitions read by earlier requests, per project, valid while the project's schema stamp holds.
 * The projects used last are kept (at most DEF_CACHE_PROJECTS; a deleted project's entry goes
 * with time, as does one of a project nobody asks for).
 */
const DEF_CACHE = new Map<string, { stamp: string; defs: Map<string, DefInfo> }>();
const DEF_CACHE_PROJECTS = 256;

/** A per-request view of the project's schema: languages, channels, orderings, definitions. */
export class SchemaView {
  readonly options: ProjectOptions;
  readonly languages: string[];
  private readonly defs = new Map<string, DefInfo>();
  /** Read on the first definition built through this view (most come from the process-wide cache). */
  private valueCtx?: Awaited<ReturnType<typeof valueContextOf>>;

  constructor(
    readonly tx: Tx,
    readonly project: Project,
  ) {
    this.options = projectOptions(project);
    this.languages = this.options.languages;
  }

  get projectGid() {
    return this.project.gid;
  }

  hasOrdering(key: unknown): key is string {
    return typeof key === "string" && Object.hasOwn(this.options.orderings, key);
  }
  hasChannel(key: unknown): key is string {
    return typeof key === "string" && Object.hasOwn(this.options.channels, key);
  }

  private stampCache?: string;

  /**
   * A fingerprint of the project's schema (row count and latest change of fields, classes and
   * definitions): definitions read through the view are cached per process until it changes.
   */
  private stamp(): string {
    return (this.stampCache ??= schemaStamp(this.tx, this.projectGid));
  }

  /**
   * The definition's fields when this view already holds them, without a promise: per-record loops
   * (`formsOf` over a page of 100) ask `known(g) ?? (await def(g))`, which saves an async call
   * and its hop for every record after the first of a definition.
   */
  known(gid: string): DefInfo | undefined {
    return this.defs.get(gid);
  }

  /** The definition's fields in order (empty for a definition that no longer exists). */
  async def(gid: string): Promise<DefInfo> {
    let d = this.defs.get(gid);
    if (d) return d;
    const stamp = this.stamp();
    let shared = DEF_CACHE.get(this.projectGid);
    // Moved to the end on every use, so the first entry is the one used longest ago.
    DEF_CACHE.delete(this.projectGid);
    if (!shared || shared.stamp !== stamp) shared = { stamp, defs: new Map() };
    DEF_CACHE.set(this.projectGid, shared);
    if (DEF_CACHE.size > DEF_CACHE_PROJECTS) DEF_CACHE.delete(DEF_CACHE.keys().next().value!);
    d = shared.defs.get(gid);
    if (d) {
      this.defs.set(gid, d);
      return d;
    }
    d = await this.build(gid);
    if (shared.defs.size < 1000) shared.defs.set(gid, d);
    this.defs.set(gid, d);
    return d;
  }

  private async build(gid: string): Promise<DefInfo> {
    let d: DefInfo;
    const row = await rowOf(this.tx, "definition", this.projectGid, gid);
    const spec = (row?.spec ?? {}) as { titlefield?: string | null; childdefinitions?: string[] };
    const fields: FieldInfo[] = [];
    if (row) {
      for (const { field } of await definitionFields(this.tx, this.projectGid, gid)) {
        const s = field.spec as {
          type: FieldType;
          options?: Record<string, unknown>;
          is_localized?: boolean;
          is_required?: boolean;
          initial?: Record<string, unknown>;
        };
        const options = s.options ?? {};
        const like: FieldLike = { gid: field.gid, name: field.name, type: s.type, options };
        // Built now, while this transaction can read nested classes (the info is cached beyond it).
        const schema = valueSchema(like, (this.valueCtx ??= await valueContextOf(this.tx, this.projectGid)));
        const values = options.values as { key: string; label?: Record<string, string> }[] | undefined;
        fields.push({
          gid: field.gid,
          name: field.name,
          type: s.type,
          localized: !!s.is_localized,
          required: !!s.is_required,
          options,
          initial: s.initial ?? {},
          labels: values?.length ? new Map(values.map((v) => [v.key, v.label ?? {}])) : undefined,
          schema: () => schema,
        });
      }
    }
    d = {
      gid,
      fields,
      byName: new Map(fields.map((f) => [f.name, f])),
      byGid: new Map(fields.map((f) => [f.gid, f])),
      titlefield: spec.titlefield ?? null,
      childdefinitions: spec.childdefinitions ?? [],
    };
    return d;
  }

  /**
   * The languages a read asks for: `language` and/or `languages` (their union), all project
   * languages when neither is given. A language outside the project is a 400.
   */
  languagesOf(input: { language?: unknown; languages?: unknown }): string[] {
    const asked: string[] = [];
    if (input.language !== undefined && input.language !== null) {
      if (typeof input.language !== "string") throw invalidParameter("language", { expected: "a language code" });
      asked.push(input.language);
    }
    if (input.languages !== undefined && input.languages !== null) {
      if (!Array.isArray(input.languages) || input.languages.some((l) => typeof l !== "string"))
        throw invalidParameter("languages", { expected: "an array of language codes" });
      asked.push(...(input.languages as string[]));
    }
    if (!asked.length) return this.languages;
    const bad = asked.filter((l) => !this.languages.includes(l));
    if (bad.length)
      throw invalidParameter(
        input.language !== undefined && bad.includes(input.language as string) ? "language" : "languages",
        { reason: `not a project language: ${bad.join(", ")}`, expected: this.languages },
      );
    return this.languages.filter((l) => asked.includes(l));
  }
}

/** A null-prototype object, for keys that come from names (`__proto__` is a valid field name). */
export const dict = <T = unknown>(): Record<string, T> => Object.create(null);

export const isEmpty = (v: unknown) =>
  v === null ||
  v === undefined ||
  v === "" ||
  (Array.isArray(v) && v.length === 0) ||
  (typeof v === "object" && !Array.isArray(v) && Object.keys(v as object).length === 0);

function emptyOf(f: FieldInfo): unknown {
  return LIST_TYPES.has(f.type) ? [] : null;
}

/** The stored value of a field in a language (the shared slot for non-localized fields). */
export function storedValue(vals: Record<string, Record<string, unknown>>, f: FieldInfo, lang: string): unknown {
  const slot = vals[f.localized ? lang : SHARED];
  return slot && Object.hasOwn(slot, f.gid) ? slot[f.gid] : undefined;
}

function labelOf(f: FieldInfo, key: string, lang: string): string {
  const l = f.labels?.get(key);
  return l && typeof l[lang] === "string" && l[lang] ? l[lang]! : key;
}

/**
 * Sets a member named by a field name on a plain object: `__proto__` (a valid field name) becomes
 * an own member instead of changing the prototype. Plain objects keep JSON.stringify on its fast path.
 */
export function put(o: Record<string, unknown>, k: string, v: unknown): void {
  if (k === "__proto__")
    Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
  else o[k] = v;
}

/** `fields[lang]` of a record's form: every field of the definition by name, empty ones too. */
export function fieldsForm(
  d: DefInfo,
  vals: Record<string, Record<string, unknown>>,
  lang: string,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of d.fields) {
    const v = storedValue(vals, f, lang);
    if (v === undefined || v === null) {
      put(out, f.name, emptyOf(f));
      if (f.labels) out[`${f.name}/key`] = emptyOf(f);
      continue;
    }
    if (f.labels) {
      put(out, f.name, Array.isArray(v) ? v.map((k) => labelOf(f, String(k), lang)) : labelOf(f, String(v), lang));
      out[`${f.name}/key`] = v;
    } else put(out, f.name, v);
  }
  return out;
}

/** Plain text of a value for titles and the search index. */
function textOf(f: FieldInfo, v: unknown, lang: string): string {
  if (v === null || v === undefined) return "";
  if (f.labels)
    return Array.isArray(v) ? v.map((k) => labelOf(f, String(k), lang)).join(" ") : labelOf(f, String(v), lang);
  if (Array.isArray(v)) return v.filter((x) => typeof x !== "object").join(" ");
  if (typeof v === "object") return "";
  return String(v);
}

/** The record's title per language: the value of its definition's title field. */
export function titleOf(d: DefInfo, vals: Record<string, Record<string, unknown>>, lang: string): string {
  const f = d.titlefield ? d.byGid.get(d.titlefield) : undefined;
  return f ? textOf(f, storedValue(vals, f, lang), lang) : "";
}

/** Whether a field's search text is the same in every language (its value is, and it has no labels). */
const sharedText = (f: FieldInfo) => !f.localized && !f.labels;

/**
 * What the search index keeps of a record in one of its documents: in a language, its title and
 * the text of the fields that differ by language (localized values, value-list labels); in the
 * shared document (`lang` SHARED), the text of every other field. A change of a value that is the
 * same in every language then rewrites one document, not one per language.
 */
export function searchTextOf(
  d: DefInfo,
  vals: Record<string, Record<string, unknown>>,
  lang: string,
): { title: string; body: string } {
  const shared = lang === SHARED;
  const parts: string[] = [];
  for (const f of d.fields) {
    if ((!TEXT_TYPES.has(f.type) && !f.labels) || sharedText(f) !== shared) continue;
    const t = textOf(f, storedValue(vals, f, lang), lang);
    if (t) parts.push(t);
  }
  return { title: shared ? "" : titleOf(d, vals, lang), body: parts.join("\n") };
}

/** The search documents of a record: one per language, and the shared one (searchTextOf). */
export const searchDocuments = (languages: readonly string[]): string[] => [...languages, SHARED];

/**
 * The languages in the order of their search slots. Append only: a stored search document's id
 * holds its slot (searchRowId), and migration 0017 numbered the documents by this list.
 */
const SLOTTED = [
  "da",
  "de",
  "de-at",
  "de-ch",
  "de-de",
  "de-lu",
  "el",
  "en",
  "en-gb",
  "en-ie",
  "en-us",
  "es",
  "es-es",
  "fi",
  "fr",
  "fr-be",
  "fr-ch",
  "fr-fr",
  "fr-lu",
  "is",
  "it",
  "it-ch",
  "it-it",
  "lb-lu",
  "nb",
  "nl",
  "nl-be",
  "nl-nl",
  "pl",
  "pt",
  "sv",
] as const;
const SLOTS = new Map<string, number>([[SHARED, 0], ...SLOTTED.map((l, i) => [l, i + 1] as const)]);
/** Bits of a search document's id that hold its slot: the record id is the document id shifted right by these. */
export const SEARCH_SLOT_BITS = 6;
for (const l of LANGUAGE_CODES)
  if (!SLOTS.has(l)) throw new Error(`language ${l} has no search slot: append it to SLOTTED`);
if (SLOTS.size > 2 ** SEARCH_SLOT_BITS) throw new Error("more search slots than SEARCH_SLOT_BITS hold");

/** The search slot of a document: 0 for the shared one, a language's place in SLOTTED plus one. */
export function searchSlot(language: string): number {
  const slot = SLOTS.get(language);
  if (slot === undefined) throw new Error(`no search slot for language ${JSON.stringify(language)}`);
  return slot;
}

/**
 * The id of a record's search document (record_search.id, and on SQLite the row id of its
 * records_fts row): the record id and the document's slot, so that a search reads both from the
 * index's row ids without looking anything up.
 */
export const searchRowId = (recordId: number, language: string): number =>
  recordId * 2 ** SEARCH_SLOT_BITS + searchSlot(language);

/** What `validation` search reads: invalid fields (any language), empty and untranslated fields per language. */
export function checksOf(
  d: DefInfo,
  vals: Record<string, Record<string, unknown>>,
  languages: string[],
  validate = false,
  previous?: RecordChecks,
): RecordChecks {
  const empty: Record<string, string[]> = {};
  const untranslated: Record<string, string[]> = {};
  for (const l of languages) {
    empty[l] = [];
    untranslated[l] = [];
  }
  let invalid: string[] = [];
  for (const f of d.fields) {
    if (!f.localized) {
      // One shared value: empty in every language or in none.
      if (isEmpty(storedValue(vals, f, ""))) for (const l of languages) empty[l]!.push(f.gid);
      continue;
    }
    let filled = 0;
    for (const l of languages) if (!isEmpty(storedValue(vals, f, l))) filled++;
    if (filled === languages.length) continue;
    const text = filled > 0 && TEXT_TYPES.has(f.type);
    for (const l of languages) {
      if (!isEmpty(storedValue(vals, f, l))) continue;
      empty[l]!.push(f.gid);
      if (text) untranslated[l]!.push(f.gid);
    }
  }
  if (validate) {
    for (const f of d.fields) {
      const slots = f.localized ? languages : [SHARED];
      for (const s of slots) {
        const v = vals[s]?.[f.gid];
        if (v !== undefined && !f.schema().safeParse(v).success) {
          invalid.push(f.gid);
          break;
        }
      }
    }
  } else invalid = (previous?.invalid ?? []).filter((g) => d.byGid.has(g));
  return { invalid, empty, untranslated };
}

/** Field types whose values name assets: `image` fields take images, `file` fields any file (docs/assets.md). */
const ASSET_TYPES: ReadonlyMap<string, "image" | "file"> = new Map([
  ["image", "image"],
  ["imagelist", "image"],
  ["file", "file"],
  ["filelist", "file"],
]);

/**
 * Why an asset-valued field's value cannot be stored, or undefined when it can: every gid must name
 * an asset of the project that is not deleted, not a folder, and for image fields an image.
 */
async function assetIssue(view: SchemaView, f: FieldInfo, value: unknown): Promise<string | undefined> {
  const want = ASSET_TYPES.get(f.type);
  if (!want || value === null || value === undefined) return undefined;
  const gids = (Array.isArray(value) ? value : [value]).filter((g): g is string => typeof g === "string");
  if (!gids.length) return undefined;
  const found = new Map((await assetsByGids(view.tx, view.projectGid, gids)).map((a) => [a.gid, a]));
  for (const g of gids) {
    const a = found.get(g);
    if (!a || a.status === "deleted") return `${f.name}: no asset ${JSON.stringify(g.slice(0, 40))} in the project`;
    if (a.type === "folder") return `${f.name}: ${g} is a folder, not a file`;
    if (want === "image" && a.type !== "image") return `${f.name}: ${g} is not an image`;
  }
  return undefined;
}

/**
 * The machine-readable rule of a refused value (report items' `rule`): the field's type, what the
 * check wanted (zod's issue members but its message, path and input) and the JSON type received.
 */
function ruleOf(issue: object, fieldType: string, value: unknown): Record<string, unknown> {
  const rule: Record<string, unknown> = { field_type: fieldType };
  for (const [k, v] of Object.entries(issue))
    if (k !== "message" && k !== "path" && k !== "input" && k !== "code" && typeof v !== "function") {
      if (typeof v === "bigint") rule[k] = Number(v);
      else if (v instanceof RegExp) rule[k] = v.source;
      else rule[k] = v;
    }
  rule.received = value === null ? "null" : Array.isArray(value) ? "array" : typeof value;
  return rule;
}

/** One entry of `report.validation`. */
export type ReportItem = {
  record: string;
  language: string | null;
  field: string;
  level: "error" | "warning";
  code: string;
  message: string;
  /** The check that failed, machine-readable (zod's issue members: expected, minimum, maximum, format...). */
  rule?: Record<string, unknown>;
};

/**
 * Applies a `fields` input (language → field name or gid → value) to a copy of `vals`. Invalid
 * values are refused field by field (reported as errors); valid ones are written; `is_required`
 * fields left empty in a written language are reported as warnings. Returns the new values, the
 * report and whether anything changed.
 */
export async function applyFields(
  view: SchemaView,
  d: DefInfo,
  recordGid: string,
  current: Record<string, Record<string, unknown>>,
  input: unknown,
): Promise<{ vals: Record<string, Record<string, unknown>>; report: ReportItem[]; changed: string[] }> {
  if (!input || typeof input !== "object" || Array.isArray(input))
    throw invalidParameter("fields", { expected: "an object of language codes to objects of field names to values" });
  const report: ReportItem[] = [];
  const err = (language: string | null, field: string, code: string, message: string, rule?: Record<string, unknown>) =>
    report.push({ record: recordGid, language, field, level: "error", code, message, ...(rule ? { rule } : {}) });
  const vals: Record<string, Record<string, unknown>> = dict();
  for (const [k, v] of Object.entries(current)) vals[k] = Object.assign(dict(), v);
  const shared = new Map<string, { value: unknown; language: string; bad?: boolean }>();
  const written: string[] = [];
  const touched = new Set<string>();
  for (const [lang, members] of Object.entries(input as Record<string, unknown>)) {
    if (!view.languages.includes(lang)) {
      err(lang, "", "language", `not a project language (${view.languages.join(", ")})`);
      continue;
    }
    if (!members || typeof members !== "object" || Array.isArray(members)) {
      err(lang, "", "type", "an object of field names to values");
      continue;
    }
    written.push(lang);
    for (const [key, raw] of Object.entries(members as Record<string, unknown>)) {
      const byKey = key.endsWith("/key");
      const name = byKey ? key.slice(0, -4) : key;
      const f = d.byName.get(name) ?? d.byGid.get(name);
      if (!f || (byKey && !f.labels)) {
        err(lang, key, "unknown_field", `the record's definition has no field ${JSON.stringify(key.slice(0, 100))}`);
        continue;
      }
      // An empty string clears the field like null (a barcode's "" is not a code, but it is empty).
      let value: unknown = raw === undefined || raw === "" ? null : raw;
      // A value-list field given by label (or key) without /key: find the key.
      if (f.labels && !byKey && value !== null) {
        const toKey = (x: unknown): unknown => {
          if (typeof x !== "string") return x;
          if (f.labels!.has(x)) return x;
          for (const [k, l] of f.labels!) if (l[lang] === x) return k;
          return x;
        };
        value = Array.isArray(value) ? value.map(toKey) : toKey(value);
      }
      const parsed = f.schema().safeParse(value);
      if (!parsed.success) {
        for (const i of parsed.error.issues.slice(0, 5))
          err(
            f.localized ? lang : lang,
            f.name,
            i.code,
            `${[f.name, ...i.path.map(String)].join(".")}: ${i.message}`,
            ruleOf(i, f.type, value),
          );
        if (!f.localized) shared.set(f.gid, { value: undefined, language: lang, bad: true });
        continue;
      }
      const clean = isEmpty(parsed.data) ? null : parsed.data;
      // Only asset-valued fields look anything up: the others skip the call and its await.
      const assetProblem = ASSET_TYPES.has(f.type) ? await assetIssue(view, f, clean) : undefined;
      if (assetProblem) {
        err(lang, f.name, "asset", assetProblem);
        if (!f.localized) shared.set(f.gid, { value: undefined, language: lang, bad: true });
        continue;
      }
      if (f.localized) {
        (vals[lang] ??= dict())[f.gid] = clean;
        touched.add(f.gid);
      } else {
        const prev = shared.get(f.gid);
        if (prev && !prev.bad && JSON.stringify(prev.value) !== JSON.stringify(clean)) {
          err(
            lang,
            f.name,
            "conflict",
            `${f.name} is not localized: every language must give the same value (${prev.language} differs)`,
          );
          shared.set(f.gid, { value: undefined, language: lang, bad: true });
        } else if (!prev) shared.set(f.gid, { value: clean, language: lang });
      }
    }
  }
  for (const [gid, s] of shared) {
    if (s.bad) continue;
    (vals[SHARED] ??= dict())[gid] = s.value;
    touched.add(gid);
  }
  for (const k in vals) {
    const slot = vals[k]!;
    for (const g in slot) if (slot[g] === null) delete slot[g];
  }
  for (const f of d.fields) {
    if (!f.required) continue;
    for (const lang of f.localized ? written : written.slice(0, 1)) {
      if (isEmpty(storedValue(vals, f, lang)))
        report.push({
          record: recordGid,
          language: f.localized ? lang : null,
          field: f.name,
          level: "warning",
          code: "is_required",
          message: `${f.name} is required`,
        });
    }
  }
  // Worked out when asked for (a new record's import does not ask).
  let changed: string[] | undefined;
  return {
    vals,
    report,
    get changed() {
      return (changed ??= [...touched].filter((g) => {
        const f = d.byGid.get(g)!;
        const slots = f.localized ? view.languages : [SHARED];
        return slots.some((s) => !sameJson(current[s]?.[g] ?? null, vals[s]?.[g] ?? null));
      }));
    },
  };
}

/** Whether two stored values are equal as JSON (primitives compared directly: most values are). */
function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object") return false;
  return JSON.stringify(a) === JSON.stringify(b);
}

/** Initial values of a new record: each field's `initial`, when not empty. */
export function initialVals(view: SchemaView, d: DefInfo): Record<string, Record<string, unknown>> {
  const vals: Record<string, Record<string, unknown>> = dict();
  for (const f of d.fields) {
    if (f.localized) {
      for (const l of view.languages)
        if (Object.hasOwn(f.initial, l) && !isEmpty(f.initial[l])) (vals[l] ??= dict())[f.gid] = f.initial[l];
    } else {
      const l = view.languages.find((x) => Object.hasOwn(f.initial, x) && !isEmpty(f.initial[x]));
      if (l) (vals[SHARED] ??= dict())[f.gid] = f.initial[l];
    }
  }
  return vals;
}

/** Values kept when a record changes definition: those of fields both definitions have (same localization). */
export function keepShared(
  from: DefInfo,
  to: DefInfo,
  vals: Record<string, Record<string, unknown>>,
): Record<string, Record<string, unknown>> {
  const out: Record<string, Record<string, unknown>> = dict();
  for (const [slot, values] of Object.entries(vals)) {
    for (const [g, v] of Object.entries(values)) {
      const f = to.byGid.get(g);
      if (!f || !from.byGid.has(g)) continue;
      if ((slot === SHARED) === f.localized) continue;
      (out[slot] ??= dict())[g] = v;
    }
  }
  return out;
}

export type { RecordRow };
