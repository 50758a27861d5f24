// The records feature's own SQL (rows, places, child counts, channels, link groups, the bulk
// selection) on whichever database the run uses: the same answers on SQLite and, with
// APIS_TEST_DATABASE=postgres, on PostgreSQL. The schema is a stand-in (one definition without
// fields) so that nothing but the records code runs; the unit is rolled back at the end, and the
// project the rows name is never made (foreign keys are checked at commit, which never comes).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mutate } from "../../src/db/mutate";
import { dialectOf, sessionOf } from "../../src/db/query";
import { setChannelsIn } from "../../src/features/records/channels.service";
import { recordsSelection } from "../../src/features/records/records.bulk";
import {
  childrenIn,
  formsOf,
  insertRecordIn,
  insertRecordsIn,
  recordRow,
  rowsByGids,
  rowsByIds,
  storeVals,
  Touch,
  type Rec,
} from "../../src/features/records/records.service";
import type { SchemaView } from "../../src/features/records/values.service";
import { TestServer } from "../helpers/server";

let srv: TestServer;
beforeAll(async () => {
  srv = await TestServer.start();
});
afterAll(() => srv.stop());

const ROLLED_BACK = "rolled back on purpose";

test("rows, places, counts, channels and links read back as written, on the run's database", async () => {
  const seen: Record<string, unknown> = {};
  await mutate(srv.ctx.db, undefined, async (tx) => {
    // The rows name a project that does not exist: foreign keys wait for a commit that never comes.
    if (dialectOf(tx).name === "postgres") await sessionOf(tx).exec("SET LOCAL session_replication_role = replica");
    else await sessionOf(tx).exec("PRAGMA defer_foreign_keys = ON");
    const def = { gid: "d", fields: [], byName: new Map(), byGid: new Map(), titlefield: null, childdefinitions: [] };
    const view = {
      projectGid: "p",
      languages: ["en"],
      options: { orderedorderings: ["x"], orderedchannels: ["__all__", "web"] },
      def: async () => def,
      known: () => def,
      hasOrdering: () => true,
      hasChannel: () => true,
    } as unknown as SchemaView;
    const touch = new Touch("p");
    const outside = { id: 0, gid: "outside", isLink: false, treelevel: 0, path: ["outside"] } as unknown as Rec;
    const top = await insertRecordIn(tx, view, touch, { parent: outside, definition: "d" });
    const a = await insertRecordIn(tx, view, touch, { parent: top, definition: "d" });
    const many = await insertRecordsIn(tx, view, touch, top, "d", [{}, {}, {}]);
    const b = await insertRecordIn(tx, view, touch, {
      parent: top,
      definition: "d",
      ordering: "x",
      beforeRecord: many[1]!.gid,
    });
    const link = await insertRecordIn(tx, view, touch, {
      parent: top,
      definition: "d",
      canonical: a.gid,
      isLink: true,
    });
    const names = new Map<string | null, string>([
      [a.gid, "a"],
      [many[0]!.gid, "m0"],
      [many[1]!.gid, "m1"],
      [many[2]!.gid, "m2"],
      [b.gid, "b"],
      [link.gid, "link"],
    ]);
    const named = (gids: (string | null)[]) => gids.map((g) => names.get(g) ?? g);
    seen.ids = [a, ...many, b, link].every((r) => Number.isSafeInteger(r.id) && r.id > 0);
    await storeVals(tx, view, touch, a, { en: { f: "x" } });
    await setChannelsIn(tx, view, touch, many[2]!, ["web"], true);
    for (const [k, o] of Object.entries({
      all: {},
      web: { channel: "web" },
      ordered: { ordering: "x" },
      orderedWeb: { ordering: "x", channel: "web" },
      orderedIds: { ordering: "x", idsOnly: true },
    })) {
      const c = await childrenIn(tx, top.gid, { top: 0, size: 10, ...o });
      seen[k] = { gids: named(c.gids), total: c.total };
    }
    seen.rows = (await rowsByIds(tx, "p", [a.id, many[2]!.id])).map((r) => ({
      name: names.get(r.gid),
      vals: r.vals,
      channels: r.channels,
      isLink: r.isLink,
    }));
    seen.byGids = named((await rowsByGids(tx, "p", [b.gid, link.gid])).map((r) => r.gid)).sort();
    seen.forms = Object.values(await formsOf(tx, view, [a, b], { languages: ["en"] })).map((f) => ({
      backlinks: named(f.backlinks as string[]),
      orderings: Object.keys(f.orderings as object),
    }));
    seen.selected = named(
      ((await recordsSelection.children!(tx, "p", { children: top.gid, channel: "web" })) ?? []).map((i) => i.gid),
    );
    seen.selectedGids = named((await recordsSelection.byGids(tx, "p", [a.gid, "nope"])).items.map((i) => i.gid));
    seen.childcount = (await recordRow(tx, "p", top.gid))!.childcount;
    throw new Error(ROLLED_BACK);
  }).catch((e: Error) => {
    if (e.message !== ROLLED_BACK) throw e;
  });
  expect(seen).toEqual({
    ids: true,
    all: { gids: ["a", "m0", "m1", "m2", "b", "link"], total: 6 },
    web: { gids: ["m2"], total: 1 },
    // b was placed before m1; the others in the order they were made.
    ordered: { gids: ["a", "m0", "b", "m1", "m2", "link"], total: 6 },
    orderedWeb: { gids: ["m2"], total: 1 },
    orderedIds: { gids: [null, null, null, null, null, null], total: 6 },
    rows: [
      { name: "a", vals: { en: { f: "x" } }, channels: ["__all__"], isLink: false },
      { name: "m2", vals: {}, channels: ["__all__", "web"], isLink: false },
    ],
    byGids: ["b", "link"],
    forms: [
      { backlinks: ["link"], orderings: ["x"] },
      { backlinks: [], orderings: ["x"] },
    ],
    selected: ["m2"],
    selectedGids: ["a"],
    childcount: 6,
  });
});
