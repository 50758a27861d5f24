import { AsyncLocalStorage } from "node:async_hooks";
import { and, eq, isNull } from "drizzle-orm";
import type { Actor } from "../../core/actor";
import { lastingAnswer, type Answer } from "../../core/answer";
import { missing, validationFailed } from "../../core/errors";
import { newGid, now } from "../../core/ids";
import type { Tx } from "../../db/connection";
import type { ChangeLog } from "../../db/mutate";
import type { Ctx, SchemaChange } from "../../platform/context";
import { readProject, readProjectPeek } from "../projects/projects.api";
import {
  cannot,
  definitionsUsingClass,
  definitionsUsingField,
  isCommitted,
  logItem,
  mustGet,
  NOUN,
  PLURAL,
  rowOf,
  rowsOf,
  peekSnapshotValue,
  snapshotValue,
  stateOf,
  TABLE,
  usageOf,
  workingCopyOf,
  type Kind,
} from "./items.service";
import type { SchemaRow } from "./schema.table";

/**
 * Working copies, the same for fields, classes and definitions (a layout follows its class or
 * definition):
 *
 * - The first change to a committed item makes a working copy: a new row with its own gid and
 *   `original` = the committed gid; the committed row stays as it was and stays usable. Further
 *   changes (given either gid) go to that one working copy. A class or definition working copy
 *   gets a working copy of its layout too.
 * - A new item (created or copied: `is_new`) is changed in place until its first commit.
 * - commit: the working copy's members are written into the committed row (same gid, so every
 *   class, definition and record using it sees the change), the copy is removed, and the commit
 *   hooks (`ctx.hooks.schemaCommitted`) run in the same transaction (records plug in there). A new item just stops being new.
 * - revert: the working copy is removed (a new item is removed altogether).
 * - save_as_new: the working copy becomes a committed item of its own; the original is untouched.
 * - delete: only an item nobody uses; its working copy and layouts go with it.
 *
 * Two people changing one working copy: every change is one transaction, applied in arrival
 * order; each member of a change replaces that member (last write wins per member), `updated_on`
 * tells which write was last.
 */

export type Form = Record<string, unknown>;

/** The reference's form of a row (the `data` dictionaries' entries). */
export function formOf(kind: Kind, r: SchemaRow): Form {
  const s = r.spec as Record<string, any>;
  const common = { gid: r.gid, original: r.original ?? null };
  const tail = { is_new: r.isNew, is_working_copy: !!r.original, created_on: r.createdOn, updated_on: r.updatedOn };
  switch (kind) {
    case "field":
      return {
        ...common,
        name: r.name,
        label: r.label,
        type: s.type,
        options: s.options ?? {},
        is_localized: !!s.is_localized,
        is_required: !!s.is_required,
        initial: s.initial ?? {},
        unit: s.unit ?? null,
        metadata: r.metadata,
        ...tail,
      };
    case "class":
      return {
        ...common,
        name: r.name,
        label: r.label,
        fields: s.fields ?? [],
        layout: s.layout ?? null,
        metadata: r.metadata,
        ...tail,
      };
    case "definition": {
      // An extended definition (a record's own, made by records/definition/...) names the base
      // definition it extends as its `original`, as the reference shows, so a client reads the base
      // fields through it; it is no draft to commit for a client (stored as a new item, see
      // docs/records.md), so `is_new` and `is_working_copy` are false.
      const extended = typeof s.extends === "string";
      return {
        ...common,
        ...(extended ? { original: s.extends } : {}),
        name: r.name,
        label: r.label,
        classes: s.classes ?? [],
        fields: s.fields ?? [],
        titlefield: s.titlefield ?? null,
        layout: s.layout ?? null,
        childdefinitions: s.childdefinitions ?? [],
        fieldlists: s.fieldlists ?? {},
        metadata: r.metadata,
        is_extended: extended,
        ...tail,
        ...(extended ? { is_new: false, is_working_copy: false } : {}),
      };
    }
    case "layout":
      return { ...common, name: r.name, root: s.root ?? null, components: s.components ?? {}, ...tail };
  }
}

