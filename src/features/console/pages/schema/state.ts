// The schema of one project in the page: loaded once, then kept current from the answers of the
// page's own changes and from `fields`/`classes`/`definitions`/`layouts` sync items (the items
// only name what changed; the page asks for those items again, or drops deleted ones).
import { useEffect, useRef, useState } from "preact/hooks";
import { schemaApi, type Schema, type SchemaAnswer, type SchemaItem, type SchemaKind } from "../../api";
import { useLive } from "../../store";

type Dicts = keyof Schema;
const DICT_OF_TYPE = new Map<string, Dicts>([
  ["fields", "fields"],
  ["classes", "classes"],
  ["definitions", "definitions"],
  ["layouts", "layouts"],
]);
const KIND_OF_DICT: Record<Dicts, SchemaKind | "layout"> = {
  fields: "field",
  classes: "class",
  definitions: "definition",
  layouts: "layout",
};
const DICTS: Dicts[] = ["fields", "classes", "definitions", "layouts"];
const DICT_OF_KIND = new Map<SchemaKind, Dicts>([
  ["field", "fields"],
  ["class", "classes"],
  ["definition", "definitions"],
]);

/** `next` with `part`'s items merged in (an older copy never replaces a newer one) and `gone` removed. */
function merged(s: Schema, part: Partial<Schema>, gone: Partial<Record<Dicts, Iterable<string>>> = {}): Schema {
  const next = { ...s };
  for (const d of DICTS) {
    const add = part[d];
    const del = gone[d];
    if ((!add || !add.size) && !del) continue;
    const map = new Map(s[d] as Map<string, { updatedOn: number }>);
    for (const g of del ?? []) map.delete(g);
    for (const [g, v] of (add ?? new Map()) as Map<string, { updatedOn: number }>) {
      const cur = map.get(g);
      if (!cur || cur.updatedOn <= v.updatedOn) map.set(g, v);
    }
    (next as Record<Dicts, unknown>)[d] = map;
  }
  return next;
}

export type SchemaState = {
  schema: Schema | null;
  error: unknown;
  reload: () => Promise<void>;
  /** Takes in an answer of a change; `gone` names items the change removed (a reverted working copy). */
  apply: (a: SchemaAnswer, gone?: { kind: SchemaKind; gid: string }) => void;
};

