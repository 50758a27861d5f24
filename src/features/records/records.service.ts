/*
 * Longer than ~600 lines: the record tree's hot path (rows, forms and their cache, writes,
 * ordering positions) shares the row columns, the forms cache and the schema view, measured together
 * (bench/records). Its sections are marked below; its statements are in records.queries.ts, so
 * splitting the sections into role-named files (rows, forms, positions) is the next step.
 */
import { sql } from "drizzle-orm";
import type { Actor } from "../../core/actor";
import { JsonText, withJsonText, type Answer } from "../../core/answer";
import { invalidParameter, missing, unprocessable } from "../../core/errors";
import { newGid, now } from "../../core/ids";
import type { Tx } from "../../db/connection";
import { unitMemo, type ChangeLog } from "../../db/mutate";
import { dialectOf, run, sessionOf } from "../../db/query";
import type { Ctx, ProjectCreatedHook } from "../../platform/context";
import { inProject, ALL_CHANNEL, getProject } from "../projects/projects.api";
import { baseDefinitionIn, layoutOf, Out, rowOf, schemaStamp } from "../schema/schema.api";
import type { Project } from "../projects/projects.api";
import type { RecordChecks } from "./records.table";
import {
  applyFields,
  checksOf,
  fieldsForm,
  initialVals,
  put,
  SchemaView,
  searchDocuments,
  searchRowId,
  searchTextOf,
  titleOf,
  type DefInfo,
  type ReportItem,
} from "./values.service";
import { findEach } from "../../core/sequential";
import {
  BUMP_CHILDCOUNT,
  CANONICAL_USES,
  CHILD_INSERT,
  childrenByIdPage,
  childrenCount,
  childrenPlacedFirstPage,
  DELETED,
  DESCENDANTS,
  FTS_DELETE,
  FTS_INSERT,
  LAST_CHILD_DEFINITION,
  LAST_CHILD_DEFINITION_IN_ORDERING,
  LAST_PLACES,
  LINK_GROUP,
  LINKS_OF,
  LINKS_OF_ONE,
  LIVE_CHILDREN_COUNT,
  NEXT_SIBLING,
  PLACE_INSERT,
  PLACE_RENUMBER,
  PLACE_UPSERT,
  PLACED_COUNT,
  placedChildrenPage,
  PLACES_BEFORE,
  PLACES_OF,
  PLACES_OF_ONE,
  PROJECT_RECORDS_AFTER,
  PUBLISHED,
  RECORD_BY_GID,
  RECORD_BY_GID_FOR_WRITE,
  RECORD_INSERT,
  RECORDS_BY_GIDS,
  RECORDS_BY_IDS,
  ROOT_INSERT,
  ROOT_ROW,
  SEARCH_INSERT,
  SEARCH_ROW_OF,
  SEARCH_ROWS_OF,
  SEARCH_ROWS_OF_PROJECT_DELETE,
  SEARCH_UPDATE,
  SIBLING_PLACE,
  SIBLINGS_IN_ORDER,
  VALS_DEFINITION_UPDATE,
  VALS_UPDATE,
} from "./records.queries";

export { channelTest, DELETED, MOVED, MOVED_BELOW, PUBLISHED } from "./records.queries";

/**
 * The record tree: reading (root, get, children, forms), creating and updating values. Every
 * service function is `fn(ctx, actor, projectGid, input)` → `{result, data}`, checks access itself
 * (any active member of the project: owner, member or API user, as the reference) and writes
 * inside `mutate` with its `records` sync items. The `*In` functions work inside a caller's
 * transaction (Excel import, batch, jobs).
 */

export type Vals = Record<string, Record<string, unknown>>;

/** Field types whose values feed the search index (with value-list labels and the title field). */
const SEARCHED = new Set(["text", "textline", "textlist", "barcode"]);

/** A record row as read from SQLite, JSON members parsed. */
export type Rec = {
  id: number;
  gid: string;
  projectGid: string;
  parent: string | null;
  canonical: string;
  isLink: boolean;
  definition: string;
  treelevel: number;
  path: string[];
  childcount: number;
  status: string;
  channels: string[];
  vals: Vals;
  checks: RecordChecks;
  createdOn: number;
  updatedOn: number;
};

/** A `records` row as the database gives it with `columnsFor` (snake_case, JSON columns as text): recOf makes a Rec of it. */
type RecordRowText = Record<string, any>;

export function recOf(r: RecordRowText): Rec {
  const rec = {
    id: r.id,
    gid: r.gid,
    projectGid: r.project_gid,
    parent: r.parent,
    canonical: r.canonical,
    isLink: !!r.is_link,
    definition: r.definition,
    treelevel: r.treelevel,
    path: fromJson(r.path),
    childcount: r.childcount,
    status: r.status,
    channels: fromJson(r.channels),
    createdOn: r.created_on,
    updatedOn: r.updated_on,
  } as Rec;
  // Values and checks are parsed when first read: a form whose fields are remembered (formsOf)
  // needs only the stored text of the values (valsTextOf), which is forgotten once they are
  // replaced. The accessors are shared functions (no closures per row); a copy made by spreading
  // the row gets plain values and no text. PostgreSQL's driver gives jsonb columns parsed: no text
  // then (and no remembered forms).
  const valsText = typeof r.vals === "string";
  const checksText = typeof r.checks === "string";
  Object.defineProperty(rec, HELD, {
    value: {
      vals: valsText ? undefined : r.vals,
      valsText: valsText ? r.vals : undefined,
      checks: checksText ? undefined : r.checks,
      checksText: checksText ? r.checks : undefined,
    } satisfies Held,
  });
  Object.defineProperty(rec, "vals", VALS_ACCESSOR);
  Object.defineProperty(rec, "checks", CHECKS_ACCESSOR);
  return rec;
}

/** A JSON column as read: its text on SQLite, already parsed on PostgreSQL. */
const fromJson = (v: unknown) => (typeof v === "string" ? JSON.parse(v) : v);