/** Collects rows for an answer's `data`, keyed by dictionary name then gid. */
export class Out {
  private readonly dicts = new Map<Kind, Map<string, Form>>();
  add(kind: Kind, row: SchemaRow | undefined | null): this {
    if (!row) return this;
    let d = this.dicts.get(kind);
    if (!d) this.dicts.set(kind, (d = new Map()));
    d.set(row.gid, formOf(kind, row));
    return this;
  }
  /** Also declares `kind` so its dictionary is present (possibly empty). */
  has(kind: Kind): this {
    if (!this.dicts.has(kind)) this.dicts.set(kind, new Map());
    return this;
  }
  data(): Record<string, Record<string, Form>> {
    const out: Record<string, Record<string, Form>> = {};
    for (const [kind, d] of this.dicts) out[PLURAL[kind]] = Object.fromEntries(d);
    return out;
  }
}

/** `fields/get`, `classes/get`, `definitions/get`: one gid (`one`: the answer kept in the schema snapshot) or several (`many`, in the order asked). */
export async function getItems(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  kind: "field" | "class" | "definition",
  one: unknown,
  many: unknown,
  answerOf: (tx: Tx, row: SchemaRow) => Promise<Answer>,
): Promise<Answer> {
  if (typeof one === "string") {
    // Kept in the schema snapshot: with the caller's rule facts kept too, no read unit is needed.
    const key = `${PLURAL[kind]}/get ${one}`;
    return await readProjectPeek(
      ctx,
      actor,
      projectGid,
      "member",
      () => peekSnapshotValue<Answer>(ctx.db, projectGid, key),
      async ({ tx }) =>
        await snapshotValue(tx, projectGid, key, async () =>
          lastingAnswer(await answerOf(tx, await mustGet(tx, kind, projectGid, one))),
        ),
    );
  }
  return await readProject(ctx, actor, projectGid, "member", async ({ tx }) => {
    if (!Array.isArray(many)) throw missing(kind);
    const rows = new Map(
      (
        await rowsOf(
          tx,
          kind,
          projectGid,
          many.filter((g): g is string => typeof g === "string"),
        )
      ).map((r) => [r.gid, r]),
    );
    const found = many.filter((g): g is string => typeof g === "string" && rows.has(g));
    const out = new Out().has(kind);
    for (const g of found) out.add(kind, rows.get(g));
    return { result: { [PLURAL[kind]]: found }, data: out.data() };
  });
}

type NewItem = {
  name: string;
  label?: Record<string, string>;
  metadata?: Record<string, unknown>;
  spec: Record<string, unknown>;
  isNew: boolean;
  original?: string | null;
};

export async function insertItem(
  tx: Tx,
  log: ChangeLog,
  kind: Kind,
  projectGid: string,
  v: NewItem,
): Promise<SchemaRow> {
  const t = now();
  const row = await tx
    .insert(TABLE[kind])
    .values({
      gid: newGid(),
      projectGid,
      original: v.original ?? null,
      isNew: v.isNew,
      name: v.name,
      label: v.label ?? {},
      metadata: v.metadata ?? {},
      spec: v.spec,
      createdOn: t,
      updatedOn: t,
    })
    .returning()
    .get();
  logItem(log, projectGid, "INSERT", kind, row.gid);
  return row;
}

type Patch = Partial<Pick<SchemaRow, "name" | "label" | "metadata" | "spec" | "original" | "isNew">>;

export async function updateItem(tx: Tx, log: ChangeLog, kind: Kind, row: SchemaRow, patch: Patch): Promise<SchemaRow> {
  const t = TABLE[kind];
  const out = (await tx
    .update(t)
    .set({ ...patch, updatedOn: Math.max(now(), row.updatedOn + 1e-6) })
    .where(eq(t.id, row.id))
    .returning()
    .get())!;
  logItem(log, row.projectGid, "UPDATE", kind, row.gid);
  return out;
}

export async function removeItem(tx: Tx, log: ChangeLog, kind: Kind, row: SchemaRow): Promise<void> {
  const t = TABLE[kind];
  await tx.delete(t).where(eq(t.id, row.id)).run();
  logItem(log, row.projectGid, "DELETE", kind, row.gid);
}

