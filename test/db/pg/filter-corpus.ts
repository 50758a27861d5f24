// The filter test's corpus: a small table of items, a domain over it for each dialect, and a table
// of filters (test/db/pg/filter.test.ts).
import { sql } from "drizzle-orm";
import { jsonKeyPath, makeDomain, type FieldSpec } from "../../../src/core/filter";

export type Item = {
  id: number;
  name: string;
  n: number | null;
  t: number;
  flag: boolean;
  parent: string | null;
  data: Record<string, unknown>;
  tags: unknown[];
  title: Record<string, string>;
};

export const ITEMS: Item[] = [
  {
    id: 1,
    name: "Red Shoe",
    n: 10,
    t: 1_700_000_000,
    flag: true,
    parent: "a",
    data: { color: "red", size: 42, bad: [1] },
    tags: ["sale", "new"],
    title: { en: "Red shoe", de: "Roter Schuh" },
  },
  {
    id: 2,
    name: "blue shoe",
    n: 20,
    t: 1_700_086_400,
    flag: false,
    parent: "a",
    data: { color: "Blue", size: "42" },
    tags: ["new"],
    title: { en: "Blue shoe" },
  },
  {
    id: 3,
    name: "Green Hat",
    n: null,
    t: 1_699_000_000,
    flag: true,
    parent: null,
    data: { color: null, size: 7.5, on: true },
    tags: [],
    title: { de: "Grüner Hut" },
  },
  {
    id: 4,
    name: "hat",
    n: 0,
    t: 1_700_500_000,
    flag: false,
    parent: "b",
    data: { on: false, size: 100 },
    tags: [1, 2],
    title: {},
  },
  {
    id: 5,
    name: "Crème",
    n: -5,
    t: 1_600_000_000,
    flag: true,
    parent: "b",
    data: { color: "red", "a.b": "dotted", nested: { x: 1 } },
    tags: ["Sale"],
    title: { en: "Crème brûlée", fr: "Crème" },
  },
  {
    id: 6,
    name: "Shoe rack 100",
    n: 100,
    t: 1_700_000_001,
    flag: false,
    parent: "c",
    data: { size: 150, on: 1 },
    tags: [true],
    title: { en: "rack" },
  },
  {
    id: 7,
    name: "50% off",
    n: 50,
    t: 1_700_200_000,
    flag: true,
    parent: "c",
    data: { color: "RED", size: "150" },
    tags: ["sale", "sale"],
    title: { en: "Half price", de: "Halber Preis" },
  },
  {
    id: 8,
    name: "under_score",
    n: 3,
    t: 1_700_300_000,
    flag: false,
    parent: "a",
    data: {},
    tags: ["x"],
    title: { en: "" },
  },
];

const meta = (key: string): FieldSpec | undefined => {
  const path = jsonKeyPath(key);
  return path
    ? { type: "json", sql: sql`json_extract(i.data, ${path})`, pg: sql`(i.data -> ${key}::text)` }
    : undefined;
};

/** One domain for both dialects: `sql` is the SQLite expression, `pg` the PostgreSQL one where it differs. */
export const DOMAIN = makeDomain(
  [
    ["name", { type: "text", sql: sql`i.name` }],
    ["n", { type: "number", sql: sql`i.n` }],
    ["t", { type: "time", sql: sql`i.t` }],
    ["flag", { type: "boolean", sql: sql`i.flag` }],
    ["parent", { type: "text", sql: sql`i.parent`, operators: ["is", "=", "!=", "in", "not_in", "exists"] }],
    ["color", { type: "json", sql: sql`json_extract(i.data, '$.color')`, pg: sql`(i.data -> 'color')` }],
    ["size", { type: "json", sql: sql`json_extract(i.data, '$.size')`, pg: sql`(i.data -> 'size')` }],
    ["on", { type: "json", sql: sql`json_extract(i.data, '$.on')`, pg: sql`(i.data -> 'on')` }],
    ["tags", { type: "list", sql: sql`i.tags` }],
    ["title", { type: "localized", sql: sql`i.title` }],
    ["data", { type: "object", sql: sql`i.data` }],
    [
      "bad",
      {
        type: "custom",
        custom: new Map([
          [
            "any",
            {
              build: () => sql`coalesce(json_array_length(i.data, '$.bad'), 0) > 0`,
              buildPg: () =>
                sql`coalesce(jsonb_array_length(CASE WHEN jsonb_typeof(i.data -> 'bad') = 'array' THEN i.data -> 'bad' END), 0) > 0`,
            },
          ],
        ]),
      },
    ],
  ],
  [["meta", meta]],
);

export const NOW = 1_700_600_000;

