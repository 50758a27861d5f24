/*
 * Longer than ~600 lines on purpose: one schema change followed by the records (usage, conversions,
 * localization moves, lost fields, the follow job and the search index's merge setting) works on one
 * Follow object; the steps are marked below.
 */
import type { Tx } from "../../db/connection";
import { mutate, type ChangeLog } from "../../db/mutate";
import { sessionOf } from "../../db/query";
import type {
  LanguageHook,
  SchemaChange,
  SchemaCommittedHook,
  SchemaUsageHook,
  SettingRemovedHook,
} from "../../platform/context";
import type { JobKind } from "../../platform/jobs/runner";
import { getProject, type Project, ALL_CHANNEL } from "../projects/projects.api";
import { schemaStamp, valueContextOf, LIST_TYPES, valueSchema, type FieldType } from "../schema/schema.api";
import { withWritesAside } from "./records.fts-merges";
import { recOf, Touch, writeSearch, type Vals } from "./records.service";
import {
  ANY_RECORD,
  CHECKS_UPDATE,
  COUNT_OF_DEFINITIONS,
  COUNT_SLICE,
  DEFINITIONS_IN_USE,
  FOLLOWED,
  FOLLOWED_CHECKS,
  FOLLOWED_SHARED,
  HOLDERS_IN,
  holdsParams,
  IN_ORDERING,
  LANGUAGE_SEARCH_ROWS_DELETE,
  languageHolders,
  NEXT_IN_DEFINITION,
  NEXT_IN_DEFINITION_SHARED,
  NEXT_OTHERS,
  NEXT_OTHERS_SHARED,
  ORDERING_DELETE,
  RECORD_COUNT,
  REINDEX_PAGE,
  SEARCH_ROWS_GONE,
  TOUCHED,
  WITH_CHANNEL,
  WITH_DEFINITION,
  WITH_LANGUAGE,
  WITH_VALUE,
  WITHOUT_CHANNEL,
  withoutLanguage,
} from "./records.follow.queries";
import {
  checksOf,
  dict,
  isEmpty,
  SchemaView,
  searchDocuments,
  SHARED,
  TEXT_TYPES as SEARCHED_TYPES,
  type DefInfo,
  type FieldInfo,
} from "./values.service";
import type { RecordChecks } from "./records.table";

/**
 * How records follow the schema and the project settings (the records descriptor's hooks and the
 * jobs they start).
 *
 * - Usage: a definition given to records, or a field records hold values of, cannot be deleted
 *   (the schema's delete answers 422 naming the records).
 * - Commit hook: when a committed field changes type, a value is converted where a conversion
 *   makes sense and still valid (text ↔ number, a scalar ↔ a one-item list, ...), else dropped;
 *   when it changes localization, the values move between the shared slot and the languages; fields
 *   a definition loses (directly or through a class) lose their values in that definition's
 *   records. Every touched record gets its checks (the `validation` search) and search text
 *   rewritten and a `records` sync item. Up to FOLLOW_INLINE records follow inside the commit's
 *   transaction; more are handled by a `records_follow_schema` job. The dry run reports how many
 *   records would lose values (and up to 100 of them).
 * - Languages: a language added to the project gets its checks and search rows by a
 *   `records_reindex` job; a language removed with its values (`remove_values: true`) loses its
 *   values in every record at once (checks and search rows follow by the same job). Without that
 *   confirmation the values stay, hidden, and come back with the language.
 * - Settings: a deleted channel leaves every record's `channels`, a deleted ordering takes the
 *   records' positions in it along.
 */

export const FOLLOW_INLINE = 500;
const LIMIT = 100;
/** A LIMIT that keeps every row (SQLite's `LIMIT -1` is its own; PostgreSQL refuses a negative one). */
const ALL = Number.MAX_SAFE_INTEGER;

/** `hooks.schemaUsage`: the records (up to 100) having a definition, or holding a value of a field. */
export const recordsSchemaUsage: SchemaUsageHook = async (_ctx, tx, projectGid, kind, gid) => {
  if (kind === "definition") {
    const found = await sessionOf(tx).query<{ gid: string }>(WITH_DEFINITION).all(projectGid, gid, LIMIT);
    return { records: found.map((r) => r.gid) };
  }
  if (kind === "field") return { records: await recordsWithValue(tx, projectGid, gid, LIMIT) };
  const none: Record<string, string[]> = {};
  return none;
};

/** Records holding a value (in any slot) of a field, in id order (up to `limit`). */
async function recordsWithValue(tx: Tx, projectGid: string, field: string, limit = ALL): Promise<string[]> {
  const found = await sessionOf(tx)
    .query<{ gid: string }>(WITH_VALUE(tx))
    .all(projectGid, ...holdsParams(field), limit);
  return found.map((r) => r.gid);
}

type FieldForm = { type: FieldType; is_localized: boolean; name: string; options?: Record<string, unknown> };
type Follow = {
  field?: { gid: string; from: FieldForm; to: FieldForm };
  dropped: Record<string, string[]>;
  definitions: string[];
};