const hasLayout = (kind: Kind) => kind === "class" || kind === "definition";
export const layoutOf = async (tx: Tx, row: SchemaRow) =>
  await rowOf(tx, "layout", row.projectGid, (row.spec as { layout?: string }).layout);

/** A name not used by another item of the kind: `base`, else `base_2`, `base_3`, ... */
export async function freeName(
  tx: Tx,
  kind: Kind,
  projectGid: string,
  base: string,
  exceptGids: string[] = [],
): Promise<string> {
  const taken = new Set(
    (await rowsOf(tx, kind, projectGid))
      .filter((r) => !exceptGids.includes(r.gid) && !exceptGids.includes(r.original ?? ""))
      .map((r) => r.name),
  );
  if (!taken.has(base)) return base;
  for (let i = 2; ; i++) if (!taken.has(`${base}_${i}`)) return `${base}_${i}`;
}

/** 1001 when another committed item of the kind has the name (a working copy shares its original's). */
async function requireUniqueName(
  tx: Tx,
  kind: Kind,
  projectGid: string,
  name: string,
  exceptGids: string[],
): Promise<void> {
  const t = TABLE[kind];
  const clash = (
    await tx
      .select({ gid: t.gid })
      .from(t)
      .where(and(eq(t.projectGid, projectGid), eq(t.name, name), isNull(t.original), eq(t.isNew, false)))
      .all()
  ).filter((r) => !exceptGids.includes(r.gid));
  if (clash.length)
    throw validationFailed([
      { field: "name", rule: "unique", message: `another committed ${NOUN[kind].toLowerCase()} is named ${name}` },
    ]);
}

/**
 * The row a change goes to: the item itself when new or a working copy; for a committed item its
 * working copy, made now when there is none (`made` then holds the original, for the answer).
 */
export async function editable(
  tx: Tx,
  log: ChangeLog,
  kind: Kind,
  projectGid: string,
  gid: unknown,
  member = kind as string,
): Promise<{ row: SchemaRow; made?: SchemaRow }> {
  const row = await mustGet(tx, kind, projectGid, gid, member);
  refuseExtended(kind, row);
  if (!isCommitted(row)) return { row };
  const wc = await workingCopyOf(tx, kind, projectGid, row.gid);
  if (wc) return { row: wc };
  const spec = { ...(row.spec as Record<string, unknown>) };
  if (hasLayout(kind)) {
    const layout = await layoutOf(tx, row);
    if (layout) {
      const lwc =
        (await workingCopyOf(tx, "layout", projectGid, layout.gid)) ??
        (await insertItem(tx, log, "layout", projectGid, {
          name: layout.name,
          spec: layout.spec,
          isNew: false,
          original: layout.gid,
        }));
      spec.layout = lwc.gid;
    }
  }
  const copy = await insertItem(tx, log, kind, projectGid, {
    name: row.name,
    label: row.label,
    metadata: row.metadata,
    spec,
    isNew: false,
    original: row.gid,
  });
  return { row: copy, made: row };
}

/** Set in the asynchronous context of an `asRecordExtension` call (requests interleave: not a counter). */
const extending = new AsyncLocalStorage<true>();

/**
 * Runs `fn` as a change of a record's extended definition (records/definition/..., the only way to
 * change one): the schema's own endpoints refuse extended definitions (`refuseExtended`), as the
 * reference says ("use the records/definition api").
 */
export function asRecordExtension<T>(fn: () => Promise<T>): Promise<T> {
  return extending.run(true, fn);
}

/** 422 for an extended definition changed through the schema endpoints (modify, lists, commit, ...). */
function refuseExtended(kind: Kind, row: SchemaRow): void {
  if (
    kind !== "definition" ||
    extending.getStore() === true ||
    typeof (row.spec as { extends?: unknown }).extends !== "string"
  )
    return;
  throw cannot("An extended definition is changed through records/definition/..., not the definitions endpoints", {
    definition: row.gid,
  });
}