/** Filters, each with the search language (or none). */
export const FILTERS: { filter: unknown; language?: string }[] = [
  { filter: ["name", "=", "Red Shoe"] },
  { filter: ["name", "is", "red shoe"] },
  { filter: ["name", "!=", "hat"] },
  { filter: ["name", "contains", "SHOE"] },
  { filter: ["name", "not_contains", "shoe"] },
  { filter: ["name", "starts_with", "sh"] },
  { filter: ["name", "ends_with", "HAT"] },
  { filter: ["name", "starts_with", ""] },
  { filter: ["name", "contains", "%"] },
  { filter: ["name", "contains", "_"] },
  { filter: ["name", "q", "+shoe -rack"] },
  { filter: ["name", "q", "hat rack"] },
  { filter: ["name", "in", ["hat", "Green Hat", "x"]] },
  { filter: ["name", "not_in", ["hat", "Green Hat"]] },
  { filter: ["name", "between", ["b", "h"]] },
  { filter: ["name", "<", "c"] },
  { filter: ["n", ">", 5] },
  { filter: ["n", "<=", 0] },
  { filter: ["n", "=", null] },
  { filter: ["n", "!=", 10] },
  { filter: ["n", "!=", null] },
  { filter: ["n", "between", [0, 20]] },
  { filter: ["n", "in", [0, 3, 100]] },
  { filter: ["n", "not_in", [0, 3]] },
  { filter: ["n", "exists"] },
  { filter: ["n", "exists", false] },
  { filter: ["t", ">", "2023-11-15T00:00:00Z"] },
  { filter: ["t", "<", [5, "days"]] },
  { filter: ["t", ">", [5, "days"]] },
  { filter: ["t", "between", [1_699_000_000, 1_700_100_000]] },
  { filter: ["flag", "is_true"] },
  { filter: ["flag", "is_false"] },
  { filter: ["flag", "=", true] },
  { filter: ["flag", "!=", true] },
  { filter: ["flag", "is", false] },
  { filter: ["parent", "=", null] },
  { filter: ["parent", "in", ["a", "c"]] },
  { filter: ["parent", "not_in", ["a"]] },
  { filter: ["parent", "exists"] },
  { filter: ["color", "=", "red"] },
  { filter: ["color", "is", "red"] },
  { filter: ["color", "!=", "red"] },
  { filter: ["color", "=", null] },
  { filter: ["color", "exists"] },
  { filter: ["color", "contains", "E"] },
  { filter: ["color", "in", ["red", "Blue"]] },
  { filter: ["size", "=", 42] },
  { filter: ["size", "=", "42"] },
  { filter: ["size", ">", 50] },
  { filter: ["size", ">", "100"] },
  { filter: ["size", "between", [7, 100]] },
  { filter: ["size", "in", [42, "150", 7.5]] },
  { filter: ["size", "not_in", [42, 100]] },
  { filter: ["size", "contains", "5"] },
  { filter: ["on", "is_true"] },
  { filter: ["on", "is_false"] },
  { filter: ["on", "=", true] },
  { filter: ["on", "=", 1] },
  { filter: ["size", "is", "42"] },
  { filter: ["color", "<", "s"] },
  { filter: ["color", "ends_with", "ed"] },
  { filter: ["on", "!=", 1] },
  { filter: ["title", "is", "crème"] },
  { filter: ["title", "not_in", ["rack", "Red shoe"]], language: "en" },
  { filter: ["tags", "has", "sale"] },
  { filter: ["tags", "has_not", "sale"] },
  { filter: ["tags", "has", 1] },
  { filter: ["tags", "has", true] },
  { filter: ["title", "contains", "shoe"], language: "en" },
  { filter: ["title", "is", "roter schuh"], language: "de" },
  { filter: ["title", "exists"], language: "de" },
  { filter: ["title", "=", null], language: "en" },
  { filter: ["title", "contains", "shoe"] },
  { filter: ["title", "starts_with", "cr"] },
  { filter: ["title", "q", "+half -rack"], language: "en" },
  { filter: ["data", "has", "color"] },
  { filter: ["data", "has_not", "color"] },
  { filter: ["data", "has", "a.b"] },
  { filter: ["data", "is", ["color", "RED"]] },
  { filter: ["data", "is", ["size", 42]] },
  { filter: ["data", "q", ["color", "re"]] },
  { filter: ["data", "is_true", "on"] },
  { filter: ["data", "is_false", "on"] },
  { filter: ["meta.color", "=", "red"] },
  { filter: ["meta.a.b", "=", "dotted"] },
  { filter: ["meta.size", "<", 100] },
  { filter: ["meta.nested", "exists"] },
  { filter: ["bad", "any"] },
  {
    filter: [
      "and",
      "",
      [
        ["flag", "is_true"],
        ["n", ">", 0],
      ],
    ],
  },
  {
    filter: [
      "or",
      "",
      [
        ["name", "contains", "hat"],
        ["color", "=", "red"],
      ],
    ],
  },
  { filter: ["not", "", ["n", ">", 5]] },
  { filter: ["not", "", ["color", "=", "red"]] },
  {
    filter: [
      "not",
      "",
      [
        "or",
        "",
        [
          ["parent", "=", "a"],
          ["size", ">", 10],
        ],
      ],
    ],
  },
  { filter: ["and", "", []] },
  { filter: ["or", "", []] },
  { filter: ["not", "", ["or", "", []]] },
  {
    filter: [
      ["flag", "is_true"],
      ["tags", "has", "sale"],
    ],
  },
  { filter: [] },
];
