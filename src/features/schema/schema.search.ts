import type { Ctx } from "../../context";
import type { Tx } from "../../db/connection";
import { badRequest } from "../../http/errors";
import { pageSize } from "../../lib/page";
import { registerSelectionResolver, type SelectionItem } from "../../services/selection.service";
import { projectOptions } from "../settings/settings.options";
import { PLURAL, rowsOf, schemaRead, stateOf, TABLE, type Actor, type Kind } from "./schema.core";
import type { SchemaRow } from "./schema.table";
import { Out } from "./working-copies";

/**
 * `schema/search` over definitions, classes and fields, and the `schema` selection resolver of
 * the bulk operations. The filter is evaluated by `matchFilter`, a small own subset of the
 * reference's filter language (and/or/not; name, label: q|is; type: is; is_committed, is_new,
 * is_working_copy: is_true|is_false; metadata: has|has_not). When the shared filter language
 * (src/core/filter.ts) lands, `matchFilter` is the one place to swap.
 */

export type SchemaItemType = "definition" | "class" | "field";
const SEARCHED: SchemaItemType[] = ["definition", "class", "field"];
const KIND_INDEX: Record<SchemaItemType, number> = { definition: 0, class: 1, field: 2 };

/** A stable integer key across the three tables (row id × 4 + kind), for selection paging. */
export const selectionId = (type: SchemaItemType, row: SchemaRow) => row.id * 4 + KIND_INDEX[type];

type Entry = { type: SchemaItemType; row: SchemaRow };

const badFilter = (reason: string) => badRequest("Invalid parameter", { "Invalid parameter": "filter", reason });

const textOf = (e: Entry, language: string) => ({
  name: e.row.name.toLowerCase(),
  label: String((e.row.label as Record<string, string>)[language] ?? "").toLowerCase(),
});

/** `q`: +term must occur, -term must not, other terms: at least one must occur (in name, label or field type). */
function matchQ(haystack: string, q: string): boolean {
  const terms = q.toLowerCase().split(/\s+/).filter(Boolean);
  const plain = terms.filter((t) => !t.startsWith("+") && !t.startsWith("-"));
  for (const t of terms) {
    if (t.startsWith("+") && t.length > 1 && !haystack.includes(t.slice(1))) return false;
    if (t.startsWith("-") && t.length > 1 && haystack.includes(t.slice(1))) return false;
  }
  return !plain.length || plain.some((t) => haystack.includes(t));
}

/** True when the entry matches the filter (the reference's triplet form). Unknown properties: 400. */
export function matchFilter(e: Entry, filter: unknown, language: string): boolean {
  if (!Array.isArray(filter) || typeof filter[0] !== "string") throw badFilter("a filter is [property, operator, operands]");
  const [property, operator, operand] = filter as [string, unknown, unknown];
  switch (property) {
    case "and":
    case "or": {
      if (!Array.isArray(operand)) throw badFilter(`${property} takes a list of filters`);
      const parts = operand.map((f) => matchFilter(e, f, language));
      return property === "and" ? parts.every(Boolean) : parts.some(Boolean);
    }
    case "not":
      return !matchFilter(e, operand, language);
    case "name":
    case "label": {
      const text = textOf(e, language)[property];
      if (typeof operand !== "string") throw badFilter(`${property} takes a string`);
      if (operator === "is") return text === operand.toLowerCase();
      if (operator === "q") return matchQ(text, operand);
      throw badFilter(`${property} operators: q, is`);
    }
    case "type": {
      if (operator !== "is" || typeof operand !== "string") throw badFilter("type is <definition|class|field|field type>");
      return e.type === operand || (e.type === "field" && (e.row.spec as { type?: string }).type === operand);
    }
    case "is_committed":
    case "is_new":
    case "is_working_copy": {
      const state = stateOf(e.row);
      const v = property === "is_committed" ? state === "committed" : property === "is_new" ? state === "new" : state === "working_copy";
      if (operator === "is_true") return v;
      if (operator === "is_false") return !v;
      throw badFilter(`${property} operators: is_true, is_false`);
    }
    case "metadata": {
      if (typeof operand !== "string") throw badFilter("metadata takes a metadata name");
      const has = Object.hasOwn(e.row.metadata as object, operand);
      if (operator === "has") return has;
      if (operator === "has_not") return !has;
      throw badFilter("metadata operators: has, has_not");
    }
    default:
      throw badFilter(`unknown filter property ${property}`);
  }
}