const TEXTUAL = new Set(["text", "textline", "barcode", "date"]);

/** A value converted to another field type, or undefined when there is no sensible conversion. */
function convertValue(v: unknown, from: string, to: string): unknown {
  if (from === to || v === null || v === undefined) return v;
  const fromList = LIST_TYPES.has(from as FieldType);
  const toList = LIST_TYPES.has(to as FieldType);
  if (fromList && !toList)
    return Array.isArray(v) && v.length === 1
      ? convertValue(v[0], from.replace(/list$/, ""), to)
      : to === "text" && Array.isArray(v)
        ? v.join("\n")
        : undefined;
  if (!fromList && toList) {
    const item = convertValue(v, from, to.replace(/list$/, "") || to);
    return item === undefined ? undefined : [item];
  }
  if (fromList && toList)
    return Array.isArray(v)
      ? v.map((x) => convertValue(x, from.replace(/list$/, ""), to.replace(/list$/, "")))
      : undefined;
  if (TEXTUAL.has(to)) return typeof v === "object" ? undefined : String(v);
  if (to === "number" || to === "decimal") {
    const n = typeof v === "string" ? Number(v.trim().replace(",", ".")) : typeof v === "boolean" ? Number(v) : v;
    return typeof n === "number" && Number.isFinite(n)
      ? to === "number"
        ? Number.isInteger(n)
          ? n
          : undefined
        : n
      : undefined;
  }
  if (to === "boolean")
    return v === true || v === "true" || v === 1 ? true : v === false || v === "false" || v === 0 ? false : undefined;
  if (
    ["image", "file", "record", "fieldpicker"].includes(to) &&
    ["image", "file", "record", "fieldpicker"].includes(from)
  )
    return undefined;
  return undefined;
}

const schemas = new WeakMap<Follow, ReturnType<typeof valueSchema>>();

/** One record's values after a schema change; `lost` lists what could not be kept. */
async function followVals(
  view: SchemaView,
  rec: Pick<FollowRec, "definition" | "vals">,
  f: Follow,
): Promise<{ vals: Vals; lost: boolean }> {
  const vals: Vals = dict();
  for (const [k, v] of Object.entries(rec.vals)) vals[k] = Object.assign(dict(), v);
  let lost = false;
  const drop = new Set(f.dropped[rec.definition] ?? []);
  for (const g of drop)
    for (const slot of Object.values(vals)) {
      if (!Object.hasOwn(slot, g)) continue;
      delete slot[g];
      lost = true;
    }
  const fc = f.field;
  if (fc && (fc.from.type !== fc.to.type || fc.from.is_localized !== fc.to.is_localized)) {
    // Checked against the field as committed now (the dry run runs before the commit).
    let schema = schemas.get(f);
    if (!schema)
      schemas.set(
        f,
        (schema = valueSchema(
          { gid: fc.gid, name: fc.to.name, type: fc.to.type, options: fc.to.options ?? {} },
          await valueContextOf(view.tx, view.projectGid),
        )),
      );
    const old: Record<string, unknown> = dict();
    for (const [slot, values] of Object.entries(vals)) {
      if (!Object.hasOwn(values, fc.gid)) continue;
      old[slot] = values[fc.gid];
      delete values[fc.gid];
    }
    const put = (slot: string, v: unknown) => {
      if (v === undefined || v === null) return;
      const c = convertValue(v, fc.from.type, fc.to.type);
      if (c === undefined || !schema.safeParse(c).success) return void (lost = true);
      (vals[slot] ??= dict())[fc.gid] = c;
    };
    if (fc.to.is_localized && !fc.from.is_localized) for (const l of view.languages) put(l, old[SHARED]);
    else if (!fc.to.is_localized && fc.from.is_localized) {
      const first = view.languages.find((l) => old[l] !== undefined && old[l] !== null);
      if (
        view.languages.filter(
          (l) => old[l] !== undefined && old[l] !== null && JSON.stringify(old[l]) !== JSON.stringify(old[first!]),
        ).length
      )
        lost = true;
      if (first) put(SHARED, old[first]);
    } else for (const [slot, v] of Object.entries(old)) put(slot, v);
  }
  return { vals, lost };
}

/**
 * What following needs of a record row. `shared`: `vals` holds the shared slot of the record's
 * values alone (read so when the commit touches nothing else: `sharedScope`).
 */
type FollowRec = {
  id: number;
  gid: string;
  definition: string;
  vals: Vals;
  checks?: string | RecordChecks;
  shared?: boolean;
};
type FollowRow = {
  id: number;
  gid: string;
  definition: string;
  vals: string | Vals | null;
  checks: string | RecordChecks;
};
/** An object column of a raw row: SQLite gives its JSON text, PostgreSQL the parsed object. */
const objectOf = <T>(v: string | T): T => (typeof v === "string" ? (JSON.parse(v) as T) : v);
const followRec = (r: FollowRow, shared = false): FollowRec => {
  let vals: Vals = dict();
  if (!shared) vals = r.vals === null ? vals : objectOf(r.vals);
  else if (r.vals !== null) vals[SHARED] = objectOf(r.vals as string | Vals[string]);
  return { id: r.id, gid: r.gid, definition: r.definition, vals, checks: r.checks, shared };
};