/** Where recOf keeps a row's stored texts (not enumerable: copies made by spreading do not carry it). */
const HELD = Symbol("stored texts");
type Held = {
  vals: Vals | undefined;
  valsText: string | undefined;
  checks: RecordChecks | undefined;
  checksText: string | undefined;
};
const held = (o: object): Held => (o as Record<symbol, Held>)[HELD]!;
const VALS_ACCESSOR: PropertyDescriptor = {
  enumerable: true,
  configurable: true,
  get(this: object) {
    const h = held(this);
    return (h.vals ??= JSON.parse(h.valsText!));
  },
  set(this: object, v: Vals) {
    const h = held(this);
    h.vals = v;
    h.valsText = undefined;
  },
};
const CHECKS_ACCESSOR: PropertyDescriptor = {
  enumerable: true,
  configurable: true,
  get(this: object) {
    const h = held(this);
    return (h.checks ??= JSON.parse(h.checksText!));
  },
  set(this: object, v: RecordChecks) {
    held(this).checks = v;
  },
};

/** The stored JSON text of a row's values while they are the ones read from SQLite (undefined once replaced, or for rows not made by recOf). */
function valsTextOf(rec: Rec): string | undefined {
  return Object.hasOwn(rec, HELD) ? held(rec).valsText : undefined;
}

/** The gap between neighbours of a fresh ordering; a move takes the midpoint of its new neighbours. */
const GAP = 1 << 24;

// ---------------------------------------------------------------------------------------------
// Access and the per-request schema view

/**
 * A read after the membership check (any active member: owner, member or API user), with the
 * project's schema view. Runs in `inProject`, so inside a batch it joins the open unit of work.
 */
export async function recordsRead<T>(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  fn: (tx: Tx, view: SchemaView) => T,
): Promise<T> {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, project }) =>
    fn(tx, await viewOf(ctx, tx, project)),
  );
}

/** The project's schema view; inside a batch one for all its steps (unitMemo, forgotten after steps that may change the schema). */
async function viewOf(ctx: Ctx, tx: Tx, project: Project): Promise<SchemaView> {
  return await unitMemo(ctx.db, `view:${project.gid}`, () => new SchemaView(tx, project));
}

/** A change after the membership check: one unit of work (`inProject`), its sync items collected in `touch`. */
export async function recordsWrite<T>(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  fn: (tx: Tx, log: ChangeLog, view: SchemaView, touch: Touch) => T | Promise<T>,
): Promise<T> {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, log, project }) => {
    const touch = new Touch(projectGid);
    const out = await fn(tx, log, await viewOf(ctx, tx, project), touch);
    touch.flush(log);
    return out;
  });
}

/** The `records` sync items of one change, each record once (INSERT wins over UPDATE, DELETE over both). */
export class Touch {
  private readonly items = new Map<string, "INSERT" | "UPDATE" | "DELETE">();
  constructor(readonly projectGid: string) {}
  insert(gid: string) {
    this.items.set(gid, "INSERT");
  }
  update(gid: string | null | undefined) {
    if (gid && !this.items.has(gid)) this.items.set(gid, "UPDATE");
  }
  delete(gid: string) {
    this.items.set(gid, "DELETE");
  }
  flush(log: ChangeLog) {
    for (const [gid, action] of this.items) log.project(this.projectGid, action, "records", gid);
    this.items.clear();
  }
}

// ---------------------------------------------------------------------------------------------
// Rows

export async function recordRow(tx: Tx, projectGid: string, gid: unknown, forWrite = false): Promise<Rec | undefined> {
  if (typeof gid !== "string" || !gid) return undefined;
  const text = forWrite ? RECORD_BY_GID_FOR_WRITE(tx) : RECORD_BY_GID(tx);
  const r = await sessionOf(tx).query<RecordRowText>(text).get(gid, projectGid);
  return r ? recOf(r) : undefined;
}

/** The row of a gid, or 422 naming the member (the reference's "record doesn't exist"). */
export async function mustRecord(
  tx: Tx,
  projectGid: string,
  gid: unknown,
  member = "record",
  /** The caller writes the record back from this read: locked until its unit ends (RECORD_BY_GID_FOR_WRITE). */
  forWrite = false,
): Promise<Rec> {
  if (gid === undefined || gid === null || gid === "") throw missing(member);
  if (typeof gid !== "string") throw invalidParameter(member, { expected: "a record gid" });
  const r = await recordRow(tx, projectGid, gid, forWrite);
  if (!r)
    throw unprocessable(member === "parent" ? "Parent record doesn't exist" : "Record doesn't exist", {
      [member]: gid,
    });
  return r;
}

export async function rowsByGids(tx: Tx, projectGid: string, gids: string[]): Promise<Rec[]> {
  if (!gids.length) return [];
  return (await sessionOf(tx).query<RecordRowText>(RECORDS_BY_GIDS(tx)).all(JSON.stringify(gids), projectGid)).map(
    recOf,
  );
}

export async function rootRow(tx: Tx, projectGid: string): Promise<Rec | undefined> {
  const r = await sessionOf(tx).query<RecordRowText>(ROOT_ROW(tx)).get(projectGid);
  return r ? recOf(r) : undefined;
}

/** Gids of the whole subtree below a record (not the record itself), depth first by the parent index. */
export async function descendants(tx: Tx, gid: string): Promise<Rec[]> {
  return (await sessionOf(tx).query<RecordRowText>(DESCENDANTS(tx)).all(gid)).map(recOf);
}

// ---------------------------------------------------------------------------------------------
// Forms

/** Orderings of these records: record id → {ordering key: position}. */
async function orderingsOf(tx: Tx, ids: number[], view: SchemaView): Promise<Map<number, Record<string, number>>> {
  const out = new Map<number, Record<string, number>>();
  if (!ids.length) return out;
  const s = sessionOf(tx);
  const rows =
    ids.length === 1
      ? await s.query<Place>(PLACES_OF_ONE).all(ids[0]!)
      : await s.query<Place>(PLACES_OF(tx)).all(JSON.stringify(ids));
  for (const r of rows) {
    if (!view.hasOrdering(r.ordering)) continue;
    let o = out.get(r.id);
    if (!o) out.set(r.id, (o = {}));
    put(o, r.ordering, r.pos);
  }
  return out;
}

