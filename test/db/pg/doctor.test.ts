// The PostgreSQL checks of `apis doctor` (src/db/pg/doctor.ts) on a real cluster.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { SQL } from "bun";
import { checkPg } from "../../../src/db/pg/doctor";
import { migratePg } from "../../../src/db/pg/migrate";
import { embeddedPgMigrations } from "../../../src/db/pg/migrations.generated";
import { freshDatabase, pgAvailable } from "../../helpers/pg-cluster";

describe.skipIf(!pgAvailable)("the PostgreSQL checks of apis doctor", () => {
  let client: SQL;
  let close: () => Promise<void>;
  beforeAll(async () => {
    ({ sql: client, close } = await freshDatabase("doctor"));
  });
  afterAll(async () => {
    await close?.();
  });

  test("a new database passes the version and extension checks and reports its migrations as pending, then as up to date", async () => {
    const before = await checkPg(client);
    expect(before.map((c) => [c.name, c.ok])).toEqual([
      ["server version", true],
      ["extension unaccent", true],
      ["extension pg_trgm", true],
      ["migrations", false],
    ]);
    expect(before[3]!.detail).toBe(`0 of ${embeddedPgMigrations.length} applied: the server migrates at start`);
    await migratePg(client);
    const after = await checkPg(client);
    expect(after.every((c) => c.ok)).toBe(true);
    expect(after[3]!.detail).toBe(`${embeddedPgMigrations.length} applied, up to date`);
  });
});