const NESTING = new Set(["class", "classlist"]);

/**
 * A record's checks after a field commit: empty and untranslated are computed afresh; validity
 * only of the fields whose checks the commit can change (the field itself and the class and
 * classlist fields, whose nested values may hold it), the others keep their stored verdict (their
 * fields did not change). The same answer as validating every field, for less work. Other commits
 * (classes, definitions) validate every field.
 */
async function checksAfter(view: SchemaView, r: FollowRec, vals: Vals, f: Follow): Promise<RecordChecks> {
  const d = view.known(r.definition) ?? (await view.def(r.definition));
  if (!f.field || r.checks === undefined) return checksOf(d, vals, view.languages, true);
  const stored = objectOf<RecordChecks>(r.checks);
  const c = checksOf(d, vals, view.languages, false, stored);
  c.invalid = invalidAfter(view, d, vals, f, c.invalid);
  return c;
}

/**
 * The invalid fields after a field commit: the field itself and the class and classlist fields
 * validated again, the others as stored (`carried`).
 */
function invalidAfter(view: SchemaView, d: DefInfo, vals: Vals, f: Follow, carried: readonly string[]): string[] {
  const kept = new Set(carried);
  const invalidNow = (fi: FieldInfo) =>
    (fi.localized ? view.languages : [SHARED]).some((slot) => {
      const v = vals[slot]?.[fi.gid];
      return v !== undefined && !fi.schema().safeParse(v).success;
    });
  return d.fields
    .filter((fi) => (fi.gid === f.field!.gid || NESTING.has(fi.type) ? invalidNow(fi) : kept.has(fi.gid)))
    .map((fi) => fi.gid);
}

/**
 * Whether a commit changes the shared slot of its records' values alone: a field that is not
 * localized before nor after it changes type (or options), no definition loses a field, and the
 * field has no value list (whose labels differ by language, so its text is in the language
 * documents). Then the records' other slots stay as they are, and so do their checks but the
 * field's own and their search documents but the shared one, so the records are read and
 * written by that slot alone (`sharedRecord` says which records).
 */
function sharedScope(f: Follow): boolean {
  const fc = f.field;
  if (!fc || fc.from.is_localized || fc.to.is_localized) return false;
  if (Object.values(f.dropped).some((gids) => gids.length)) return false;
  const labels = (x: FieldForm) => Array.isArray(x.options?.values) && x.options.values.length > 0;
  return !labels(fc.from) && !labels(fc.to);
}

/**
 * Whether a record read by its shared slot (in a `sharedScope` commit) can follow from that slot
 * alone: its title is not the field (the title is in every language's document), it has no
 * localized class or classlist field (validated again from their language slots), and its stored
 * checks are for the project's languages (not awaiting a language's reindex).
 */
function sharedRecord(view: SchemaView, d: DefInfo, stored: RecordChecks, f: Follow): boolean {
  if (d.titlefield === f.field!.gid) return false;
  if (d.fields.some((fi) => fi.localized && NESTING.has(fi.type))) return false;
  const same = (o: Record<string, string[]> | undefined) =>
    !!o && Object.keys(o).length === view.languages.length && view.languages.every((l) => Object.hasOwn(o, l));
  return same(stored.empty) && same(stored.untranslated);
}

/**
 * `checksAfter` for a record read by its shared slot: what checksOf gives for the field (not
 * localized: empty in every language or in none), the other fields' empty and untranslated as
 * stored (their values did not change), in the definition's field order as checksOf lists them.
 */
function sharedChecksAfter(view: SchemaView, d: DefInfo, stored: RecordChecks, vals: Vals, f: Follow): RecordChecks {
  const gid = f.field!.gid;
  const fi = d.byGid.get(gid);
  const emptyNow = !!fi && isEmpty(vals[SHARED]?.[gid]);
  const listed = (list: readonly string[], self: boolean) => {
    const has = new Set(list);
    return d.fields.filter((x) => (x.gid === gid ? self : has.has(x.gid))).map((x) => x.gid);
  };
  const empty: Record<string, string[]> = {};
  const untranslated: Record<string, string[]> = {};
  for (const l of view.languages) {
    empty[l] = listed(stored.empty[l]!, emptyNow);
    untranslated[l] = listed(stored.untranslated[l]!, false);
  }
  return { invalid: invalidAfter(view, d, vals, f, stored.invalid), empty, untranslated };
}