/** The row a working-copy action (commit, revert, save_as_new) works on: given either gid. */
async function pending(
  tx: Tx,
  kind: Kind,
  projectGid: string,
  gid: unknown,
  what: string,
): Promise<SchemaRow | { unchanged: SchemaRow }> {
  const row = await mustGet(tx, kind, projectGid, gid);
  refuseExtended(kind, row);
  if (!isCommitted(row)) return row;
  const wc = await workingCopyOf(tx, kind, projectGid, row.gid);
  if (wc) return wc;
  // The reference: an unchanged field is "not saved either" (answered as it is); an unmodified
  // class or definition "cannot" be saved as new.
  if (what === "save_as_new" && kind === "field") return { unchanged: row };
  throw cannot(`The ${NOUN[kind].toLowerCase()} has no changes to ${what === "save_as_new" ? "save as new" : what}`, {
    [kind]: row.gid,
  });
}

// ---------------------------------------------------------------------------------------------
// Commits: how records (and anything else) follow a committed change, through `ctx.hooks.schemaCommitted`

/** What a commit changes (src/platform/context.ts): the committed gid, its form before and after, who uses it. */
type SchemaCommit = SchemaChange;

/** The ordered field gids of a definition spec: its own fields, then each class's (committed) fields; each once. */
export async function fieldListOfSpec(
  tx: Tx,
  projectGid: string,
  spec: Record<string, unknown>,
  classOverride?: Map<string, string[]>,
): Promise<string[]> {
  const out: string[] = [];
  const seen = new Set<string>();
  const push = (g: unknown) => {
    if (typeof g === "string" && !seen.has(g)) {
      seen.add(g);
      out.push(g);
    }
  };
  for (const f of (spec.fields as string[] | undefined) ?? []) push(f);
  const classGids = (spec.classes as string[] | undefined) ?? [];
  const rows = new Map((await rowsOf(tx, "class", projectGid, classGids)).map((r) => [r.gid, r]));
  for (const c of classGids) {
    const list = classOverride?.get(c) ?? (rows.get(c)?.spec as { fields?: string[] } | undefined)?.fields ?? [];
    for (const f of list) push(f);
  }
  return out;
}

/** The change record of committing `next` (members to be written) over `committed` (null when new). */
async function describe(
  tx: Tx,
  kind: Exclude<Kind, "layout">,
  committed: SchemaRow | null,
  next: SchemaRow,
): Promise<SchemaCommit> {
  const projectGid = next.projectGid;
  const gid = committed?.gid ?? next.gid;
  const after = { ...formOf(kind, next), gid, original: null, is_new: false, is_working_copy: false };
  let cls: string[] = [];
  let defs: string[] = [];
  const dropped: Record<string, string[]> = {};
  if (kind === "field") ({ classes: cls, definitions: defs } = await definitionsUsingField(tx, projectGid, gid));
  if (kind === "class" && committed) {
    defs = await definitionsUsingClass(tx, projectGid, gid);
    const override = new Map([[gid, (next.spec as { fields?: string[] }).fields ?? []]]);
    for (const d of await rowsOf(tx, "definition", projectGid, defs)) {
      const before = await fieldListOfSpec(tx, projectGid, d.spec);
      const nowList = new Set(await fieldListOfSpec(tx, projectGid, d.spec, override));
      const lost = before.filter((f) => !nowList.has(f));
      if (lost.length) dropped[d.gid] = lost;
    }
  }
  if (kind === "definition" && committed) {
    defs = [gid];
    const before = await fieldListOfSpec(tx, projectGid, committed.spec);
    const nowList = new Set(await fieldListOfSpec(tx, projectGid, next.spec));
    const lost = before.filter((f) => !nowList.has(f));
    if (lost.length) dropped[gid] = lost;
  }
  return {
    projectGid,
    kind,
    gid,
    before: committed ? formOf(kind, committed) : null,
    after,
    classes: cls,
    definitions: defs,
    droppedFields: dropped,
  };
}

