// The features' SQLite tables used by drizzle on PostgreSQL (src/db/pg/codecs.ts): statements built
// from the same table objects bind and read JSON, booleans and integers the PostgreSQL way, against
// the real PostgreSQL schema (migrations of drizzle-pg/) on a throw-away cluster.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { and, eq } from "drizzle-orm";
import type { DB } from "../../../src/db/connection";
import { usePgCodecs } from "../../../src/db/pg/codecs";
import { migratePg } from "../../../src/db/pg/migrate";
import { PgPort, pgClient, type PgSession } from "../../../src/db/pg/port";
import { readUnit, unitOfWork } from "../../../src/db/unit";
import { projects } from "../../../src/features/projects/projects.table";
import { records } from "../../../src/features/records/records.table";
import { users } from "../../../src/features/users/users.table";
import { freshDatabase, pgAvailable, pgSkipReason } from "../../helpers/pg-cluster";

if (!pgAvailable) test.skip(pgSkipReason, () => {});

describe.skipIf(!pgAvailable)("the features' tables on PostgreSQL", () => {
  let port: PgPort;
  let close: () => Promise<void>;
  let was = false;
  beforeAll(async () => {
    const db = await freshDatabase("codecs");
    await migratePg(db.sql);
    close = db.close;
    port = new PgPort(pgClient(db.url, 4));
    was = usePgCodecs(true);
  });
  afterAll(async () => {
    usePgCodecs(was);
    await port?.close();
    await close?.();
  });

  /** What a feature holds: the session's drizzle, typed as SQLite's (the features' tables are SQLite's). */
  const tx = (s: PgSession) => s.tx as unknown as DB;
  const write = <T>(fn: (s: PgSession) => Promise<T>) => unitOfWork(port, undefined, (s) => fn(s));
  const t = 1_700_000_000.5;

  test("rows inserted with the SQLite tables keep JSON as JSON values and booleans as booleans", async () => {
    await write(async (s) => {
      await tx(s).insert(users).values({ gid: "u1", username: "ann", admin: true, createdOn: t, updatedOn: t });
      await tx(s)
        .insert(projects)
        .values({ gid: "p1", name: "P", owner: "u1", options: { language: "en" }, createdOn: t, updatedOn: t });
      await tx(s)
        .insert(records)
        .values({
          gid: "r1",
          projectGid: "p1",
          canonical: "r1",
          isLink: false,
          definition: "d",
          path: ["r1"],
          channels: [],
          vals: { en: { name: "Shoe", note: '{"looks":"like json"}' } },
          checks: { invalid: [], empty: {}, untranslated: {} },
          createdOn: t,
          updatedOn: t,
        });
    });
    const [kind] =
      await port.client`SELECT jsonb_typeof(vals) AS v, jsonb_typeof(path) AS p, vals #>> '{en,note}' AS note, pg_typeof(is_link)::text AS b FROM records WHERE gid = 'r1'`;
    expect(kind).toEqual({ v: "object", p: "array", note: '{"looks":"like json"}', b: "boolean" });
  });

  test("reads through the SQLite tables give the values SQLite's reads give", async () => {
    const got = await readUnit(port, (s) =>
      tx(s)
        .select({
          id: records.id,
          isLink: records.isLink,
          path: records.path,
          vals: records.vals,
          created: records.createdOn,
        })
        .from(records)
        .where(and(eq(records.gid, "r1"), eq(records.isLink, false))),
    );
    expect(got).toEqual([
      { id: 1, isLink: false, path: ["r1"], vals: { en: { name: "Shoe", note: '{"looks":"like json"}' } }, created: t },
    ]);
    const [u] = await readUnit(port, (s) =>
      tx(s).select({ admin: users.admin }).from(users).where(eq(users.gid, "u1")),
    );
    expect(u).toEqual({ admin: true });
  });

  test("updates bind the same way", async () => {
    await write((s) =>
      tx(s)
        .update(records)
        .set({ isLink: true, vals: { en: { name: "Boot" } }, channels: ["web"] })
        .where(eq(records.gid, "r1")),
    );
    const [r] = await readUnit(port, (s) =>
      tx(s)
        .select({ isLink: records.isLink, vals: records.vals, channels: records.channels })
        .from(records)
        .where(eq(records.gid, "r1")),
    );
    expect(r).toEqual({ isLink: true, vals: { en: { name: "Boot" } }, channels: ["web"] });
  });
});
