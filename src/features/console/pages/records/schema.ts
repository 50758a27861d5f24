// The schema as the records pages need it: a definition with its ordered fields, classes and
// layouts (read once per definition, forgotten when a schema sync item arrives), and the
// conversions between stored values and the text of an input.
import {
  recordSchemaApi,
  type ClassDef,
  type DefinitionDef,
  type FieldDef,
  type LayoutDef,
  type RecordItem,
} from "../../api";
import { live } from "../../live";
import { parseNumber } from "./messages";

export type DefView = {
  definition: DefinitionDef;
  /** The definition's ordered field list: its own fields, then each class's, each once. */
  fields: FieldDef[];
  layout: LayoutDef | null;
  classes: ClassDef[];
  classLayouts: Map<string, LayoutDef>;
};

const cache = new Map<string, Promise<DefView>>();
export const SCHEMA_TYPES = ["definitions", "classes", "fields", "layouts"];
live.on(SCHEMA_TYPES, () => cache.clear());

async function load(project: string, gid: string): Promise<DefView> {
  const definition = (await recordSchemaApi.definitions(project, [gid])).get(gid);
  if (!definition) throw new Error("The record's definition was not found");
  const classes = await recordSchemaApi.classes(project, definition.classes);
  const order: string[] = [];
  const seen = new Set<string>();
  for (const f of [...definition.fields, ...definition.classes.flatMap((c) => classes.get(c)?.fields ?? [])])
    if (!seen.has(f) && seen.add(f)) order.push(f);
  const layoutGids = [definition.layout, ...[...classes.values()].map((c) => c.layout)].filter((g): g is string => !!g);
  const [fields, layouts] = await Promise.all([
    recordSchemaApi.fields(project, order),
    recordSchemaApi.layouts(project, layoutGids),
  ]);
  const classList = definition.classes.map((c) => classes.get(c)).filter((c): c is ClassDef => !!c);
  return {
    definition,
    fields: order.map((g) => fields.get(g)).filter((f): f is FieldDef => !!f),
    layout: definition.layout ? (layouts.get(definition.layout) ?? null) : null,
    classes: classList,
    classLayouts: new Map(
      classList.filter((c) => c.layout && layouts.has(c.layout)).map((c) => [c.gid, layouts.get(c.layout!)!]),
    ),
  };
}

export function defView(project: string, gid: string): Promise<DefView> {
  const key = `${project}/${gid}`;
  let found = cache.get(key);
  if (!found) {
    found = load(project, gid);
    found.catch(() => cache.delete(key));
    cache.set(key, found);
  }
  return found;
}

export const labelOf = (x: { label: Record<string, string>; name: string }, lang: string) =>
  (Object.hasOwn(x.label, lang) && x.label[lang]) || Object.values(x.label).find(Boolean) || x.name;

/** A record's title in the first language that has one. */
export function titleOf(r: RecordItem | undefined, langs: string[]): string {
  if (!r) return "";
  for (const l of langs) if (Object.hasOwn(r.title, l) && r.title[l]) return r.title[l]!;
  return Object.values(r.title).find(Boolean) ?? "";
}

/** The stored value of a field in a language (the key, for a value list). */
export function rawValue(r: RecordItem, f: FieldDef, lang: string): unknown {
  const vals = Object.hasOwn(r.fields, lang) ? r.fields[lang]! : (Object.values(r.fields)[0] ?? {});
  if (f.options.values && Object.hasOwn(vals, `${f.name}/key`)) return vals[`${f.name}/key`];
  return Object.hasOwn(vals, f.name) ? vals[f.name] : null;
}

const LIST = new Set(["textlist", "imagelist", "filelist", "recordlist"]);
const JSONISH = new Set(["class", "classlist"]);
export const isList = (f: FieldDef) => LIST.has(f.type);

/** The text an input shows for a stored value. */
export function toDraft(f: FieldDef, v: unknown): string {
  if (v === null || v === undefined) return "";
  if (JSONISH.has(f.type)) return JSON.stringify(v, null, 1);
  if (Array.isArray(v)) return v.map(String).join("\n");
  return String(v);
}

/** The value to send for an input's text (text the type cannot read is sent as typed: the server says why it is refused). */
export function fromDraft(f: FieldDef, text: string): unknown {
  const t = text.trim();
  if (!t) return null;
  // Numbers as people type them in their locale; text that is not one is sent as typed, and the
  // server's answer becomes a message saying what is expected (messages.ts).
  if (f.type === "number" || f.type === "decimal") return parseNumber(t) ?? t;
  if (f.type === "boolean") return t === "true";
  if (LIST.has(f.type))
    return text
      .split("\n")
      .map((s) => s.trim())
      .filter(Boolean);
  if (JSONISH.has(f.type)) {
    try {
      return JSON.parse(t);
    } catch {
      return t;
    }
  }
  return f.type === "text" ? text : t;
}

/** A short text for a grid cell or a list. */
export function shownValue(r: RecordItem, f: FieldDef, lang: string): string {
  const v = rawValue(r, f, lang);
  if (v === null || v === undefined || v === "") return "";
  const values: { key: string; label: Record<string, string> }[] | undefined = f.options.values;
  const labelled = (k: unknown) => {
    const hit = values?.find((x) => x.key === k);
    return hit ? labelOf({ label: hit.label ?? {}, name: hit.key }, lang) : String(k);
  };
  if (f.type === "boolean") return v ? "Yes" : "No";
  if (Array.isArray(v)) return v.map(labelled).join(", ");
  if (typeof v === "object") return JSON.stringify(v);
  return values ? labelled(v) : String(v) + (f.unit ? ` ${f.unit}` : "");
}