/** The dry-run answer of a commit: what would change and what would be dropped. */
export async function commitPreview(
  ctx: Ctx,
  tx: Tx,
  kind: Exclude<Kind, "layout">,
  projectGid: string,
  gid: unknown,
  check?: (row: SchemaRow) => Promise<void>,
) {
  const row = (await pending(tx, kind, projectGid, gid, "commit")) as SchemaRow;
  await check?.(row);
  const committed = row.original ? await mustGet(tx, kind, projectGid, row.original) : null;
  const change = await describe(tx, kind, committed, row);
  const hooks: Record<string, unknown> = {};
  for (const h of ctx.hooks.schemaCommitted) if (h.preview) Object.assign(hooks, await h.preview(ctx, tx, change));
  const changed = committed
    ? Object.keys(change.after).filter(
        (k) =>
          !["gid", "original", "is_new", "is_working_copy", "created_on", "updated_on", "layout"].includes(k) &&
          JSON.stringify(change.after[k]) !== JSON.stringify(change.before![k]),
      )
    : [];
  return {
    gid: committed?.gid ?? row.gid,
    report: {
      changed_members: changed,
      classes: change.classes,
      definitions: change.definitions,
      would_drop: { fields: change.droppedFields, ...hooks },
    },
  };
}

/**
 * Commits the working copy (or new item) named by `gid` (either gid); `check` runs the kind's
 * rules first. Returns the committed row, its layout and the jobs hooks started.
 */
export async function commitItem(
  ctx: Ctx,
  tx: Tx,
  log: ChangeLog,
  kind: Exclude<Kind, "layout">,
  projectGid: string,
  gid: unknown,
  check?: (row: SchemaRow) => Promise<void>,
) {
  const row = (await pending(tx, kind, projectGid, gid, "commit")) as SchemaRow;
  await check?.(row);
  const committed = row.original ? await mustGet(tx, kind, projectGid, row.original) : null;
  await requireUniqueName(tx, kind, projectGid, row.name, [row.gid, committed?.gid ?? ""]);
  const change = await describe(tx, kind, committed, row);
  let result: SchemaRow;
  let layout: SchemaRow | undefined;
  if (!committed) {
    result = await updateItem(tx, log, kind, row, { isNew: false });
    const l = hasLayout(kind) ? await layoutOf(tx, result) : undefined;
    layout = l && l.isNew ? await updateItem(tx, log, "layout", l, { isNew: false }) : l;
  } else {
    const spec = { ...(row.spec as Record<string, unknown>) };
    if (hasLayout(kind)) {
      const wcLayout = await layoutOf(tx, row);
      const origLayout = await layoutOf(tx, committed);
      if (wcLayout && origLayout && wcLayout.original === origLayout.gid) {
        layout = await updateItem(tx, log, "layout", origLayout, { name: wcLayout.name, spec: wcLayout.spec });
        await removeItem(tx, log, "layout", wcLayout);
        spec.layout = origLayout.gid;
      } else layout = wcLayout;
    }
    await removeItem(tx, log, kind, row);
    result = await updateItem(tx, log, kind, committed, {
      name: row.name,
      label: row.label,
      metadata: row.metadata,
      spec,
    });
  }
  // The items using it changed too: say so, so clients reload them.
  const seen = new Set<string>();
  for (const c of change.classes) {
    if (seen.has(c)) continue;
    seen.add(c);
    logItem(log, projectGid, "UPDATE", "class", c);
  }
  for (const d of change.definitions) {
    if (d === result.gid || seen.has(d)) continue;
    seen.add(d);
    logItem(log, projectGid, "UPDATE", "definition", d);
  }
  const jobs: string[] = [];
  for (const h of ctx.hooks.schemaCommitted) {
    const r = await h.apply(ctx, tx, log, change);
    if (r && r.job) jobs.push(r.job);
  }
  return { row: result, layout, jobs };
}

