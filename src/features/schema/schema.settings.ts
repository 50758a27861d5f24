import type { Tx } from "../../db/connection";
import type { ChangeLog } from "../../db/mutate";
import type { LanguageHook, SettingRemovedHook } from "../../platform/context";
import { getProject, projectOptions } from "../projects/projects.api";
import { updateItem } from "./copies.service";
import { KINDS, rowsOf, type Kind, type SchemaRow } from "./items.service";

/**
 * How the schema follows the project settings (docs/settings.md), in the settings change's
 * transaction, every changed item with its UPDATE sync item (working copies and new items too):
 *
 * - `languages/add`: every localized member gains a key for the language, with the value of the
 *   closest language of the project (`nl` for `nl-be`, else the project's first language), as the
 *   reference does; a key already there (kept since the language was removed) is left as it is.
 * - `languages/remove` with `remove_values: true`: the language's key leaves every localized member.
 * - `fieldlists/delete`: definitions drop their field subset of that fieldlist.
 */

type Localized = Record<string, unknown>;
const isMap = (v: unknown): v is Localized => !!v && typeof v === "object" && !Array.isArray(v);

/**
 * A row's members with every localized map (label, a field's `initial` and value-list labels,
 * localized metadata values) passed through `edit`, which changes a map in place and returns
 * whether it did; undefined when nothing changed. The row itself is not touched.
 */
function editLocalized(
  kind: Kind,
  row: SchemaRow,
  edit: (m: Localized) => boolean,
): Pick<SchemaRow, "label" | "metadata" | "spec"> | undefined {
  if (kind === "layout") return undefined;
  const label = structuredClone(row.label) as Localized;
  const metadata = structuredClone(row.metadata) as Record<string, unknown>;
  const spec = structuredClone(row.spec) as Record<string, unknown>;
  let changed = edit(label);
  for (const entry of Object.values(metadata))
    if (isMap(entry) && entry.is_localized === true && isMap(entry.value)) changed = edit(entry.value) || changed;
  if (kind === "field") {
    if (isMap(spec.initial)) changed = edit(spec.initial) || changed;
    const values = isMap(spec.options) ? spec.options.values : undefined;
    if (Array.isArray(values))
      for (const v of values) if (isMap(v) && isMap(v.label)) changed = edit(v.label) || changed;
  }
  return changed ? { label: label as Record<string, string>, metadata, spec } : undefined;
}

/** Rewrites every schema row of a project that `edit` changes; returns how many maps changed. */
function editProject(tx: Tx, log: ChangeLog, projectGid: string, edit: (m: Localized) => boolean): number {
  let maps = 0;
  const counted = (m: Localized) => {
    const did = edit(m);
    if (did) maps++;
    return did;
  };
  for (const kind of KINDS)
    for (const row of rowsOf(tx, kind, projectGid)) {
      const next = editLocalized(kind, row, counted);
      if (next) updateItem(tx, log, kind, row, next);
    }
  return maps;
}

/** The language whose text a new language starts from: the same base language, else the first. */
export function closestLanguage(language: string, languages: readonly string[]): string | undefined {
  const others = languages.filter((l) => l !== language);
  const base = language.split("-")[0]!;
  return others.find((l) => l === base) ?? others.find((l) => l.split("-")[0] === base) ?? others[0];
}

export const schemaLanguageAdded: LanguageHook = (_ctx, tx, log, projectGid, language) => {
  const from = closestLanguage(language, projectOptions(getProject(tx, projectGid)!).languages);
  if (from === undefined) return 0;
  return editProject(tx, log, projectGid, (m) => {
    if (Object.hasOwn(m, language) || !Object.hasOwn(m, from)) return false;
    m[language] = structuredClone(m[from]);
    return true;
  });
};

export const schemaLanguageRemoved: LanguageHook = (_ctx, tx, log, projectGid, language) =>
  editProject(tx, log, projectGid, (m) => {
    if (!Object.hasOwn(m, language)) return false;
    delete m[language];
    return true;
  });

export const schemaSettingRemoved: SettingRemovedHook = (_ctx, tx, log, projectGid, kind, key) => {
  if (kind !== "fieldlist") return;
  for (const row of rowsOf(tx, "definition", projectGid)) {
    const lists = (row.spec as { fieldlists?: Record<string, string[]> }).fieldlists;
    if (!lists || !Object.hasOwn(lists, key)) continue;
    const rest = new Map(Object.entries(lists));
    rest.delete(key);
    updateItem(tx, log, "definition", row, { spec: { ...row.spec, fieldlists: Object.fromEntries(rest) } });
  }
};