/**
 * Whether a commit changes the stored values of its field (its type or its localization). Only
 * then can a record outside `definitions` change: checks and search text are computed from the
 * record's definition's fields, so other changes touch only the records of the definitions using
 * the field (found by the definition index, never by reading every record's values).
 */
const changesValues = (f: Follow) =>
  !!f.field && (f.field.from.type !== f.field.to.type || f.field.from.is_localized !== f.field.to.is_localized);

/**
 * The records a commit touches, in two parts: every record of the changed definitions (by the
 * (project, definition) index, in id order per definition), and, when the field's values change,
 * the records of other definitions that hold a value of it (`others`, found by reading those
 * definitions' records once). A cursor walks both; `next` returns up to `limit` rows after it,
 * `advance` moves it past a row that was handled.
 */
class Affected {
  private di = 0;
  private after = 0;
  private oi = 0;
  private constructor(
    private readonly projectGid: string,
    private readonly defs: string[],
    private readonly others: number[],
  ) {}

  /** Which of the project's other definitions' records to read for holders of the field, when its values change. */
  private static async otherDefinitions(tx: Tx, projectGid: string, f: Follow): Promise<string[]> {
    if (!changesValues(f)) return [];
    const mine = new Set(f.definitions);
    const all = await sessionOf(tx).query<{ definition: string }>(DEFINITIONS_IN_USE).all(projectGid, projectGid);
    return all.map((r) => r.definition).filter((d) => !mine.has(d));
  }

  /** Ids of `definition`'s records holding a value of the field, reading up to `rows` records after `after`; `last` is the last id read. */
  private static async holdersIn(
    tx: Tx,
    projectGid: string,
    definition: string,
    field: string,
    after: number,
    rows: number,
  ): Promise<{ ids: number[]; last: number }> {
    const got = await sessionOf(tx)
      .query<{ id: number; holds: number | boolean }>(HOLDERS_IN(tx))
      .all(...holdsParams(field), projectGid, definition, after, rows);
    return { ids: got.filter((r) => r.holds).map((r) => r.id), last: got.length ? got[got.length - 1]!.id : -1 };
  }

  /** At once (a commit's own transaction, a dry run): every holder outside the definitions is read now. */
  static async now(tx: Tx, projectGid: string, f: Follow): Promise<Affected> {
    const others: number[] = [];
    for (const d of await Affected.otherDefinitions(tx, projectGid, f))
      others.push(...(await Affected.holdersIn(tx, projectGid, d, f.field!.gid, 0, ALL)).ids);
    return new Affected(
      projectGid,
      f.definitions,
      others.sort((a, b) => a - b),
    );
  }

  /**
   * For a job: the holders outside the definitions are read in slices of `slice` records, each in
   * its own unit of work (`unit`), with `pause` awaited between them so the server keeps answering.
   */
  static async inSlices(
    unit: <T>(fn: (tx: Tx) => Promise<T>) => Promise<T>,
    projectGid: string,
    f: Follow,
    slice: number,
    pause: () => Promise<void>,
  ): Promise<Affected> {
    const others: number[] = [];
    for (const d of await unit(async (tx) => await Affected.otherDefinitions(tx, projectGid, f))) {
      for (let after = 0; after >= 0; ) {
        const r = await unit(async (tx) => await Affected.holdersIn(tx, projectGid, d, f.field!.gid, after, slice));
        others.push(...r.ids);
        after = r.last;
        await pause();
      }
    }
    return new Affected(
      projectGid,
      f.definitions,
      others.sort((a, b) => a - b),
    );
  }

  /** How many records of the definitions there are (up to `limit`; -1 for all), by the index. */
  static async countOfDefinitions(tx: Tx, projectGid: string, f: Follow, limit = ALL): Promise<number> {
    if (!f.definitions.length) return 0;
    return (await sessionOf(tx)
      .query<{ n: number }>(COUNT_OF_DEFINITIONS(tx))
      .get(projectGid, JSON.stringify(f.definitions), limit))!.n;
  }

  /**
   * How many records of other definitions a commit would have to read for holders (up to `limit`),
   * by the index: the other definitions in use first (one seek each), then their records counted.
   */
  static async countOfOthers(tx: Tx, projectGid: string, f: Follow, limit: number): Promise<number> {
    const others = await Affected.otherDefinitions(tx, projectGid, f);
    return Affected.countOfDefinitions(tx, projectGid, { definitions: others, dropped: {} }, limit);
  }

  /**
   * The total as `total` gives it, for a job: the records of each definition counted in slices of
   * `slice`, each in its own unit of work (`unit`), with `pause` awaited between them (one count of
   * a million index entries held the server up for 0.1 s, from a cold disk for most of a second).
   */
  async totalInSlices(
    unit: <T>(fn: (tx: Tx) => Promise<T>) => Promise<T>,
    slice: number,
    pause: () => Promise<void>,
  ): Promise<number> {
    let n = this.others.length;
    for (const definition of this.defs)
      for (let after = 0; ; ) {
        const got = await unit(
          async (tx) =>
            await sessionOf(tx)
              .query<{ n: number; last: number | null }>(COUNT_SLICE)
              .get(this.projectGid, definition, after, slice),
        );
        n += Number(got?.n ?? 0);
        if (!got || Number(got.n) < slice || got.last === null) break;
        after = Number(got.last);
        await pause();
      }
    return n;
  }