type Place = { id: number; ordering: string; pos: number };

/** Live (not deleted) links pointing at these canonical records: canonical gid → link gids. */
async function backlinksOf(tx: Tx, gids: string[]): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  if (!gids.length) return out;
  // Sorted here, not by ORDER BY id: with it SQLite took 10-20 times as long for the usual answer, none.
  const s = sessionOf(tx);
  const rows =
    gids.length === 1
      ? await s.query<Link>(LINKS_OF_ONE).all(gids[0]!)
      : await s.query<Link>(LINKS_OF(tx)).all(JSON.stringify(gids));
  if (rows.length > 1) rows.sort((a, b) => a.id - b.id);
  for (const r of rows) {
    const l = out.get(r.canonical);
    if (l) l.push(r.gid);
    else out.set(r.canonical, [r.gid]);
  }
  return out;
}

type Link = { id: number; canonical: string; gid: string };

type FormOptions = { languages: string[]; fields?: boolean; remember?: boolean };

/**
 * The title and `fields` of a record in one language depend only on its definition (the DefInfo
 * of the current schema stamp), its stored values and the language. With `remember`, formsOf keeps
 * them per record id in FORMS, the fields as JSON text (spliced into the answer unparsed, see
 * JsonText), and checks an entry on every use against a hash and the length of the values text
 * just read and against the very DefInfo object: any write of the values (by any code path) or
 * any schema change (a commit, a rename, new labels: a new stamp, new DefInfo objects) makes the
 * next read build them afresh. Bounded by the size of the texts; the least recently used go first.
 */
type LangForm = { title: string; fields?: Record<string, unknown> | JsonText };
type FormEntry = { hash: bigint | number; len: number; def: DefInfo; langs: Map<string, LangForm>; size: number };
const FORMS = new Map<number, FormEntry>();
const FORMS_BUDGET = 32 * 1024 * 1024;
let formsSize = 0;

function rememberedEntry(id: number, text: string | undefined, d: DefInfo): FormEntry | undefined {
  if (text === undefined) return undefined;
  const hash = Bun.hash(text);
  let e = FORMS.get(id);
  if (e && e.hash === hash && e.len === text.length && e.def === d) {
    // Most recently used last.
    FORMS.delete(id);
    FORMS.set(id, e);
    return e;
  }
  if (e) {
    FORMS.delete(id);
    formsSize -= e.size;
  }
  e = { hash, len: text.length, def: d, langs: new Map(), size: 128 };
  FORMS.set(id, e);
  formsSize += e.size;
  return e;
}

function grow(e: FormEntry, by: number) {
  e.size += by;
  formsSize += by;
  for (const [id, old] of FORMS) {
    if (formsSize <= FORMS_BUDGET) break;
    if (old === e) continue;
    FORMS.delete(id);
    formsSize -= old.size;
  }
}

/** The title and (unless `withFields` is false) the fields of a record in one language, remembered in `e` when given. */
function langForm(e: FormEntry | undefined, d: DefInfo, r: Rec, l: string, withFields: boolean): LangForm {
  const got = e?.langs.get(l);
  if (got && (got.fields || !withFields)) return got;
  const title = titleOf(d, r.vals, l);
  if (!e) return { title, fields: withFields ? fieldsForm(d, r.vals, l) : undefined };
  const made: LangForm = {
    title,
    fields: withFields ? new JsonText(JSON.stringify(fieldsForm(d, r.vals, l))) : undefined,
  };
  e.langs.set(l, made);
  // Strings of up to 2 bytes a character, and the objects around them.
  grow(e, 2 * (title.length + ((made.fields as JsonText | undefined)?.text.length ?? 0)) + 96);
  return made;
}

/**
 * The reference's record form of each row (`data.records`): hierarchy, definition, title and
 * fields in the asked languages, status, channels, orderings, link state, timestamps.
 */
