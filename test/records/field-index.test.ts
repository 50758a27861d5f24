import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  addFieldIndex,
  FieldIndexError,
  listFieldIndexes,
  removeFieldIndex,
} from "../../src/features/records/records.api";
import { apisCli } from "../helpers/server";
import { recordsWorld } from "./helpers";

/** Field indexes are made on SQLite only: on PostgreSQL every call is refused (docs/records.md). */
const onPostgres = process.env.APIS_TEST_DATABASE === "postgres";
let w: Awaited<ReturnType<typeof recordsWorld>>;
const r: Record<string, string> = {};
beforeAll(async () => {
  // Many searches in a row (the operator sweep): no request limit.
  w = await recordsWorld({ "rate-limit": "0" });
  const group = await w.create(w.root, { en: { name: "Coolers" } });
  const rows: [string, Record<string, unknown>][] = [
    ["big", { en: { name: "Ice box 174 l", price: 300, stock: 3 } }],
    ["small", { en: { name: "Ice box small", price: 150, stock: 3 } }],
    ["mini", { en: { name: "Ice box mini", price: 40, stock: 1 } }],
    ["tray", { en: { name: "Ice tray" } }],
    ["old", { en: { name: "Ice box old", price: 10 } }],
    ["fan", { en: { name: "Fan", price: 30 } }],
  ];
  for (const [k, fields] of rows) r[k] = await w.create(group, fields);
  await w.okr("records/delete", { record: r.old });
}, 60_000);
afterAll(() => w.srv.stop());

const search = async (body: Record<string, unknown>) =>
  (await w.okr("records/search", { language: "en", ...body })).result as {
    records: string[];
    "records.size": number;
  };

/** Searches filtered on `price` in the ways a client may name it, alone and beside other fields, and full-text searches without a filter. */
const SEARCHES: Record<string, unknown>[] = [
  { q: "+ice box", filter: ["price", "<", 200] },
  { q: "ice", filter: ["price", ">", 100] },
  { q: "+ice", filter: ["fields.price", ">=", 40] },
  { q: "ice", filter: ["value", "is", ["price", 150]] },
  { q: "ice box", filter: ["not", "", ["price", "<", 100]] },
  {
    q: "ice",
    filter: [
      "and",
      "",
      [
        ["price", "<", 200],
        ["stock", "=", 3],
      ],
    ],
  },
  {
    q: "+ice",
    filter: [
      "or",
      "",
      [
        ["price", "<", 50],
        ["status", "=", "deleted"],
      ],
    ],
  },
  { q: "ice", filter: ["price", ">", 100], "page.top": 1, "page.size": 1 },
  { q: "ice", filter: ["price", "<", 200], "page.top": 1, "page.size": 1 },
  { filter: ["price", "<", 200] },
  { q: "ice box" },
  { q: "+ice -small", "page.top": 1, "page.size": 2 },
  { filter: ["fields.price", ">", 100], "page.top": 1, "page.size": 1 },
  { filter: ["price", "exists"], "page.top": 50 },
];