  /** The total (the records of the definitions and the holders outside them). */
  async total(tx: Tx): Promise<number> {
    return (
      (await Affected.countOfDefinitions(tx, this.projectGid, { definitions: this.defs, dropped: {} })) +
      this.others.length
    );
  }

  /** Up to `limit` rows after the cursor (fewer only at the end); `shared`: by their values' shared slot alone. */
  async next(tx: Tx, limit: number, shared = false): Promise<(FollowRec & { at: number })[]> {
    const out: (FollowRec & { at: number })[] = [];
    const s = sessionOf(tx);
    const inDefinition = (shared ? NEXT_IN_DEFINITION_SHARED : NEXT_IN_DEFINITION)(tx);
    for (let di = this.di, after = this.after; out.length < limit && di < this.defs.length; di++, after = 0) {
      const found = await s
        .query<FollowRow>(inDefinition)
        .all(this.projectGid, this.defs[di]!, after, limit - out.length);
      for (const r of found) out.push({ ...followRec(r, shared), at: di });
    }
    if (out.length < limit && this.oi < this.others.length) {
      const ids = this.others.slice(this.oi, this.oi + limit - out.length);
      const found = await s
        .query<FollowRow>((shared ? NEXT_OTHERS_SHARED : NEXT_OTHERS)(tx))
        .all(JSON.stringify(ids), this.projectGid);
      const byId = new Map(found.map((r) => [r.id, r]));
      // A record deleted since is skipped; its place still counts, so the cursor moves past it.
      ids.forEach((id, i) => {
        const r = byId.get(id);
        out.push(
          r
            ? { ...followRec(r, shared), at: this.defs.length + this.oi + i }
            : { id, gid: "", definition: "", vals: {}, at: this.defs.length + this.oi + i },
        );
      });
    }
    return out;
  }

  /**
   * Where the cursor stands, by record ids: the definition it is in and the last id handled there,
   * and the last holder outside the definitions handled (0: none yet). Ids, not places in the
   * holder list: after a restart that list is found again, and may have changed.
   */
  position(): FollowPosition {
    return { definition: this.di, after: this.after, other: this.oi > 0 ? this.others[this.oi - 1]! : 0 };
  }

  /** Puts the cursor where a `position` of an earlier run of the same job stood. */
  resume(p: FollowPosition): void {
    this.di = Math.min(p.definition, this.defs.length);
    this.after = p.after;
    const next = this.others.findIndex((id) => id > p.other);
    this.oi = p.other === 0 ? 0 : next < 0 ? this.others.length : next;
  }

  /** Moves the cursor past a row `next` returned. */
  advance(row: { id: number; at: number }): void {
    if (row.at < this.defs.length) {
      this.di = row.at;
      this.after = row.id;
    } else {
      this.di = this.defs.length;
      this.oi = row.at - this.defs.length + 1;
    }
  }
}

/** Where a `records_follow_schema` job stands (saved with every unit of work, see the job). */
type FollowPosition = { definition: number; after: number; other: number };
type FollowSaved = { at: FollowPosition; done: number; followed: number; lost: number };

function followOf(change: SchemaChange): Follow {
  const f: Follow = { dropped: change.droppedFields, definitions: change.definitions };
  if (change.kind === "field" && change.before)
    f.field = {
      gid: change.gid,
      from: change.before as unknown as FieldForm,
      to: change.after as unknown as FieldForm,
    };
  return f;
}

/**
 * Whether a commit leaves the search text of every record it touches as it was (except records
 * whose title is the committed field: see applyFollow), so their search rows need not be read nor
 * rewritten: a field commit that takes no field from a definition, for a field that feeds no
 * search text before nor after it (not a text type, no value list, whose labels are searched).
 * The search text is made of the definition's text and value-list fields and its title field only.
 */
function searchUnchanged(f: Follow): boolean {
  if (!f.field || Object.values(f.dropped).some((gids) => gids.length)) return false;
  const feeds = (x: FieldForm) =>
    SEARCHED_TYPES.has(x.type) || (Array.isArray(x.options?.values) && x.options.values.length > 0);
  return !feeds(f.field.from) && !feeds(f.field.to);
}

/** The schema view of a project the caller has already checked (hooks and jobs). */
const viewOf = async (tx: Tx, projectGid: string) => new SchemaView(tx, (await getProject(tx, projectGid))!);

/**
 * Applies a change to rows (stopping at `deadline`, after at least one); returns how many were
 * handled and how many lost values. A row of a record deleted since (no gid) is passed over.
 */