/** Reverts: drops the working copy (or the new item). Returns the original row, or null for a new item. */
export async function revertItem(
  tx: Tx,
  log: ChangeLog,
  kind: Exclude<Kind, "layout">,
  projectGid: string,
  gid: unknown,
): Promise<SchemaRow | null> {
  const row = (await pending(tx, kind, projectGid, gid, "revert")) as SchemaRow;
  if (hasLayout(kind)) {
    const l = await layoutOf(tx, row);
    if (l && !isCommitted(l)) await removeItem(tx, log, "layout", l);
  }
  await removeItem(tx, log, kind, row);
  return row.original ? await mustGet(tx, kind, projectGid, row.original) : null;
}

/**
 * Saves the working copy as a committed item of its own (its gid); the original stays as it was.
 * A name still equal to another committed item's gets a `_2`, `_3`... suffix. A new item is
 * committed; an unchanged committed field is returned as it is, an unchanged class or definition
 * is a 422 (see `pending`).
 */
export async function saveAsNewItem(
  tx: Tx,
  log: ChangeLog,
  kind: Exclude<Kind, "layout">,
  projectGid: string,
  gid: unknown,
  check?: (row: SchemaRow) => Promise<void>,
) {
  const p = await pending(tx, kind, projectGid, gid, "save_as_new");
  if ("unchanged" in p)
    return { row: p.unchanged, layout: hasLayout(kind) ? await layoutOf(tx, p.unchanged) : undefined };
  await check?.({ ...p, original: null });
  const name = await freeName(tx, kind, projectGid, p.name, [p.gid]);
  const row = await updateItem(tx, log, kind, p, { original: null, isNew: false, name });
  let layout = hasLayout(kind) ? await layoutOf(tx, row) : undefined;
  if (layout && !isCommitted(layout))
    layout = await updateItem(tx, log, "layout", layout, { original: null, isNew: false });
  return { row, layout };
}

/** Copies a committed item (and its layout) as a new item named `<name>_copy`. */
export async function copyItem(
  tx: Tx,
  log: ChangeLog,
  kind: Exclude<Kind, "layout">,
  projectGid: string,
  gid: unknown,
) {
  const src = await mustGet(tx, kind, projectGid, gid);
  if (!isCommitted(src))
    throw cannot(
      `A ${stateOf(src) === "new" ? "new" : "working copy of a"} ${NOUN[kind].toLowerCase()} cannot be copied; commit it first`,
      { [kind]: src.gid },
    );
  const spec = { ...(src.spec as Record<string, unknown>) };
  let layout: SchemaRow | undefined;
  if (hasLayout(kind)) {
    const l = await layoutOf(tx, src);
    if (l) {
      layout = await insertItem(tx, log, "layout", projectGid, { name: l.name, spec: l.spec, isNew: true });
      spec.layout = layout.gid;
    }
  }
  const row = await insertItem(tx, log, kind, projectGid, {
    name: await freeName(tx, kind, projectGid, `${src.name}_copy`),
    label: src.label,
    metadata: src.metadata,
    spec,
    isNew: true,
  });
  return { row, layout };
}

/**
 * Deletes an item nobody uses (given either gid): the committed or new row, its working copy and
 * their layouts. A used item is a 422 whose info names every place it is used (`used_by`).
 */
export async function deleteItem(
  ctx: Ctx,
  tx: Tx,
  log: ChangeLog,
  kind: Exclude<Kind, "layout">,
  projectGid: string,
  gid: unknown,
): Promise<string> {
  let row = await mustGet(tx, kind, projectGid, gid);
  if (row.original) row = await mustGet(tx, kind, projectGid, row.original);
  const wc = await workingCopyOf(tx, kind, projectGid, row.gid);
  const own = new Set([row.gid, wc?.gid]);
  const usage = await usageOf(ctx, tx, kind, projectGid, row.gid);
  const used: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(usage)) {
    const list = v.filter((g) => !own.has(g));
    if (list.length) used[k] = list;
  }
  if (Object.keys(used).length)
    throw cannot(`The ${NOUN[kind].toLowerCase()} is in use`, { [kind]: row.gid, used_by: used });
  for (const r of [wc, row]) {
    if (!r) continue;
    if (hasLayout(kind)) {
      const l = await layoutOf(tx, r);
      if (l) await removeItem(tx, log, "layout", l);
    }
    await removeItem(tx, log, kind, r);
  }
  return row.gid;
}