export async function formsOf(
  tx: Tx,
  view: SchemaView,
  rows: Rec[],
  opts: FormOptions,
): Promise<Record<string, Record<string, unknown>>> {
  const out: Record<string, Record<string, unknown>> = {};
  const orderings = await orderingsOf(
    tx,
    rows.map((r) => r.id),
    view,
  );
  const backlinks = await backlinksOf(
    tx,
    rows.filter((r) => !r.isLink).map((r) => r.gid),
  );
  const withFields = opts.fields !== false;
  for (const r of rows) {
    const d = view.known(r.definition) ?? (await view.def(r.definition));
    const e = opts.remember ? rememberedEntry(r.id, valsTextOf(r), d) : undefined;
    const per = opts.languages.map((l) => langForm(e, d, r, l, withFields));
    const title: Record<string, string> = {};
    for (let i = 0; i < per.length; i++) put(title, opts.languages[i]!, per[i]!.title);
    const form: Record<string, unknown> = {
      gid: r.gid,
      parent: r.parent,
      canonical: r.canonical,
      backlinks: backlinks.get(r.gid) ?? [],
      treelevel: r.treelevel,
      path: r.path,
      childcount: r.childcount,
      definition: r.definition,
      title,
      status: r.status,
      channels: r.channels,
      orderings: orderings.get(r.id) ?? {},
      is_link: r.isLink,
    };
    if (withFields) {
      const fields: Record<string, unknown> = {};
      for (let i = 0; i < per.length; i++) fields[opts.languages[i]!] = per[i]!.fields!;
      form.fields = fields;
    }
    form.created_on = r.createdOn;
    form.updated_on = r.updatedOn;
    out[r.gid] = form;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Writing rows

/**
 * Rewrites the search rows of a record (only the languages whose text changed), with their
 * full-text rows; `docs` names the documents to look at when the others cannot have changed.
 */
export async function writeSearch(
  tx: Tx,
  view: SchemaView,
  r: { id: number; definition: string; vals: Vals },
  fresh = false,
  docs: readonly string[] = searchDocuments(view.languages),
): Promise<void> {
  const d = await view.def(r.definition);
  const s = sessionOf(tx);
  type Row = { id: number; language: string; title: string; body: string };
  const existing = fresh
    ? new Map()
    : new Map(
        (docs.length === 1
          ? await s.query<Row>(SEARCH_ROW_OF).all(r.id, docs[0]!)
          : await s.query<Row>(SEARCH_ROWS_OF).all(r.id)
        ).map((x) => [x.language, x]),
      );
  for (const l of docs) {
    const t = searchTextOf(d, r.vals, l);
    const cur = existing.get(l);
    if (!cur) {
      const id = searchRowId(r.id, l);
      await s.query(SEARCH_INSERT).run(id, r.id, view.projectGid, l, t.title, t.body);
      const fts = FTS_INSERT(tx);
      if (fts) await s.query(fts).run(id, view.projectGid, l, t.title, t.body);
    } else if (cur.title !== t.title || cur.body !== t.body) {
      await s.query(SEARCH_UPDATE).run(t.title, t.body, cur.id);
      // The full-text row is taken out with the words it had and written again with the new ones.
      const out = FTS_DELETE(tx);
      if (out) {
        await s.query(out).run(cur.id, view.projectGid, l, cur.title, cur.body);
        await s.query(FTS_INSERT(tx)).run(cur.id, view.projectGid, l, t.title, t.body);
      }
    }
  }
}

/**
 * Writes the search rows (and full-text rows) of every record of a project anew, from its values:
 * after a backup restore put the records back. The search rows are not restored from a backup:
 * they follow from the records, and a backup made before migration 0017 numbers them otherwise.
 */
export async function rebuildSearchIn(tx: Tx, project: Project): Promise<void> {
  const s = sessionOf(tx);
  await s.query(SEARCH_ROWS_OF_PROJECT_DELETE).run(project.gid);
  const view = new SchemaView(tx, project);
  const page = s.query<RecordRowText>(PROJECT_RECORDS_AFTER(tx));
  for (let after = 0; ; ) {
    const recs = (await page.all(project.gid, after)).map(recOf);
    if (!recs.length) break;
    for (const r of recs) await writeSearch(tx, view, r, true);
    after = recs.at(-1)!.id;
  }
}

type NewRecord = {
  parent: Rec;
  definition: string;
  vals?: Vals;
  channels?: string[];
  canonical?: string;
  isLink?: boolean;
  status?: string;
  /** Placement in this ordering (others: last). */
  ordering?: string;
  beforeRecord?: unknown;
  /** Place right after this sibling in `ordering` (duplicate). */
  afterRecord?: Rec;
  /** `vals` were just validated field by field (applyFields): the checks need not parse them again. */
  validated?: boolean;
};

/** Inserts a record as a child of `parent` (last in every ordering unless placed) and counts it in the parent. */
export async function insertRecordIn(tx: Tx, view: SchemaView, touch: Touch, n: NewRecord): Promise<Rec> {
  if (n.parent.isLink)
    throw unprocessable("Can't work with this item", {
      reason: "A linked record cannot have children",
      parent: n.parent.gid,
    });
  const d = await view.def(n.definition);
  const gid = newGid();
  const vals = n.vals ?? initialVals(view, d);
  const checks = checksOf(d, vals, view.languages, !!n.vals && !n.validated);
  const t = now();
  const status = n.status ?? PUBLISHED;
  const channels = n.channels ?? [ALL_CHANNEL];
  const raw = (await sessionOf(tx)
    .query<RecordRowText>(RECORD_INSERT(tx))
    .get(
      gid,
      view.projectGid,
      n.parent.gid,
      n.canonical ?? gid,
      !!n.isLink,
      n.definition,
      n.parent.treelevel + 1,
      JSON.stringify([gid, ...n.parent.path]),
      status,
      JSON.stringify(channels),
      JSON.stringify(vals),
      JSON.stringify(checks),
      t,
      t,
    ))!;
  const rec = recOf(raw);
  for (const o of view.options.orderedorderings) {
    const pos =
      o === n.ordering && n.afterRecord
        ? await afterPos(tx, n.parent.gid, o, rec.id, n.afterRecord.id)
        : o === n.ordering
          ? await placePos(tx, n.parent.gid, o, rec.id, n.beforeRecord)
          : await lastPos(tx, n.parent.gid, o, rec.id);
    await sessionOf(tx).query(PLACE_INSERT).run(rec.id, view.projectGid, n.parent.gid, o, pos);
  }
  await writeSearch(tx, view, rec, true);
  if (status !== DELETED) await bumpChildcount(tx, touch, n.parent.gid, 1);
  touch.insert(gid);
  return rec;
}

/** One new child of `insertRecordsIn`: its values (else the definition's initial values). */
export type NewChild = {
  vals?: Vals;
  /** `vals` were just validated field by field (applyFields): the checks need not parse them again. */
  validated?: boolean;
};

/**
 * Inserts many records as the last children of one parent, in the given order: the same rows,
 * search rows, places, child count and `records` sync items as `insertRecordIn` called for each
 * one after another (published, every channel, the definition's initial values unless given),
 * at a fraction of the cost. The statements are prepared once for the run, each ordering's last
 * place is read once (the new places follow it GAP apart), the parent's count moves once, and
 * nothing just written is read back. Answers the new rows in order.
 */
export async function insertRecordsIn(
  tx: Tx,
  view: SchemaView,
  touch: Touch,
  parent: Rec,
  definition: string,
  children: readonly NewChild[],
): Promise<Rec[]> {
  if (!children.length) return [];
  if (parent.isLink)
    throw unprocessable("Can't work with this item", {
      reason: "A linked record cannot have children",
      parent: parent.gid,
    });
  const s = sessionOf(tx);
  const d = await view.def(definition);
  const projectGid = view.projectGid;
  const languages = view.languages;
  const insert = s.query<{ id: number }>(CHILD_INSERT(tx));
  // Where the insert gives its id back (not SQLite: see returningInserted), else lastInsertRowid.
  const returnsId = dialectOf(tx).returningInserted("id") !== undefined;
  const place = s.query(PLACE_INSERT);
  const search = s.query(SEARCH_INSERT);
  const ftsText = FTS_INSERT(tx);
  const fts = ftsText ? s.query(ftsText) : undefined;
  const orderings = view.options.orderedorderings;
  // Each ordering's last place, read once: every new record goes GAP after the one before it.
  const next: number[] = [];
  for (const o of orderings) next.push(await lastPos(tx, parent.gid, o, 0));
  const treelevel = parent.treelevel + 1;
  // The path's tail (the parent's path) is the same for every child: `["<gid>",` + tail.
  const tail = parent.path.length ? `,${JSON.stringify(parent.path).slice(1)}` : "]";
  const channelsJson = JSON.stringify([ALL_CHANNEL]);
  const out: Rec[] = new Array(children.length);
  for (let i = 0; i < children.length; i++) {
    const c = children[i]!;
    const gid = newGid();
    const vals = c.vals ?? initialVals(view, d);
    const checks = checksOf(d, vals, languages, !!c.vals && !c.validated);
    const t = now();
    const path = `[${JSON.stringify(gid)}${tail}`;
    const values = [
      gid,
      projectGid,
      parent.gid,
      gid,
      definition,
      treelevel,
      path,
      channelsJson,
      JSON.stringify(vals),
      JSON.stringify(checks),
      t,
      t,
    ];
    const id = returnsId ? (await insert.get(...values))!.id : (await insert.run(...values)).lastInsertRowid;
    for (let k = 0; k < orderings.length; k++) {
      await place.run(id, projectGid, parent.gid, orderings[k]!, next[k]!);
      next[k] = next[k]! + GAP;
    }
    for (const l of searchDocuments(languages)) {
      const text = searchTextOf(d, vals, l);
      const row = searchRowId(id, l);
      await search.run(row, id, projectGid, l, text.title, text.body);
      if (fts) await fts.run(row, projectGid, l, text.title, text.body);
    }
    out[i] = {
      id,
      gid,
      projectGid,
      parent: parent.gid,
      canonical: gid,
      isLink: false,
      definition,
      treelevel,
      path: [gid, ...parent.path],
      childcount: 0,
      status: PUBLISHED,
      channels: [ALL_CHANNEL],
      vals,
      checks,
      createdOn: t,
      updatedOn: t,
    };
    // The parent's sync item comes before the first child's, as with one create after another.
    if (i === 0) touch.update(parent.gid);
    touch.insert(gid);
  }
  await bumpChildcount(tx, touch, parent.gid, children.length);
  return out;
}

async function bumpChildcount(tx: Tx, touch: Touch, parent: string | null, by: number): Promise<void> {
  if (!parent || !by) return;
  await sessionOf(tx).query(BUMP_CHILDCOUNT(tx)).run(by, now(), parent);
  touch.update(parent);
}

// ---------------------------------------------------------------------------------------------
// Positions in orderings: sparse integer keys

/**
 * Waits until no other unit places records under `parent` (PostgreSQL runs units side by side: two
 * moves before the same sibling would read the same neighbours and take the same midpoint, and a
 * renumbering would race another unit's placement). Nothing on SQLite (one writer at a time).
 */
async function lockPlaces(tx: Tx, parent: string): Promise<void> {
  const lock = dialectOf(tx).unitLock(sql`${`record places ${parent}`}`);
  if (lock) await run(tx, lock);
}

async function lastPos(tx: Tx, parent: string, ordering: string, exceptId: number): Promise<number> {
  await lockPlaces(tx, parent);
  // The two last places by the index: the record's own place (when it has one) is skipped.
  const r = (await sessionOf(tx).query(LAST_PLACES).all(parent, ordering)) as { id: number; pos: number }[];
  const last = r.find((x) => x.id !== exceptId);
  return (last?.pos ?? 0) + GAP;
}

/** Gives the siblings of an ordering fresh keys GAP apart, in their current order (when a gap ran out). */
async function renumber(tx: Tx, parent: string, ordering: string): Promise<void> {
  const ids = (await sessionOf(tx).query(SIBLINGS_IN_ORDER).all(parent, ordering)) as { id: number }[];
  const upd = sessionOf(tx).query(PLACE_RENUMBER);
  for (const [i, r] of ids.entries()) await upd.run((i + 1) * GAP, r.id, ordering);
}

/** The key placing a record before `before` (a sibling gid) in an ordering; last when absent or not a sibling. */
async function placePos(tx: Tx, parent: string, ordering: string, recordId: number, before: unknown): Promise<number> {
  if (typeof before !== "string" || !before) return await lastPos(tx, parent, ordering, recordId);
  await lockPlaces(tx, parent);
  const s = sessionOf(tx);
  for (let attempt = 0; attempt < 2; attempt++) {
    const b = (await s.query(SIBLING_PLACE).get(before, parent, ordering, recordId)) as { pos: number } | null;
    if (!b) return await lastPos(tx, parent, ordering, recordId);
    const prev = (await s.query(PLACES_BEFORE).all(parent, ordering, b.pos)) as { id: number; pos: number }[];
    const lo = prev.find((x) => x.id !== recordId)?.pos ?? b.pos - 2 * GAP;
    const mid = Math.floor((lo + b.pos) / 2);
    if (mid > lo && mid < b.pos) return mid;
    await renumber(tx, parent, ordering);
  }
  return await lastPos(tx, parent, ordering, recordId);
}

/** The key right after sibling `afterId` (duplicate). */
async function afterPos(tx: Tx, parent: string, ordering: string, recordId: number, afterId: number): Promise<number> {
  const next = (await sessionOf(tx).query(NEXT_SIBLING).get(parent, ordering, recordId, afterId, ordering)) as {
    gid: string;
  } | null;
  return next
    ? await placePos(tx, parent, ordering, recordId, next.gid)
    : await lastPos(tx, parent, ordering, recordId);
}

/** Places an existing record in an ordering (the row is written; the siblings only when a gap ran out). */
export async function setPosition(
  tx: Tx,
  view: SchemaView,
  rec: Rec,
  parent: string,
  ordering: string,
  before: unknown,
): Promise<void> {
  const pos = await placePos(tx, parent, ordering, rec.id, before);
  await sessionOf(tx).query(PLACE_UPSERT(tx)).run(rec.id, view.projectGid, parent, ordering, pos);
}

/** A key member of the wrong JSON type: 400, as the reference's "wrong type or value". */
const notAKey = (member: string) => invalidParameter(member, { expected: `a ${member} key (text)` });

/** The ordering member of a request: absent, or a key of the project's orderings (else 422; not text: 400). */
export function orderingOf(view: SchemaView, v: unknown, required = false): string | undefined {
  if (v === undefined || v === null || v === "") {
    if (required) throw missing("ordering");
    return undefined;
  }
  if (typeof v !== "string") throw notAKey("ordering");
  if (!view.hasOrdering(v))
    throw unprocessable("Ordering doesn't exist", { ordering: v, orderings: view.options.orderedorderings });
  return v;
}

/** The channel member of a request: absent, or a key of the project's channels (else 422; not text: 400). */
export function channelOf(view: SchemaView, v: unknown): string | undefined {
  if (v === undefined || v === null || v === "") return undefined;
  if (typeof v !== "string") throw notAKey("channel");
  if (!view.hasChannel(v))
    throw unprocessable("Channel doesn't exist", { channel: v, channels: view.options.orderedchannels });
  return v;
}

// ---------------------------------------------------------------------------------------------
// The root and its base definition

/**
 * The project's root record, created on first use (by `records/root`, or by any caller through
 * here): status published, Base definition, every channel off but `__all__`.
 */
async function ensureRootIn(tx: Tx, log: ChangeLog, view: SchemaView, touch: Touch): Promise<Rec> {
  const found = await rootRow(tx, view.projectGid);
  if (found) return found;
  const gid = newGid();
  const definition = await baseDefinitionIn(tx, log, view.projectGid);
  const t = now();
  const checks = checksOf(await view.def(definition), {}, view.languages);
  const raw = (await sessionOf(tx)
    .query<RecordRowText>(ROOT_INSERT(tx))
    .get(
      gid,
      view.projectGid,
      gid,
      definition,
      JSON.stringify([gid]),
      PUBLISHED,
      JSON.stringify([ALL_CHANNEL]),
      JSON.stringify(checks),
      t,
      t,
    ))!;
  const rec = recOf(raw);
  await writeSearch(tx, view, rec, true);
  touch.insert(gid);
  return rec;
}

/**
 * `hooks.projectCreated`: a new project gets its root record (with the Base definition and its
 * layout) in the transaction that creates it, with their sync items, so that `/init`, `/auth` and
 * `records/root` agree from the first request on.
 */
export const recordsProjectCreated: ProjectCreatedHook = async (_ctx, tx, log, projectGid) => {
  const project = await getProject(tx, projectGid);
  if (!project) return;
  const touch = new Touch(projectGid);
  await ensureRootIn(tx, log, new SchemaView(tx, project), touch);
  touch.flush(log);
};

// ---------------------------------------------------------------------------------------------
// Reading

/** The languages of a read, as the routes' schema passed them (`languagesOf` checks them against the project). */
export type Langs = { language?: string | null; languages?: string[] | null };

/** `records/root`: the root record (made on first use). */
export async function getRoot(ctx: Ctx, actor: Actor, projectGid: string, input: Langs): Promise<Answer> {
  const read = async () =>
    await recordsRead(ctx, actor, projectGid, async (tx, view) => {
      const langs = view.languagesOf(input);
      const root = await rootRow(tx, projectGid);
      return root
        ? { result: { root: root.gid }, data: { records: await formsOf(tx, view, [root], { languages: langs }) } }
        : undefined;
    });
  const found = await read();
  if (found) return found;
  // A project made before roots came with projects: the root (and maybe the Base definition and
  // its layout) is made now, and the schema items it uses are answered with it.
  const root = await recordsWrite(
    ctx,
    actor,
    projectGid,
    async (tx, log, view, touch) => await ensureRootIn(tx, log, view, touch),
  );
  const made = (await read())!;
  const schema = await recordsRead(ctx, actor, projectGid, async (tx) => {
    const definition = await rowOf(tx, "definition", projectGid, root.definition);
    return new Out()
      .add("definition", definition)
      .add("layout", definition && (await layoutOf(tx, definition)))
      .data();
  });
  return { result: made.result, data: { ...schema, ...made.data } };
}

/** `records/get`: `record` (→ result.record) or `records` (→ result.records, existing ones in the asked order). */
export async function getRecords(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: Langs & { record?: unknown; records?: unknown },
): Promise<Answer> {
  return await recordsRead(ctx, actor, projectGid, async (tx, view) => {
    const langs = view.languagesOf(input);
    if (input.record !== undefined && input.record !== null) {
      const r = await mustRecord(tx, projectGid, input.record);
      return { result: { record: r.gid }, data: { records: await formsOf(tx, view, [r], { languages: langs }) } };
    }
    if (input.records === undefined || input.records === null) throw missing("record");
    if (!Array.isArray(input.records) || input.records.some((g) => typeof g !== "string"))
      throw invalidParameter("records", { expected: "an array of record gids" });
    if (input.records.length > 1000) throw invalidParameter("records", { expected: "at most 1000 gids" });
    const rows = await rowsByGids(tx, projectGid, [...new Set(input.records as string[])]);
    const byGid = new Map(rows.map((r) => [r.gid, r]));
    const found = [...new Set(input.records as string[])].filter((g) => byGid.has(g));
    return { result: { records: found }, data: { records: await formsOf(tx, view, rows, { languages: langs }) } };
  });
}

const CHILDREN_PAGE = { size: 100, max: 1000 };

/** `page.top`/`page.size` of a children-like call (400 on anything but whole numbers; size clamped). */
export function pageOf(
  input: Record<string, unknown>,
  def: { size: number; max: number },
): { top: number; size: number } {
  const read = (name: string, fallback: number) => {
    const v = Object.hasOwn(input, name) ? input[name] : undefined;
    if (v === undefined || v === null) return fallback;
    if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0)
      throw invalidParameter(name, { expected: "a whole number of 0 or more" });
    return v;
  };
  return { top: read("page.top", 0), size: Math.min(read("page.size", def.size), def.max) };
}

/**
 * Children of a parent that are not deleted, in an ordering (else in creation order), enabled in
 * a channel when one is given: one page of ids and gids, and the total.
 *
 * Costs at 10,000 children: the page comes from the place index (parent, ordering, pos) alone, the
 * channel test and the counts from the children index (parent, status, channels) alone; the wide
 * record rows are read for the page only. Without a channel the total is the parent's `childcount`.
 * With `idsOnly` (the caller reads the rows of `ids` next) `gids` may hold nulls: take them from the rows.
 */
export async function childrenIn(
  tx: Tx,
  parent: string,
  opts: {
    ordering?: string;
    channel?: string;
    top: number;
    size: number;
    deleted?: boolean;
    childcount?: number;
    idsOnly?: boolean;
  },
): Promise<{ gids: string[]; ids: number[]; total: number }> {
  const s = sessionOf(tx);
  const inOne = !!opts.channel && opts.channel !== "__all__";
  const chanParam = inOne ? [JSON.stringify(opts.channel)] : [];
  const text = { deleted: opts.deleted, inOne, idsOnly: opts.idsOnly };
  let rows: { id: number; gid: string }[] | undefined;
  if (opts.ordering && !opts.deleted) {
    // Deleted records' places are filed under "-<parent>", so the place index holds live children
    // only. Children without a place (an ordering added after them) come after every placed one,
    // so a full page of placed children is the answer; a short page is, once every child is placed.
    // With `idsOnly` (the caller reads the rows next) the page is the place index alone: no record row is read for its gid.
    rows = (await s
      .query(placedChildrenPage(tx, text))
      .all(parent, opts.ordering, opts.size, opts.top, ...chanParam)) as { id: number; gid: string }[];
    if (rows.length < opts.size) {
      const placed = ((await s.query(PLACED_COUNT).get(parent, opts.ordering)) as { n: number }).n;
      if (placed < (await liveChildren(tx, parent, opts.childcount))) rows = undefined;
    }
  }
  if (!rows && opts.ordering) {
    // Some children have no place: they follow the placed ones in creation order.
    rows = (await s
      .query(childrenPlacedFirstPage(tx, text))
      .all(parent, opts.ordering, opts.size, opts.top, ...chanParam)) as { id: number; gid: string }[];
  } else if (!rows) {
    rows = (await s.query(childrenByIdPage(tx, text)).all(parent, opts.size, opts.top, ...chanParam)) as {
      id: number;
      gid: string;
    }[];
  }
  const total =
    !inOne && !opts.deleted
      ? await liveChildren(tx, parent, opts.childcount)
      : ((await s.query(childrenCount(tx, text)).get(parent, ...chanParam)) as { n: number }).n;
  return { gids: rows.map((r) => r.gid), ids: rows.map((r) => r.id), total };
}

/** How many children of a parent are not deleted: its `childcount` when the caller has the row, else counted on the children index. */
async function liveChildren(tx: Tx, parent: string, childcount: number | undefined): Promise<number> {
  return (
    childcount ??
    (
      (await sessionOf(tx).query(LIVE_CHILDREN_COUNT).get(parent)) as {
        n: number;
      }
    ).n
  );
}

/** Rows of gids in the given order. */
export async function rowsInOrder(tx: Tx, projectGid: string, gids: string[]): Promise<Rec[]> {
  const m = new Map((await rowsByGids(tx, projectGid, gids)).map((r) => [r.gid, r]));
  return gids.map((g) => m.get(g)).filter((r): r is Rec => !!r);
}

/** Rows of ids (of this project) in the given order. */
export async function rowsByIds(tx: Tx, projectGid: string, ids: number[]): Promise<Rec[]> {
  if (!ids.length) return [];
  const raw = await sessionOf(tx).query<RecordRowText>(RECORDS_BY_IDS(tx)).all(JSON.stringify(ids), projectGid);
  const m = new Map(raw.map((r) => [r.id as number, r]));
  return ids
    .map((i) => m.get(i))
    .filter((r): r is RecordRowText => !!r)
    .map(recOf);
}

/** `records/children`: one page of a record's children (channel, ordering, page.top, page.size). */
export async function getChildren(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: Langs & {
    record?: unknown;
    channel?: unknown;
    ordering?: unknown;
    "page.top"?: unknown;
    "page.size"?: unknown;
  },
): Promise<Answer> {
  return await recordsRead(ctx, actor, projectGid, async (tx, view) => {
    const langs = view.languagesOf(input);
    const parent = await mustRecord(tx, projectGid, input.record);
    const page = pageOf(input, CHILDREN_PAGE);
    const c = await childrenIn(tx, parent.gid, {
      ordering: orderingOf(view, input.ordering),
      channel: channelOf(view, input.channel),
      childcount: parent.childcount,
      idsOnly: true,
      ...page,
    });
    const rows = await rowsByIds(tx, projectGid, c.ids);
    return withJsonText({
      result: { children: rows.map((r) => r.gid), "children.size": c.total },
      data: { records: await formsOf(tx, view, rows, { languages: langs, remember: true }) },
    });
  });
}

// ---------------------------------------------------------------------------------------------
// Create and update

/** The definition a new child of `parent` gets: like its last child, else the first child definition, else Base. */
export async function childDefinitionIn(
  tx: Tx,
  log: ChangeLog,
  view: SchemaView,
  parent: Rec,
  ordering?: string,
): Promise<string> {
  const last = ordering
    ? ((await sessionOf(tx).query(LAST_CHILD_DEFINITION_IN_ORDERING).get(parent.gid, ordering)) as
        | { d: string }
        | undefined)
    : ((await sessionOf(tx).query(LAST_CHILD_DEFINITION).get(parent.gid)) as { d: string } | undefined);
  if (last) {
    // A sibling's extended definition is its own: the new record gets the definition it extends.
    const base = ((await rowOf(tx, "definition", view.projectGid, last.d))?.spec as { extends?: string } | undefined)
      ?.extends;
    return base ?? last.d;
  }
  const first = await findEach(
    (await view.def(parent.definition)).childdefinitions,
    async (g) => !!(await rowOf(tx, "definition", view.projectGid, g)),
  );
  return first ?? (await baseDefinitionIn(tx, log, view.projectGid));
}

/** Creates a record as the last child of `parent` inside the caller's transaction. */
async function createRecordIn(
  tx: Tx,
  log: ChangeLog,
  view: SchemaView,
  touch: Touch,
  input: { parent?: unknown; ordering?: unknown; definition?: string },
): Promise<Rec> {
  const parent = await mustRecord(tx, view.projectGid, input.parent, "parent");
  const ordering = orderingOf(view, input.ordering);
  if (parent.status === DELETED)
    throw unprocessable("Can't work with this item", { reason: "The parent record is deleted", parent: parent.gid });
  const definition = input.definition ?? (await childDefinitionIn(tx, log, view, parent, ordering));
  return await insertRecordIn(tx, view, touch, { parent, definition, ordering });
}

/** `records/create`: a new last child of `parent`. */
export async function createRecord(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: Langs & { parent?: unknown; ordering?: unknown },
): Promise<Answer> {
  return await recordsWrite(ctx, actor, projectGid, async (tx, log, view, touch) => {
    const langs = view.languagesOf(input);
    const schema = schemaStamp(tx, projectGid);
    const rec = await createRecordIn(tx, log, view, touch, input);
    const rows = await rowsByGids(tx, projectGid, [rec.gid, rec.parent!]);
    // The Base definition made now (a project whose Base definition was deleted) is answered too.
    const made =
      schemaStamp(tx, projectGid) !== schema ? await rowOf(tx, "definition", projectGid, rec.definition) : undefined;
    return {
      result: { parent: rec.parent, record: rec.gid },
      data: {
        ...(made
          ? new Out()
              .add("definition", made)
              .add("layout", await layoutOf(tx, made))
              .data()
          : {}),
        records: await formsOf(tx, view, rows, { languages: langs }),
      },
    };
  });
}

/** The records kept in step with `rec`: its canonical and every link of that canonical. */
async function linkGroup(tx: Tx, projectGid: string, rec: Rec): Promise<Rec[]> {
  // Most records are alone: nothing else names them as canonical (counted on the index alone).
  if (
    !rec.isLink &&
    (
      (await sessionOf(tx).query(CANONICAL_USES).get(rec.gid)) as {
        n: number;
      }
    ).n <= 1
  )
    return [rec];
  return ((await sessionOf(tx).query(LINK_GROUP(tx)).all(projectGid, rec.canonical)) as RecordRowText[]).map(recOf);
}

/** Writes new values to a record and every record of its link group; search index and checks follow. */
export async function storeVals(
  tx: Tx,
  view: SchemaView,
  touch: Touch,
  rec: Rec,
  vals: Vals,
  definition = rec.definition,
  cleared: string[] = [],
  textChanged = true,
): Promise<Rec[]> {
  const group = await linkGroup(tx, view.projectGid, rec);
  const defChanged = definition !== rec.definition;
  const d = await view.def(definition);
  const t = now();
  for (const r of group) {
    const checks = checksOf(d, vals, view.languages, false, {
      ...r.checks,
      invalid: r.checks.invalid.filter((g) => !cleared.includes(g)),
    });
    const at = Math.max(t, r.updatedOn + 1e-6);
    if (definition === r.definition)
      await sessionOf(tx).query(VALS_UPDATE(tx)).run(JSON.stringify(vals), JSON.stringify(checks), at, r.id);
    else
      await sessionOf(tx)
        .query(VALS_DEFINITION_UPDATE(tx))
        .run(JSON.stringify(vals), JSON.stringify(checks), definition, at, r.id);
    r.vals = vals;
    r.definition = definition;
    r.updatedOn = at;
    if (textChanged || defChanged) await writeSearch(tx, view, r);
    touch.update(r.gid);
  }
  return group;
}

/**
 * Validates and applies one record's `fields` inside the caller's transaction (Excel rows, batch):
 * invalid fields are refused and reported, valid ones written to the record and its links.
 */
export async function updateRecordIn(
  tx: Tx,
  view: SchemaView,
  touch: Touch,
  rec: Rec,
  fields: unknown,
): Promise<{ report: ReportItem[]; group: Rec[] }> {
  const d = await view.def(rec.definition);
  const r = await applyFields(view, d, rec.gid, rec.vals, fields);
  if (!r.changed.length) return { report: r.report, group: [rec] };
  // Fields written now are valid: they leave the invalid list. The search text changes only with text fields.
  const textChanged = r.changed.some(
    (g) => SEARCHED.has(d.byGid.get(g)?.type ?? "") || !!d.byGid.get(g)?.labels || g === d.titlefield,
  );
  const group = await storeVals(tx, view, touch, rec, r.vals, rec.definition, r.changed, textChanged);
  return { report: r.report, group };
}

/** `records/update`: values per language; answers `report.validation` (errors refused, warnings applied). */
export async function updateRecord(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: Langs & { record?: unknown; fields?: unknown },
): Promise<Answer> {
  return await recordsWrite(ctx, actor, projectGid, async (tx, _log, view, touch) => {
    const langs = view.languagesOf(input);
    const rec = await mustRecord(tx, projectGid, input.record, "record", true);
    if (input.fields === undefined || input.fields === null) throw missing("fields");
    const { report, group } = await updateRecordIn(tx, view, touch, rec, input.fields);
    return {
      result: { record: rec.gid, "report.validation": report },
      data: { records: await formsOf(tx, view, group, { languages: langs }) },
    };
  });
}

export { checksOf };