async function applyFollow(
  tx: Tx,
  view: SchemaView,
  touch: Touch,
  recs: FollowRec[],
  f: Follow,
  deadline = Infinity,
  handled?: (r: FollowRec) => void,
): Promise<{ done: number; followed: number; lost: number }> {
  let lost = 0;
  let done = 0;
  let followed = 0;
  const s = sessionOf(tx);
  const upd = s.query(FOLLOWED(tx));
  const updShared = s.query(FOLLOWED_SHARED(tx));
  const updChecks = s.query(FOLLOWED_CHECKS(tx));
  const t = Date.now() / 1000;
  const sameText = searchUnchanged(f);
  for (const row of recs) {
    // At least one record per call, so a chunk always makes progress.
    if (done && performance.now() >= deadline) break;
    done++;
    handled?.(row);
    if (!row.gid) continue;
    const d = view.known(row.definition) ?? (await view.def(row.definition));
    // A record read by its shared slot that needs more is read whole (none: removed meanwhile).
    const stored = row.shared && row.checks !== undefined ? objectOf<RecordChecks>(row.checks) : undefined;
    const r =
      row.shared && !(stored && sharedRecord(view, d, stored, f)) ? await wholeRecord(tx, view.projectGid, row) : row;
    if (!r) continue;
    followed++;
    const n = await followVals(view, r, f);
    if (n.lost) lost++;
    if (r.shared && stored) {
      const checks = JSON.stringify(sharedChecksAfter(view, d, stored, n.vals, f));
      // The slot changed only where it held the field (nothing else of it is touched).
      if (Object.hasOwn(r.vals[SHARED] ?? {}, f.field!.gid))
        await updShared.run(JSON.stringify(n.vals[SHARED]), checks, t, r.id);
      else await updChecks.run(checks, t, r.id);
      if (!sameText) await writeSearch(tx, view, { ...r, vals: n.vals }, false, [SHARED]);
    } else {
      await upd.run(JSON.stringify(n.vals), JSON.stringify(await checksAfter(view, r, n.vals, f)), t, r.id);
      if (!sameText || d.titlefield === f.field?.gid) await writeSearch(tx, view, { ...r, vals: n.vals });
    }
    touch.update(r.gid);
  }
  return { done, followed, lost };
}

/** A record read by its shared slot, read again with all of its values (undefined when it is gone). */
async function wholeRecord(tx: Tx, projectGid: string, r: FollowRec): Promise<FollowRec | undefined> {
  const [row] = await sessionOf(tx)
    .query<FollowRow>(NEXT_OTHERS(tx))
    .all(JSON.stringify([r.id]), projectGid);
  return row && followRec(row);
}

/** `hooks.schemaCommitted`: records follow a committed field, class or definition. */
export const recordsFollowSchema: SchemaCommittedHook = {
  async preview(_ctx, tx, change) {
    const f = followOf(change);
    const view = await viewOf(tx, change.projectGid);
    const losing: string[] = [];
    let count = 0;
    const all = await Affected.now(tx, change.projectGid, f);
    for (let rows = await all.next(tx, 1000); rows.length; rows = await all.next(tx, 1000)) {
      for (const r of rows) {
        all.advance(r);
        if (!r.gid) continue;
        count++;
        if ((await followVals(view, r, f)).lost) losing.push(r.gid);
      }
    }
    return { records: { affected: count, losing_values: losing.length, losing_records: losing.slice(0, LIMIT) } };
  },
  async apply(ctx, tx, log, change) {
    const f = followOf(change);
    // Only counted here, by the indexes: a job does the work for more than FOLLOW_INLINE records,
    // or when holders of the field would have to be looked for among more than FOLLOW_SCAN others.
    const inDefinitions = await Affected.countOfDefinitions(tx, change.projectGid, f, FOLLOW_INLINE + 1);
    const others = await Affected.countOfOthers(tx, change.projectGid, f, FOLLOW_SCAN + 1);
    if (!inDefinitions && !others) return;
    if (inDefinitions > FOLLOW_INLINE || others > FOLLOW_SCAN) {
      return {
        job: await ctx.jobs.enqueue({
          kind: "records_follow_schema",
          projectGid: change.projectGid,
          params: { follow: f },
          info: {},
        }),
      };
    }
    const all = await Affected.now(tx, change.projectGid, f);
    if ((await all.total(tx)) > FOLLOW_INLINE) {
      return {
        job: await ctx.jobs.enqueue({
          kind: "records_follow_schema",
          projectGid: change.projectGid,
          params: { follow: f },
          info: {},
        }),
      };
    }
    // After the commit's own writes: the view reads the committed schema.
    const view = await viewOf(tx, change.projectGid);
    const touch = new Touch(change.projectGid);
    const shared = sharedScope(f);
    for (let rows = await all.next(tx, 1000, shared); rows.length; rows = await all.next(tx, 1000, shared))
      await applyFollow(tx, view, touch, rows, f, Infinity, (r) => all.advance(r as FollowRec & { at: number }));
    touch.flush(log);
  },
};