export type SearchInput = { language?: string; q?: string; filter?: unknown };

/** Every schema item matching `q` and `filter`, definitions first, then classes, then fields. */
export function searchEntries(tx: Tx, projectGid: string, languageIn: unknown, input: SearchInput): Entry[] {
  const hasQ = typeof input.q === "string" && input.q.trim() !== "";
  const hasFilter = input.filter !== undefined && input.filter !== null && !(Array.isArray(input.filter) && !input.filter.length);
  if (!hasQ && !hasFilter) return [];
  const language = typeof languageIn === "string" && languageIn ? languageIn : "";
  const out: Entry[] = [];
  for (const type of SEARCHED) {
    for (const row of rowsOf(tx, type, projectGid)) {
      const e = { type, row };
      if (hasQ) {
        const t = textOf(e, language);
        const hay = `${t.name} ${t.label} ${type === "field" ? (row.spec as { type?: string }).type : ""}`;
        if (!matchQ(hay, input.q!)) continue;
      }
      if (hasFilter && !matchFilter(e, input.filter, language)) continue;
      out.push(e);
    }
  }
  return out;
}

/** The answer for a list of entries: result items `{type, item}` and the data dictionaries. */
export function entriesAnswer(entries: Entry[]) {
  const out = new Out().has("definition").has("class").has("field");
  for (const e of entries) out.add(e.type, e.row);
  return { items: entries.map((e) => ({ type: e.type, item: e.row.gid })), data: out.data() };
}

/** `schema/search`: `language`, `q` and/or `filter`, paged by `page.top` and `page.size` (default 10,000). */
export function searchSchema(ctx: Ctx, actor: Actor, projectGid: string, input: SearchInput & { "page.top"?: unknown; "page.size"?: unknown }) {
  return schemaRead(ctx, actor, projectGid, (tx, project) => {
    const language = input.language ?? projectOptions(project).languages[0];
    const all = searchEntries(tx, projectGid, language, input);
    const top = input["page.top"] ?? 0;
    if (typeof top !== "number" || !Number.isInteger(top) || top < 0) throw badRequest("Invalid parameter", { "Invalid parameter": "page.top", expected: "an integer from 0" });
    const size = pageSize(input["page.size"], 10_000, 10_000);
    const a = entriesAnswer(all.slice(top, top + size));
    return { result: { schema_items: a.items, "schema_items.size": all.length }, data: a.data };
  });
}

/** The `schema` selection: gids of definitions, classes or fields, and search elements; no children form. */
registerSelectionResolver("schema", {
  noun: "Schema item",
  byGids(tx, projectGid, gids) {
    const items: SelectionItem[] = [];
    const found = new Set<string>();
    for (const type of SEARCHED)
      for (const r of rowsOf(tx, type, projectGid, gids)) {
        items.push({ id: selectionId(type, r), gid: r.gid });
        found.add(r.gid);
      }
    return { items, missing: gids.filter((g) => !found.has(g)) };
  },
  search(tx, projectGid, search) {
    return searchEntries(tx, projectGid, search.language, search as SearchInput).map((e) => ({ id: selectionId(e.type, e.row), gid: e.row.gid }));
  },
});

/** The type and row of a selected item (its id says which table). */
export function entryOfSelection(tx: Tx, projectGid: string, item: SelectionItem): Entry | undefined {
  const type = SEARCHED[item.id % 4];
  if (!type) return undefined;
  const t = TABLE[type as Kind];
  const row = rowsOf(tx, type, projectGid, [item.gid])[0];
  return row && t ? { type, row } : undefined;
}

export { PLURAL };