export function useSchema(project: string): SchemaState {
  const [schema, setSchema] = useState<Schema | null>(null);
  const [error, setError] = useState<unknown>(null);
  // Only the latest load counts; items that arrive while one runs make it load again after.
  const loads = useRef({ seq: 0, running: false, again: false });
  // The page's own changes, counted; and for each item one of them removed, the count it was
  // removed at. A read asked for before that change may still hold the item: it must not come back.
  const changes = useRef(0);
  const removedAt = useRef(new Map<string, number>());
  const reload = async (): Promise<void> => {
    const l = loads.current;
    const mine = ++l.seq;
    l.running = true;
    try {
      const s = await schemaApi.load(project);
      if (mine === l.seq) {
        setSchema(s);
        setError(null);
      }
    } catch (e) {
      if (mine === l.seq) setError(e);
    } finally {
      if (mine === l.seq) l.running = false;
    }
    // A change arrived while this load ran: load once more.
    if (mine === l.seq && l.again) {
      l.again = false;
      return reload();
    }
  };
  useEffect(() => {
    setSchema(null);
    void reload();
  }, [project]);

  useLive(["fields", "classes", "definitions", "layouts"], async (items) => {
    if (loads.current.running) {
      loads.current.again = true;
      return;
    }
    // The last item of each key tells its state: gone (DELETE) or to be read again.
    const last = new Map<string, { dict: Dicts; deleted: boolean }>();
    for (const i of items) {
      const dict = DICT_OF_TYPE.get(i.dataType);
      if (dict) last.set(`${dict}:${i.key}`, { dict, deleted: i.action === "DELETE" });
    }
    const gone: Record<Dicts, string[]> = { fields: [], classes: [], definitions: [], layouts: [] };
    const read: Record<Dicts, string[]> = { fields: [], classes: [], definitions: [], layouts: [] };
    for (const [k, v] of last) (v.deleted ? gone : read)[v.dict].push(k.slice(v.dict.length + 1));
    const asked = changes.current;
    try {
      const parts = await Promise.all(
        DICTS.map((d) => (read[d].length ? schemaApi.get(project, KIND_OF_DICT[d], read[d]) : null)),
      );
      const part: Partial<Schema> = {};
      DICTS.forEach((d, i) => {
        const got = parts[i]?.[d] as Map<string, unknown> | undefined;
        if (!got) return;
        // Removed by one of the page's changes after this read was asked for: the answer is older.
        for (const g of [...got.keys()]) if ((removedAt.current.get(`${d}:${g}`) ?? 0) > asked) got.delete(g);
        (part as Record<Dicts, unknown>)[d] = got;
        // Asked for but not answered: removed meanwhile.
        for (const g of read[d]) if (!got.has(g)) gone[d].push(g);
      });
      setSchema((s) => (s ? merged(s, part, gone) : s));
    } catch {
      void reload();
    }
  });

  const apply = (a: SchemaAnswer, g?: { kind: SchemaKind; gid: string }) => {
    const at = ++changes.current;
    const dict = g ? DICT_OF_KIND.get(g.kind) : undefined;
    if (g && dict) removedAt.current.set(`${dict}:${g.gid}`, at);
    setSchema((s) => (s ? merged(s, a.data, g && dict ? { [dict]: [g.gid] } : {}) : s));
    // A whole load on its way may hold the schema from before this change: drop it, load again.
    const l = loads.current;
    if (l.running) {
      l.seq++;
      void reload();
    }
  };
  return { schema, error, reload, apply };
}

/** One item as the lists show it: the committed (or new) item and its working copy, if any. */
export type Entry<T extends SchemaItem> = { key: string; committed: T | null; current: T };

/** The items of a kind, one entry each (a working copy stands in for its original), by name. */
export function entriesOf<T extends SchemaItem>(map: Map<string, T>): Entry<T>[] {
  const copyOf = new Map<string, T>();
  for (const it of map.values()) if (it.original) copyOf.set(it.original, it);
  const out: Entry<T>[] = [];
  for (const it of map.values()) {
    if (it.original && map.has(it.original)) continue;
    const wc = copyOf.get(it.gid);
    out.push({ key: it.gid, committed: it.isNew || it.isWorkingCopy ? null : it, current: wc ?? it });
  }
  return out.sort((a, b) => a.current.name.localeCompare(b.current.name));
}

/** The entry whose committed or new item (or working copy) has this gid. */
export function entryOf<T extends SchemaItem>(map: Map<string, T>, gid: string | null): Entry<T> | null {
  if (!gid) return null;
  const it = map.get(gid);
  if (!it) return null;
  const key = it.original && map.has(it.original) ? it.original : it.gid;
  return entriesOf(map).find((e) => e.key === key) ?? null;
}

/** A committed item's gid (what other items may name): the original of a working copy. */
export const committedGid = (it: SchemaItem | undefined) => (it ? (it.original ?? it.gid) : "");

/** An item's label in the language, else its name. */
export function labelOf(it: { name: string; label: Record<string, string> } | undefined, language: string): string {
  if (!it) return "(removed)";
  return it.label[language] || it.name;
}

/** The fields a record of a definition holds: its own, then each class's, each once. */
export function definitionFields(schema: Schema, def: { fields: string[]; classes: string[] }): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  const add = (g: string) => {
    if (!seen.has(g)) {
      seen.add(g);
      out.push(g);
    }
  };
  def.fields.forEach(add);
  for (const c of def.classes) schema.classes.get(c)?.fields.forEach(add);
  return out;
}