/** A commit reads up to this many records of other definitions for holders of a field itself; more go to the job. */
const FOLLOW_SCAN = 2000;
/**
 * A unit of work of the `records_follow_schema` job takes about this long: sized from the time
 * per record the previous units took, so the event loop is free again after each and requests
 * wait at most about this long.
 */
const CHUNK_MS = 10;
/** Records counted per unit of work for the job's total. */
const COUNT_SLICE_RECORDS = 20_000;
/** Records of other definitions read for holders per unit of work. */
const SCAN_SLICE = 200;
/**
 * The `records_follow_schema` job: a commit touching more than FOLLOW_INLINE records (or needing
 * to look for holders of a field among many records). First the holders outside the changed
 * definitions are found (in slices), then the records are converted in units of work of about
 * CHUNK_MS each (as many records as the previous units' time per record allows), yielding to the
 * event loop between them so requests are answered while it runs.
 */
export const followSchemaJob: JobKind = {
  async handler(ctx, job, progress) {
    const { follow } = job.params as { follow: Follow };
    const projectGid = job.projectGid!;
    const read = async <T>(fn: (tx: Tx) => Promise<T>): Promise<T> => await mutate(ctx.db, undefined, fn);
    const all = await Affected.inSlices(read, projectGid, follow, SCAN_SLICE, () => progress.yield());
    // Run again after an interruption: on from where the last committed unit left the cursor. The
    // records before it were converted already, and converting a value twice is not safe (a value
    // moved from the shared slot into the languages would find the shared slot empty and be lost).
    const saved = progress.resume as FollowSaved | undefined;
    if (saved) all.resume(saved.at);
    let done = saved?.done ?? 0;
    const total = await all.totalInSlices(read, COUNT_SLICE_RECORDS, () => progress.yield());
    await progress.total(total, done);
    // The project row (its languages) is read again only when the project's schema or settings changed.
    let known: { stamp: string; project: Project | undefined } | undefined;
    const projectOf = async (tx: Tx) => {
      const stamp = schemaStamp(tx, projectGid);
      if (known?.stamp !== stamp) known = { stamp, project: await getProject(tx, projectGid) };
      return known.project;
    };
    let followed = saved?.followed ?? 0;
    let lost = saved?.lost ?? 0;
    // Milliseconds per record, measured: starts cautious, then follows the units' own times.
    let perRecord = 1;
    const shared = sharedScope(follow);
    // The job writes several pages of log and of full-text index per record: checkpoints and index
    // merges run aside, not inside the units' commits (records.fts-merges.ts).
    await withWritesAside(ctx, async (aside) => {
      for (;;) {
        const t0 = performance.now();
        const deadline = t0 + CHUNK_MS;
        // Without a disk flush per unit: the checkpoint thread syncs the log about every 100 ms, and the
        // job's final state is written with the configured durability (a sync of the log covers every
        // unit before it). After a crash the job goes on from the last unit that reached the disk
        // (the position each unit saves with its writes, below).
        const n = await mutate(
          ctx.db,
          ctx.hub,
          async (tx, log: ChangeLog) => {
            const project = await projectOf(tx);
            if (!project) return 0;
            const recs = await all.next(tx, Math.max(1, Math.min(500, Math.round(CHUNK_MS / perRecord))), shared);
            if (!recs.length) return 0;
            const view = new SchemaView(tx, project);
            const touch = new Touch(projectGid);
            const r = await applyFollow(tx, view, touch, recs, follow, deadline, (x) =>
              all.advance(x as FollowRec & { at: number }),
            );
            touch.flush(log);
            lost += r.lost;
            followed += r.followed;
            done += r.done;
            // Committed with the unit's own writes, or not at all.
            await progress.save(tx, { at: all.position(), done, followed, lost } satisfies FollowSaved);
            return r.done;
          },
          { durable: false },
        );
        if (!n) break;
        perRecord = Math.max(0.01, (perRecord + (performance.now() - t0) / n) / 2);
        // Counts the records and yields to the event loop (a macrotask) before the next unit of work.
        await progress.step(n);
        await aside.between(() => progress.yield());
      }
    });
    return { records: followed, losing_values: lost };
  },
};

/** Queues the rebuild of every record's checks and search rows after the project's languages changed. */
async function enqueueReindex(ctx: Parameters<LanguageHook>[0], projectGid: string): Promise<string> {
  return await ctx.jobs.enqueue({ kind: "records_reindex", projectGid, params: {}, info: {} });
}

