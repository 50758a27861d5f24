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
 * - `languages/remove`: the language's key leaves every localized member; without `remove_values`
 *   its text is kept in the row (not shown) and comes back when the language is added again.
 * - `fieldlists/delete`: definitions drop their field subset of that fieldlist.
 */

type Localized = Record<string, unknown>;
const isMap = (v: unknown): v is Localized => !!v && typeof v === "object" && !Array.isArray(v);

/**
 * Where a row keeps the text of languages the project removed without `remove_values`: in its
 * spec, by language, then by the place of the localized map (`label`, `initial`,
 * `metadata.<name>`, `values.<key>`). No form shows the spec member, and copies of the row carry
 * it along; added again, the language gets its text back from here.
 */
const KEPT = "kept_languages";
type Kept = Record<string, Record<string, unknown>>;

/**
 * A row's members with every localized map (label, a field's `initial` and value-list labels,
 * localized metadata values) passed through `edit` with the map's place and the row's kept text
 * (changed in place by `edit`, which returns whether it changed anything); undefined when nothing
 * changed. The row itself is not touched.
 */
function editLocalized(
  kind: Kind,
  row: SchemaRow,
  edit: (m: Localized, place: string, kept: Kept) => boolean,
): Pick<SchemaRow, "label" | "metadata" | "spec"> | undefined {
  if (kind === "layout") return undefined;
  const label = structuredClone(row.label) as Localized;
  const metadata = structuredClone(row.metadata) as Record<string, unknown>;
  const spec = structuredClone(row.spec) as Record<string, unknown>;
  const kept: Kept = isMap(spec[KEPT]) ? (spec[KEPT] as Kept) : {};
  let changed = edit(label, "label", kept);
  for (const [name, entry] of Object.entries(metadata))
    if (isMap(entry) && entry.is_localized === true && isMap(entry.value))
      changed = edit(entry.value, `metadata.${name}`, kept) || changed;
  if (kind === "field") {
    if (isMap(spec.initial)) changed = edit(spec.initial, "initial", kept) || changed;
    const values = isMap(spec.options) ? spec.options.values : undefined;
    if (Array.isArray(values))
      values.forEach((v, i) => {
        if (isMap(v) && isMap(v.label))
          changed = edit(v.label, `values.${typeof v.key === "string" ? v.key : `#${i}`}`, kept) || changed;
      });
  }
  if (!changed) return undefined;
  for (const [language, text] of Object.entries(kept)) if (Object.keys(text).length === 0) delete kept[language];
  if (Object.keys(kept).length) spec[KEPT] = kept;
  else delete spec[KEPT];
  return { label: label as Record<string, string>, metadata, spec };
}

/** Rewrites every schema row of a project that `edit` changes; returns how many maps changed. */
async function editProject(
  tx: Tx,
  log: ChangeLog,
  projectGid: string,
  edit: (m: Localized, place: string, kept: Kept) => boolean,
): Promise<number> {
  let maps = 0;
  const counted = (m: Localized, place: string, kept: Kept) => {
    const did = edit(m, place, kept);
    if (did) maps++;
    return did;
  };
  for (const kind of KINDS)
    for (const row of await rowsOf(tx, kind, projectGid)) {
      const next = editLocalized(kind, row, counted);
      if (next) await updateItem(tx, log, kind, row, next);
    }
  return maps;
}

/** The language whose text a new language starts from: the same base language, else the first. */
export function closestLanguage(language: string, languages: readonly string[]): string | undefined {
  const others = languages.filter((l) => l !== language);
  const base = language.split("-")[0]!;
  return others.find((l) => l === base) ?? others.find((l) => l.split("-")[0] === base) ?? others[0];
}

export const schemaLanguageAdded: LanguageHook = async (_ctx, tx, log, projectGid, language) => {
  const from = closestLanguage(language, projectOptions((await getProject(tx, projectGid))!).languages);
  return await editProject(tx, log, projectGid, (m, place, kept) => {
    // Text kept since the language was removed comes back; else the closest language's is copied.
    const mine = Object.hasOwn(kept, language) ? kept[language]! : undefined;
    if (mine && Object.hasOwn(mine, place)) {
      m[language] = mine[place];
      delete mine[place];
      return true;
    }
    if (from === undefined || Object.hasOwn(m, language) || !Object.hasOwn(m, from)) return false;
    m[language] = structuredClone(m[from]);
    return true;
  });
};

/**
 * A language left the project: its key leaves every localized map, so no answer shows it. With
 * `remove_values` the text goes (with any text kept from an earlier removal); without, it is kept
 * in the row (KEPT) for when the language is added again. Either way each changed row gets its
 * UPDATE sync item (its form changed) and the schema's cached forms are made again.
 */
export const schemaLanguageRemoved: LanguageHook = async (_ctx, tx, log, projectGid, language, keep) =>
  await editProject(tx, log, projectGid, (m, place, kept) => {
    let changed = false;
    if (!keep && Object.hasOwn(kept, language)) {
      delete kept[language];
      changed = true;
    }
    if (!Object.hasOwn(m, language)) return changed;
    if (keep) (kept[language] ??= {})[place] = m[language];
    delete m[language];
    return true;
  });

export const schemaSettingRemoved: SettingRemovedHook = async (_ctx, tx, log, projectGid, kind, key) => {
  if (kind !== "fieldlist") return;
  for (const row of await rowsOf(tx, "definition", projectGid)) {
    const lists = (row.spec as { fieldlists?: Record<string, string[]> }).fieldlists;
    if (!lists || !Object.hasOwn(lists, key)) continue;
    const rest = new Map(Object.entries(lists));
    rest.delete(key);
    await updateItem(tx, log, "definition", row, { spec: { ...row.spec, fieldlists: Object.fromEntries(rest) } });
  }
};
