import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/bun-sqlite";
import {
  FilterError,
  MATCH_ALL,
  SEARCH_PAGE,
  fieldsOf,
  filterToSql,
  jsonKeyPath,
  makeDomain,
  operatorsOf,
  pageWindow,
  parseFilter,
  parseTerms,
  sqlText,
  validationField,
  type FieldSpec,
  type FilterSqlOptions,
} from "../../src/core/filter";

const NOW = 1_800_000_000; // a fixed clock, seconds
const DAY = 86400;

const sqlite = new Database(":memory:");
const db = drizzle(sqlite);
sqlite.run(`CREATE TABLE items (
  id INTEGER PRIMARY KEY, name TEXT, size REAL, published INTEGER, updated_on REAL,
  meta TEXT, classes TEXT, label TEXT, issues TEXT)`);
const rows: [number, string | null, number | null, number, number, unknown, unknown, unknown, unknown][] = [
  [
    1,
    "Running Shoe",
    120,
    1,
    NOW - 1 * DAY,
    { sku: "RS-1", width: 150, color: "Red", flag: true },
    ["article", "shoe"],
    { en: "Shoe", nl: "Schoen" },
    {},
  ],
  [
    2,
    "Trail shoe",
    80,
    0,
    NOW - 10 * DAY,
    { sku: "TS-2", width: "150", flag: false },
    ["article"],
    { en: "Trail", nl: "" },
    { label: "not_translated" },
  ],
  [
    3,
    "Café crème",
    null,
    1,
    NOW - 40 * DAY,
    { sku: "CC-3", "a.b": "dotted", __proto__x: 1 },
    [],
    { en: "", nl: "Koffie" },
    { title: "is_empty" },
  ],
  [4, null, 5, 0, NOW - 100 * DAY, null, null, null, { price: "invalid", label: "invalid" }],
  [5, "o'Brien\"; DROP TABLE items; --", 9, 1, NOW - 2 * DAY, { width: 9, constructor: "c" }, ["x"], { en: "O" }, {}],
];
// __proto__ cannot be an own key of an object literal; write that one as JSON text.
const insert = sqlite.prepare("INSERT INTO items VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
for (const r of rows) {
  const json = (v: unknown) => (v === null ? null : JSON.stringify(v).replace('"__proto__x"', '"__proto__"'));
  insert.run(r[0], r[1], r[2], r[3], r[4], json(r[5]), json(r[6]), json(r[7]), json(r[8]));
}

const metadataKey = (key: string): FieldSpec | undefined => {
  const path = jsonKeyPath(key);
  return path ? { type: "json", sql: sql`json_extract(items.meta, ${path})` } : undefined;
};

const validation = validationField({
  fields: (name) => ["label", "title", "price"].includes(name),
  build: (check, field) => {
    const kind = check === "any" ? "invalid" : check;
    return field === undefined
      ? sql`EXISTS (SELECT 1 FROM json_each(items.issues) AS v WHERE v.value = ${kind})`
      : sql`EXISTS (SELECT 1 FROM json_each(items.issues) AS v WHERE v.value = ${kind} AND v.key = ${field})`;
  },
});

const domain = makeDomain(
  [
    ["id", { type: "number", sql: sql`items.id` }],
    ["name", { type: "text", sql: sql`items.name` }],
    ["size", { type: "number", sql: sql`items.size` }],
    ["published", { type: "boolean", sql: sql`items.published` }],
    ["updated_on", { type: "time", sql: sql`items.updated_on` }],
    ["updated_ms", { type: "time", sql: sql`(items.updated_on * 1000)`, unit: "ms" }],
    ["classes", { type: "list", sql: sql`items.classes` }],
    ["label", { type: "localized", sql: sql`items.label` }],
    ["metadata", { type: "object", sql: sql`items.meta` }],
    ["sku_only_is", { type: "text", sql: sql`json_extract(items.meta, '$.sku')`, operators: ["is"] }],
    ["validation", validation],
  ],
  [["metadata", metadataKey]],
);

/** The ids a filter finds, in id order. */
function ids(filter: unknown, options: FilterSqlOptions = {}): number[] {
  const where = filterToSql(parseFilter(filter, domain), { now: NOW, ...options });
  return db.all<{ id: number }>(sql`SELECT id FROM items WHERE ${where} ORDER BY id`).map((r) => r.id);
}

/** The FilterError a filter raises. */
function refusal(filter: unknown): FilterError {
  try {
    parseFilter(filter, domain);
  } catch (e) {
    if (e instanceof FilterError) return e;
    throw e;
  }
  throw new Error(`accepted: ${JSON.stringify(filter)}`);
}

describe("groups", () => {
  test("and, or and not nest the way the reference writes them", () => {
    expect(
      ids([
        "and",
        "",
        [
          ["published", "is_true"],
          ["size", ">", 10],
        ],
      ]),
    ).toEqual([1]);
    expect(
      ids([
        "or",
        "",
        [
          ["size", "<", 6],
          ["name", "is", "trail shoe"],
        ],
      ]),
    ).toEqual([2, 4]);
    expect(ids(["not", "", ["published", "is_true"]])).toEqual([2, 4]);
    expect(ids(["not", "", ["not", "", ["published", "is_true"]]])).toEqual([1, 3, 5]);
    expect(
      ids([
        "and",
        "",
        [
          [
            "or",
            "",
            [
              ["id", "=", 1],
              ["id", "=", 2],
              ["id", "=", 3],
            ],
          ],
          ["not", "", ["or", "", [["id", "=", 2]]]],
        ],
      ]),
    ).toEqual([1, 3]);
  });

  test("an empty and matches everything and an empty or matches nothing", () => {
    expect(ids(["and", "", []])).toEqual([1, 2, 3, 4, 5]);
    expect(ids(["or", "", []])).toEqual([]);
    expect(ids(["not", "", ["or", "", []]])).toEqual([1, 2, 3, 4, 5]);
    expect(ids(["not", "", []])).toEqual([]);
  });

  test("an absent, null or empty filter matches everything", () => {
    expect(parseFilter(undefined, domain)).toBe(MATCH_ALL);
    expect(parseFilter(null, domain)).toBe(MATCH_ALL);
    expect(ids([])).toEqual([1, 2, 3, 4, 5]);
  });

  test("a null operator on a group is taken as the empty one", () => {
    expect(
      ids([
        "or",
        null,
        [
          ["id", "=", 4],
          ["id", "=", 5],
        ],
      ]),
    ).toEqual([4, 5]);
  });

  test("our older list of conditions means all of them, also inside a group", () => {
    expect(
      ids([
        ["published", "=", true],
        ["size", ">=", 9],
      ]),
    ).toEqual([1, 5]);
    expect(
      ids([
        "or",
        "",
        [
          [
            ["id", "=", 1],
            ["size", "=", 120],
          ],
          ["id", "=", 4],
        ],
      ]),
    ).toEqual([1, 4]);
  });

  test("not is the exact complement even where a column is empty", () => {
    // Row 4 has no name: contains cannot be decided there, and not still finds it.
    expect(ids(["name", "contains", "shoe"])).toEqual([1, 2]);
    expect(ids(["not", "", ["name", "contains", "shoe"]])).toEqual([3, 4, 5]);
    expect(
      ids([
        "not",
        "",
        [
          "and",
          "",
          [
            ["name", "contains", "shoe"],
            ["size", ">", 0],
          ],
        ],
      ]),
    ).toEqual([3, 4, 5]);
  });

  test("a field called like a group is still a field when its operator is not empty", () => {
    const d = makeDomain([["not", { type: "text", sql: sql`items.name` }]]);
    const where = filterToSql(parseFilter(["not", "is", "trail shoe"], d));
    expect(db.all<{ id: number }>(sql`SELECT id FROM items WHERE ${where}`)).toEqual([{ id: 2 }]);
  });
});

describe("text operators", () => {
  test("is compares whole text without regard to case", () => {
    expect(ids(["name", "is", "RUNNING shoe"])).toEqual([1]);
    expect(ids(["name", "is", "running"])).toEqual([]);
  });

  test("= and != compare exactly, and null means empty", () => {
    expect(ids(["name", "=", "Running Shoe"])).toEqual([1]);
    expect(ids(["name", "=", "running shoe"])).toEqual([]);
    expect(ids(["name", "=", null])).toEqual([4]);
    expect(ids(["name", "!=", "Running Shoe"])).toEqual([2, 3, 4, 5]);
    expect(ids(["name", "!=", null])).toEqual([1, 2, 3, 5]);
  });

  test("contains, not_contains, starts_with and ends_with ignore ASCII case", () => {
    expect(ids(["name", "contains", "SHOE"])).toEqual([1, 2]);
    expect(ids(["name", "not_contains", "shoe"])).toEqual([3, 4, 5]);
    expect(ids(["name", "starts_with", "trail"])).toEqual([2]);
    expect(ids(["name", "ends_with", "SHOE"])).toEqual([1, 2]);
    expect(ids(["name", "ends_with", "crème"])).toEqual([3]);
    expect(ids(["name", "starts_with", "café"])).toEqual([3]);
  });

  test("an empty starts_with or ends_with finds every item that has the field", () => {
    expect(ids(["name", "starts_with", ""])).toEqual([1, 2, 3, 5]);
    expect(ids(["name", "ends_with", ""])).toEqual([1, 2, 3, 5]);
  });

  test("in, not_in and exists", () => {
    expect(ids(["name", "in", ["Trail shoe", "Café crème", "nothing"]])).toEqual([2, 3]);
    expect(ids(["name", "not_in", ["Trail shoe", "Café crème"]])).toEqual([1, 4, 5]);
    expect(ids(["name", "exists"])).toEqual([1, 2, 3, 5]);
    expect(ids(["name", "exists", false])).toEqual([4]);
  });

  test("ordered comparisons and between work on text", () => {
    expect(ids(["name", "<", "D"])).toEqual([3]);
    expect(ids(["name", "between", ["R", "Tz"]])).toEqual([1, 2]);
  });

  test("q needs every + term, no - term, and otherwise one of the plain terms", () => {
    expect(ids(["name", "q", "+shoe -trail"])).toEqual([1]);
    expect(ids(["name", "q", "trail café"])).toEqual([2, 3]);
    expect(ids(["name", "q", "+shoe nothing"])).toEqual([1, 2]);
    // Like not_contains, an excluded term alone also finds items without the field.
    expect(ids(["name", "q", "-shoe"])).toEqual([3, 4, 5]);
    expect(ids(["name", "q", '"running shoe"'])).toEqual([1]);
    expect(ids(["name", "q", '+"trail shoe" +running'])).toEqual([]);
  });

  test("search terms split into required, excluded and plain ones", () => {
    expect(parseTerms('+cms 225 -old "two words" +"must phrase" -- +')).toEqual({
      required: ["cms", "must phrase"],
      excluded: ["old"],
      optional: ["225", "two words"],
    });
  });

  test("a number given to a text field is compared as its text", () => {
    sqlite.run("UPDATE items SET name = '42' WHERE id = 4");
    try {
      expect(ids(["name", "is", 42])).toEqual([4]);
    } finally {
      sqlite.run("UPDATE items SET name = NULL WHERE id = 4");
    }
  });

  test("operator names are matched without regard to case", () => {
    expect(ids(["name", "STARTS_WITH", "trail"])).toEqual([2]);
  });
});

describe("numbers, booleans and times", () => {
  test("numbers compare as numbers", () => {
    expect(ids(["size", "<", 9])).toEqual([4]);
    expect(ids(["size", "<=", 9])).toEqual([4, 5]);
    expect(ids(["size", ">", 80])).toEqual([1]);
    expect(ids(["size", ">=", 80])).toEqual([1, 2]);
    expect(ids(["size", "between", [5, 80]])).toEqual([2, 4, 5]);
    expect(ids(["size", "in", [9, 120]])).toEqual([1, 5]);
    expect(ids(["size", "is", 80])).toEqual([2]);
    expect(ids(["size", "not_in", [9, 120]])).toEqual([2, 3, 4]);
  });

  test("booleans: is_true, is_false (with or without a null operand), is and =", () => {
    expect(ids(["published", "is_true"])).toEqual([1, 3, 5]);
    expect(ids(["published", "is_false"])).toEqual([2, 4]);
    expect(ids(["published", "is_false", null])).toEqual([2, 4]);
    expect(ids(["published", "is", false])).toEqual([2, 4]);
    expect(ids(["published", "=", true])).toEqual([1, 3, 5]);
  });

  test("< and > with a number of days look at the age", () => {
    expect(ids(["updated_on", "<", [5, "days"]])).toEqual([1, 5]);
    expect(ids(["updated_on", ">", [30, "days"]])).toEqual([3, 4]);
    expect(ids(["updated_ms", "<", [5, "days"]])).toEqual([1, 5]);
  });

  test("between takes UNIX seconds or ISO dates, and plain comparisons take them too", () => {
    expect(ids(["updated_on", "between", [NOW - 11 * DAY, NOW - 2 * DAY]])).toEqual([2, 5]);
    const iso = (s: number) => new Date(s * 1000).toISOString();
    expect(ids(["updated_on", "between", [iso(NOW - 11 * DAY), iso(NOW - 2 * DAY)]])).toEqual([2, 5]);
    expect(ids(["updated_on", ">=", iso(NOW - 2 * DAY)])).toEqual([1, 5]);
    expect(ids(["updated_ms", "between", [NOW - 11 * DAY, NOW - 2 * DAY]])).toEqual([2, 5]);
  });
});

describe("lists, localized text and JSON", () => {
  test("has and has_not test one member of a list", () => {
    expect(ids(["classes", "has", "article"])).toEqual([1, 2]);
    expect(ids(["classes", "has_not", "article"])).toEqual([3, 4, 5]);
  });

  test("a localized field compares the text of the search language", () => {
    expect(ids(["label", "is", "schoen"], { language: "nl" })).toEqual([1]);
    expect(ids(["label", "is", "schoen"], { language: "en" })).toEqual([]);
    expect(ids(["label", "q", "koffie"], { language: "nl" })).toEqual([3]);
  });

  test("without a language a localized field matches in any language", () => {
    expect(ids(["label", "is", "koffie"])).toEqual([3]);
    expect(ids(["label", "starts_with", "s"])).toEqual([1]);
  });

  test("a language that is not a code is refused when the SQL is made", () => {
    const node = parseFilter(["label", "is", "x"], domain);
    expect(() => filterToSql(node, { language: '"; DROP' })).toThrow(FilterError);
  });

  test("a dotted name reaches one metadata key", () => {
    expect(ids(["metadata.sku", "starts_with", "rs-"])).toEqual([1]);
    expect(ids(["metadata.sku", "is", "ts-2"])).toEqual([2]);
    expect(ids(["metadata.a.b", "=", "dotted"])).toEqual([3]);
    expect(ids(["metadata.flag", "is_true"])).toEqual([1]);
    expect(ids(["metadata.flag", "is_false"])).toEqual([2]);
    expect(ids(["metadata.color", "exists"])).toEqual([1]);
  });

  test('numbers and strings in JSON stay apart: 150 is not "150"', () => {
    expect(ids(["metadata.width", "=", 150])).toEqual([1]);
    expect(ids(["metadata.width", "=", "150"])).toEqual([2]);
    // SQLite would sort the text "150" above every number; a number operand only looks at numbers.
    expect(ids(["metadata.width", ">", 100])).toEqual([1]);
    expect(ids(["metadata.width", "<", 10])).toEqual([5]);
    expect(ids(["metadata.width", "between", [1, 1000]])).toEqual([1, 5]);
    // and a text operand only at text, compared as text: "150" < "9".
    expect(ids(["metadata.width", "<", "9"])).toEqual([2]);
    expect(ids(["metadata.sku", ">=", "S"])).toEqual([2]);
    expect(refusal(["metadata.width", "between", [1, "9"]]).message).toMatch(/both numbers or both text/);
  });

  test("not_in over a metadata key binds the key's path once for each time the field appears", () => {
    const where = filterToSql(parseFilter(["metadata.sku", "not_in", ["RS-1"]], domain));
    const { params } = sqlText(where);
    expect(params).toEqual(['$."sku"', '$."sku"', "RS-1"]);
    expect(ids(["metadata.sku", "not_in", ["RS-1"]])).toEqual([2, 3, 4, 5]);
  });

  test("the metadata object takes has, has_not, is, q, is_true and is_false by key", () => {
    expect(ids(["metadata", "has", "color"])).toEqual([1]);
    expect(ids(["metadata", "has_not", "sku"])).toEqual([4, 5]);
    expect(ids(["metadata", "is", ["sku", "cc-3"]])).toEqual([3]);
    expect(ids(["metadata", "q", ["sku", "+ts"]])).toEqual([2]);
    expect(ids(["metadata", "is_true", "flag"])).toEqual([1]);
    expect(ids(["metadata", "is_false", "flag"])).toEqual([2]);
  });

  test("a field limited to some operators refuses the others", () => {
    expect(ids(["sku_only_is", "is", "rs-1"])).toEqual([1]);
    expect(refusal(["sku_only_is", "contains", "rs"]).path).toBe("filter[1]");
  });
});

describe("validation", () => {
  test("any, is_empty and not_translated find the items whose checks failed", () => {
    expect(ids(["validation", "any"])).toEqual([4]);
    expect(ids(["validation", "is_empty"])).toEqual([3]);
    expect(ids(["validation", "not_translated"])).toEqual([2]);
  });

  test("the optional operand narrows the check to one field", () => {
    expect(ids(["validation", "any", "price"])).toEqual([4]);
    expect(ids(["validation", "any", "title"])).toEqual([]);
    expect(
      ids([
        "or",
        "",
        [
          ["validation", "not_translated", "label"],
          ["validation", "is_empty", "title"],
        ],
      ]),
    ).toEqual([2, 3]);
  });

  test("a field the domain does not validate is refused as operand", () => {
    const e = refusal(["validation", "any", "colour"]);
    expect(e.path).toBe("filter[2]");
    expect(refusal(["validation", "any", 3]).path).toBe("filter[2]");
    expect(refusal(["validation", "maybe"]).path).toBe("filter[1]");
  });

  test("the validation field lists its own operators", () => {
    expect(operatorsOf(validation)).toEqual(["any", "is_empty", "not_translated"]);
  });
});

describe("parameters", () => {
  test("values are bound, never written into the SQL text", () => {
    const evil = `o'Brien"; DROP TABLE items; --`;
    const where = filterToSql(
      parseFilter(
        [
          "or",
          "",
          [
            ["name", "=", evil],
            ["metadata.sku", "contains", "'"],
            ["size", "in", [1, 2]],
          ],
        ],
        domain,
      ),
    );
    const { sql: text, params } = sqlText(where);
    expect(text).not.toContain("Brien");
    expect(text).not.toContain("'''");
    expect(params).toContain(evil);
    expect(ids(["name", "=", evil])).toEqual([5]);
    expect(ids(["name", "contains", `"; drop`])).toEqual([5]);
    expect(sqlite.query("SELECT count(*) AS n FROM items").get()).toEqual({ n: 5 });
  });
});

describe("bad filters", () => {
  const cases: [string, unknown, string, RegExp][] = [
    ["a filter that is not a list", { field: "name" }, "filter", /is a list/],
    ["a field that is not a string", [3, "is", "x"], "filter[0]", /field name/],
    ["an unknown field", ["colour", "is", "red"], "filter[0]", /unknown field "colour"/],
    ["an unknown operator", ["name", "like", "x"], "filter[1]", /operator "like" does not apply to name/],
    ["an operator that is not a string", ["name", 1, "x"], "filter[1]", /a string/],
    ["an operator of another type", ["size", "contains", "1"], "filter[1]", /does not apply/],
    ["a missing operand", ["size", ">"], "filter[2]", /needs an operand/],
    ["an operand where none is taken", ["published", "is_true", 1], "filter[2]", /takes no operand/],
    ["a text operand for a number", ["size", "=", "5"], "filter[2]", /must be a number/],
    ["an infinite-looking number", ["size", "=", Number.POSITIVE_INFINITY], "filter[2]", /finite/],
    ["a between without two ends", ["size", "between", [1]], "filter[2]", /\[from, until\]/],
    ["an empty in", ["name", "in", []], "filter[2]", /list of 1 to 1000/],
    ["an in with an object", ["name", "in", ["a", {}]], "filter[2]", /value 1/],
    ["days in another unit", ["updated_on", "<", [3, "weeks"]], "filter[2]", /"days"/],
    ["a date that is not one", ["updated_on", ">", "yesterday"], "filter[2]", /not a date/],
    ["a q without terms", ["name", "q", "  + - "], "filter[2]", /at least one search term/],
    ["too many members", ["name", "is", "x", "y"], "filter", /\[field, operator\]/],
    ["a bare field", ["name"], "filter", /\[field, operator\]/],
    ["an and without a list", ["and", "", ["name", "is", "x"]], "filter[2][0]", /is a list/],
    ["an and of one filter written bare", ["and", "", "x"], "filter[2]", /list of filters/],
    ["a not without its filter", ["not", ""], "filter", /one filter/],
    [
      "a deep mistake",
      [
        "and",
        "",
        [
          ["name", "is", "x"],
          [
            "or",
            "",
            [
              ["size", ">", 1],
              ["size", "nope", 1],
            ],
          ],
        ],
      ],
      "filter[2][1][2][1][1]",
      /nope/,
    ],
    [
      "a mistake in the older list",
      [
        ["name", "is", "x"],
        ["size", "=", "x"],
      ],
      "filter[1][2]",
      /number/,
    ],
    ["a metadata key SQLite cannot quote", ['metadata.a"b', "is", "x"], "filter[0]", /unknown field/],
    ["a metadata object operand without a key", ["metadata", "is", "x"], "filter[2]", /\[key, value\]/],
    ["a list member that is an object", ["classes", "has", {}], "filter[2]", /string, number or boolean/],
  ];
  for (const [what, filter, path, reason] of cases) {
    test(`${what} is refused with its path`, () => {
      const e = refusal(filter);
      expect(e.path).toBe(path);
      expect(e.message).toMatch(reason);
      expect(e.param).toBe("filter");
    });
  }

  test("nesting deeper than the limit is refused", () => {
    let f: unknown = ["name", "is", "x"];
    for (let i = 0; i < 40; i++) f = ["not", "", f];
    expect(refusal(f).message).toMatch(/nest at most/);
  });

  test("a filter with too many conditions is refused", () => {
    const many = Array.from({ length: 600 }, () => ["name", "is", "x"]);
    expect(refusal(["or", "", many]).message).toMatch(/at most 500/);
  });

  test("the error says what to report: member, path, reason and the first index", () => {
    const e = refusal([
      ["name", "is", "x"],
      ["size", "=", "x"],
    ]);
    expect(e.info()).toEqual({
      "Invalid parameter": "filter",
      path: "filter[1][2]",
      reason: "the operand must be a number",
    });
    expect(e.index).toBe(1);
  });

  test("a filter nested in a request names its own root", () => {
    try {
      parseFilter(["name", "nope", 1], domain, { root: "selection[3].search.filter" });
      throw new Error("accepted");
    } catch (e) {
      expect((e as FilterError).path).toBe("selection[3].search.filter[1]");
      expect((e as FilterError).param).toBe("selection");
    }
  });
});

describe("names from clients", () => {
  const protoNames = [
    "constructor",
    "__proto__",
    "toString",
    "hasOwnProperty",
    "valueOf",
    "prototype",
    "__defineGetter__",
  ];

  for (const name of protoNames) {
    test(`a field called ${name} is an unknown field, not a match or a crash`, () => {
      const e = refusal([name, "is", "x"]);
      expect(e.path).toBe("filter[0]");
      expect(e.message).toMatch(/unknown field/);
    });

    test(`an operator called ${name} is an unknown operator`, () => {
      const e = refusal(["name", name, "x"]);
      expect(e.path).toBe("filter[1]");
      expect(e.message).toMatch(/does not apply/);
      expect(refusal(["validation", name]).path).toBe("filter[1]");
    });
  }

  test("a metadata key with such a name is just a key", () => {
    expect(ids(["metadata.constructor", "is", "c"])).toEqual([5]);
    expect(ids(["metadata.__proto__", "exists"])).toEqual([3]);
    expect(ids(["metadata.toString", "exists"])).toEqual([]);
    expect(ids(["metadata", "has", "__proto__"])).toEqual([3]);
  });

  test("a group word with a prototype name as operator is read as a field", () => {
    expect(refusal(["and", "constructor", []]).message).toMatch(/unknown field "and"/);
  });
});

describe("helpers", () => {
  test("fieldsOf lists every field a filter mentions", () => {
    const node = parseFilter(
      [
        "and",
        "",
        [
          ["name", "is", "x"],
          [
            "not",
            "",
            [
              "or",
              "",
              [
                ["size", ">", 1],
                ["metadata.sku", "exists"],
              ],
            ],
          ],
        ],
      ],
      domain,
    );
    expect([...fieldsOf(node)].sort()).toEqual(["metadata.sku", "name", "size"]);
  });

  test("page.top and page.size take the reference's defaults", () => {
    expect(pageWindow({}, SEARCH_PAGE.records)).toEqual({ top: 0, size: 10 });
    expect(pageWindow(undefined, SEARCH_PAGE.assets)).toEqual({ top: 0, size: 10 });
    expect(pageWindow({ "page.top": null }, SEARCH_PAGE.schema)).toEqual({ top: 0, size: 10_000 });
    expect(pageWindow({ "page.top": 20, "page.size": 5 }, SEARCH_PAGE.records)).toEqual({ top: 20, size: 5 });
    expect(pageWindow({ "page.size": 0 }, SEARCH_PAGE.records)).toEqual({ top: 0, size: 0 });
  });

  test("a page.size above the maximum is lowered to it", () => {
    expect(pageWindow({ "page.size": 50_000 }, SEARCH_PAGE.records)).toEqual({ top: 0, size: 1000 });
  });

  test("a page member that is not a whole number of 0 or more is refused by name", () => {
    for (const bad of [-1, 1.5, "10", true, Number.NaN, 2 ** 60]) {
      try {
        pageWindow({ "page.size": bad }, SEARCH_PAGE.records);
        throw new Error(`accepted ${String(bad)}`);
      } catch (e) {
        expect(e).toBeInstanceOf(FilterError);
        expect((e as FilterError).param).toBe("page.size");
      }
    }
    expect(() => pageWindow({ "page.top": -3 }, SEARCH_PAGE.records)).toThrow(FilterError);
  });

  test("page members inherited from a prototype are not read", () => {
    const body = Object.create({ "page.size": 3 });
    expect(pageWindow(body, SEARCH_PAGE.records)).toEqual({ top: 0, size: 10 });
  });
});