/** The key of one language's values in `vals` (a language code has no quote or backslash). */
const languageKey = (language: string) => language.replace(/["\\]/g, "");

/** An UPDATE sync item for every record holding values in `language`: their forms gain or lose it. */
async function announceLanguage(
  tx: Tx,
  log: Parameters<LanguageHook>[2],
  projectGid: string,
  language: string,
): Promise<void> {
  const found = await sessionOf(tx).query<{ gid: string }>(WITH_LANGUAGE(tx)).all(projectGid, languageKey(language));
  for (const r of found) log.project(projectGid, "UPDATE", "records", r.gid);
}

/**
 * `hooks.languageAdded`: the new language gets its checks and search rows (a job); no value
 * changes. Records that kept values in it since it was removed show them again (UPDATE items).
 */
export const recordsLanguageAdded: LanguageHook = async (ctx, tx, log, projectGid, language) => {
  if (await sessionOf(tx).query(ANY_RECORD).get(projectGid)) {
    await announceLanguage(tx, log, projectGid, language);
    await enqueueReindex(ctx, projectGid);
  }
  return 0;
};

/**
 * `hooks.languageRemoved`: record forms show the project's languages only, so every record with
 * values in that language changes form and gets an UPDATE sync item. With `remove_values: true`
 * (`keep` false) the values go too: its search rows go at once, the checks are rebuilt by the
 * reindex job. Returns how many values were removed.
 */
export const recordsLanguageRemoved: LanguageHook = async (ctx, tx, log, projectGid, language, keep) => {
  if (keep) {
    await announceLanguage(tx, log, projectGid, language);
    return 0;
  }
  const s = sessionOf(tx);
  const key = languageKey(language);
  const found = await languageHolders(tx, projectGid, key);
  // The language's path is written into the text: one text for all the records of this call.
  const upd = s.query(withoutLanguage(tx, key));
  const t = Date.now() / 1000;
  let removed = 0;
  for (const r of found) {
    await upd.run(t, r.id);
    log.project(projectGid, "UPDATE", "records", r.gid);
    removed += r.n;
  }
  await s.query(LANGUAGE_SEARCH_ROWS_DELETE).run(projectGid, language);
  if (found.length || (await s.query(ANY_RECORD).get(projectGid))) await enqueueReindex(ctx, projectGid);
  return removed;
};

/**
 * `hooks.settingRemoved`: a deleted channel is switched off in every record that had it; a deleted
 * ordering's positions go. Each record whose form changed gets an UPDATE sync item.
 */
export const recordsSettingRemoved: SettingRemovedHook = async (_ctx, tx, log, projectGid, kind, key) => {
  const s = sessionOf(tx);
  const t = Date.now() / 1000;
  if (kind === "channel") {
    if (key === ALL_CHANNEL) return;
    const found = await s.query<{ id: number; gid: string }>(WITH_CHANNEL(tx)).all(projectGid, key);
    const upd = s.query(WITHOUT_CHANNEL(tx));
    for (const r of found) {
      await upd.run(key, t, r.id);
      log.project(projectGid, "UPDATE", "records", r.gid);
    }
  } else if (kind === "ordering") {
    const found = await s.query<{ id: number; gid: string }>(IN_ORDERING).all(projectGid, key);
    await s.query(ORDERING_DELETE).run(projectGid, key);
    const upd = s.query(TOUCHED(tx));
    for (const r of found) {
      await upd.run(t, r.id);
      log.project(projectGid, "UPDATE", "records", r.gid);
    }
  }
};

/**
 * The `records_reindex` job: after a project's languages changed, every record's checks and search
 * rows are rebuilt for the current languages (500 records per unit of work). Each unit saves the
 * last record it rebuilt, so a job interrupted by a stop or a crash goes on after it.
 */
export const reindexJob: JobKind = {
  async handler(ctx, job, progress) {
    const projectGid = job.projectGid!;
    const saved = progress.resume as { after: number; done: number } | undefined;
    let after = saved?.after ?? 0;
    let done = saved?.done ?? 0;
    const total = await mutate(
      ctx.db,
      undefined,
      async (tx) => (await sessionOf(tx).query<{ n: number }>(RECORD_COUNT).get(projectGid))!.n,
    );
    await progress.total(total, done);
    for (;;) {
      const n = await mutate(ctx.db, ctx.hub, async (tx) => {
        if (!(await getProject(tx, projectGid))) return 0;
        const s = sessionOf(tx);
        const recs = (await s.query(REINDEX_PAGE(tx)).all(projectGid, after)).map(recOf);
        if (!recs.length) return 0;
        const view = await viewOf(tx, projectGid);
        await s
          .query(SEARCH_ROWS_GONE(tx))
          .run(JSON.stringify(recs.map((r) => r.id)), JSON.stringify(searchDocuments(view.languages)));
        const upd = s.query(CHECKS_UPDATE(tx));
        for (const r of recs) {
          await upd.run(
            JSON.stringify(
              checksOf(view.known(r.definition) ?? (await view.def(r.definition)), r.vals, view.languages, true),
            ),
            r.id,
          );
          await writeSearch(tx, view, r);
        }
        after = recs.at(-1)!.id;
        done += recs.length;
        await progress.save(tx, { after, done });
        return recs.length;
      });
      if (!n) break;
      await progress.step(n);
    }
  },
};