describe("field indexes", () => {
  test.if(!onPostgres)(
    "a search filtered on an indexed field finds the same records in the same order as before the index",
    async () => {
      const before = await Promise.all(SEARCHES.map(search));
      expect([...before[0]!.records].sort()).toEqual([r.mini, r.small].sort());
      const made = await addFieldIndex(w.srv.ctx, w.project, "price");
      expect(made.field).toBe("price");
      expect(made.index).toStartWith("records_fx_");
      const after = await Promise.all(SEARCHES.map(search));
      expect(after).toEqual(before);
    },
  );

  test.if(!onPostgres)(
    "every operator on an indexed number, text or boolean field answers as without the index, with and without q",
    async () => {
      await w.okr("records/update", { record: r.big, fields: { en: { artnr: "IB-174", active: true } } });
      await w.okr("records/update", { record: r.small, fields: { en: { artnr: "IB-S", active: false } } });
      await w.okr("records/update", { record: r.fan, fields: { en: { artnr: "FAN-1" } } });
      const leaves: unknown[][] = [
        ...(
          [
            ["=", 150],
            ["!=", 150],
            ["<", 100],
            ["<=", 150],
            [">", 100],
            [">=", 40],
            ["between", [40, 200]],
            ["in", [40, 150]],
            ["not_in", [40]],
            ["exists", true],
            ["exists", false],
            ["is", 300],
          ] as const
        ).map(([op, v]) => ["price", op, v]),
        ...(
          [
            ["=", "IB-S"],
            ["!=", "IB-S"],
            ["<", "IB"],
            [">=", "IB"],
            ["in", ["IB-S", "FAN-1"]],
            ["not_in", ["IB-S"]],
            ["exists", true],
            ["contains", "B-"],
            ["not_contains", "B-"],
            ["starts_with", "IB"],
            ["ends_with", "-1"],
            ["q", "fan"],
          ] as const
        ).map(([op, v]) => ["artnr", op, v]),
        ...(
          [
            ["=", true],
            ["!=", true],
            ["exists", false],
          ] as const
        ).map(([op, v]) => ["active", op, v]),
        ["active", "is_true"],
        ["active", "is_false"],
      ];
      const searches = leaves.flatMap((filter) => [
        { filter },
        { q: "ice", filter },
        { q: "+ice", filter: ["not", "", filter] },
      ]);
      const before = await Promise.all(searches.map(search));
      for (const field of ["price", "artnr", "active"]) await addFieldIndex(w.srv.ctx, w.project, field);
      const after = await Promise.all(searches.map(search));
      for (const [i, s] of searches.entries()) expect({ s, got: after[i] }).toEqual({ s, got: before[i]! });
      for (const field of ["artnr", "active"]) await removeFieldIndex(w.srv.ctx, w.project, field);
    },
  );

  test.if(!onPostgres)(
    "the index follows writes: an update, a delete and an undelete change what a filtered search finds",
    async () => {
      await addFieldIndex(w.srv.ctx, w.project, "price");
      const cheap = async () => (await search({ q: "+ice", filter: ["price", "<", 200] })).records.sort();
      expect(await cheap()).toEqual([r.mini, r.small].sort());
      await w.okr("records/update", { record: r.mini, fields: { en: { price: 500 } } });
      expect(await cheap()).toEqual([r.small]);
      await w.okr("records/delete", { record: r.small });
      expect(await cheap()).toEqual([]);
      await w.okr("records/undelete", { record: r.small });
      await w.okr("records/undelete", { record: r.old });
      expect(await cheap()).toEqual([r.old, r.small].sort());
      await w.okr("records/delete", { record: r.old });
      await w.okr("records/update", { record: r.mini, fields: { en: { price: 40 } } });
      expect(await cheap()).toEqual([r.mini, r.small].sort());
    },
  );

  test.if(!onPostgres)(
    "localized, list and unknown fields are refused with a reason; list and remove show and take one away",
    async () => {
      for (const [field, reason] of [
        ["name", "localized"],
        ["tags", "one value"],
        ["nope", "no field"],
      ])
        await expect(addFieldIndex(w.srv.ctx, w.project, field!)).rejects.toThrow(reason!);
      await expect(addFieldIndex(w.srv.ctx, "nosuchproject000000", "price")).rejects.toThrow(FieldIndexError);
      await addFieldIndex(w.srv.ctx, w.project, "price");
      const listed = await listFieldIndexes(w.srv.ctx, w.project);
      expect(listed.map((i) => i.field)).toEqual(["price"]);
      expect(await removeFieldIndex(w.srv.ctx, w.project, "price")).toBe(true);
      expect(await removeFieldIndex(w.srv.ctx, w.project, "price")).toBe(false);
      expect(await listFieldIndexes(w.srv.ctx, w.project)).toEqual([]);
      // Searches go on without it.
      expect((await search({ q: "+ice", filter: ["price", "<", 200] })).records.sort()).toEqual(
        [r.mini, r.small].sort(),
      );
    },
  );

  test.if(onPostgres)("on PostgreSQL every field index call is refused with the reason", async () => {
    await expect(addFieldIndex(w.srv.ctx, w.project, "price")).rejects.toThrow("for SQLite");
    await expect(listFieldIndexes(w.srv.ctx)).rejects.toThrow(FieldIndexError);
  });

  test.if(!onPostgres)("apis index add refuses while a server uses the data folder, and says so", () => {
    const got = apisCli([
      "index",
      "add",
      "--data",
      w.srv.ctx.config.dataDir,
      "--project",
      w.project,
      "--field",
      "price",
    ]);
    expect(got.code).toBe(1);
    expect(got.err).toContain("stop it first");
    const listed = apisCli(["index", "list", "--data", w.srv.ctx.config.dataDir, "--json"]);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.out)).toEqual([]);
    expect(apisCli(["index", "rebuild", "--data", w.srv.ctx.config.dataDir]).code).toBe(2);
  });

  test.if(!onPostgres)("a project deleted for good takes its field indexes with it", async () => {
    await addFieldIndex(w.srv.ctx, w.project, "price");
    expect((await listFieldIndexes(w.srv.ctx, w.project)).map((i) => i.field)).toEqual(["price"]);
    const owner = { token: w.owner.token };
    expect((await w.srv.call("/api/projects/delete", { ...owner, body: { project: w.project } })).status).toBe(200);
    // Deleted, not yet for good: the index stays (the project may come back).
    expect(await listFieldIndexes(w.srv.ctx, w.project)).toHaveLength(1);
    const gone = await w.srv.call("/api/projects/permanent_delete", { ...owner, body: { project: w.project } });
    expect(gone.status).toBe(200);
    expect(await listFieldIndexes(w.srv.ctx)).toEqual([]);
  });
});
