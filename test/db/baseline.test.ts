import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Database } from "bun:sqlite";
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { baselineScript } from "../../src/db/baseline";
import { createFromImage, migrate, migrationsMeta, openDatabase, type DB } from "../../src/db/connection";
import { embeddedBaseline, embeddedImage, embeddedMigrations } from "../../src/db/migrations.generated";

let dir: string;
const opened: DB[] = [];
const open = (name: string) => {
  const db = openDatabase(join(dir, name));
  opened.push(db);
  return db;
};

/** Everything a database holds that migrations decide: its schema as SQLite lists it, and every table's rows. */
function contents(sqlite: Database) {
  const schema = sqlite.query("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY rowid").all() as {
    type: string;
    name: string;
    sql: string | null;
  }[];
  const rows: Record<string, unknown[]> = {};
  for (const t of schema.filter((o) => o.type === "table" && !/^CREATE VIRTUAL TABLE/i.test(o.sql ?? "")))
    rows[t.name] = sqlite.query(`SELECT * FROM "${t.name}"`).values();
  const pragmas = Object.fromEntries(
    ["user_version", "application_id", "auto_vacuum"].map((p) => [p, sqlite.query(`PRAGMA ${p}`).values()]),
  );
  return { schema, rows, pragmas };
}

/** drizzle's migrator alone, statement by statement, as before the baseline existed. */
const stepByStep = (db: DB) => (db as any).dialect.migrate(migrationsMeta(), (db as any).session, {});

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "apis-baseline-"));
});
afterAll(() => {
  for (const db of opened) db.$client.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("the baseline schema of an empty database", () => {
  test("an empty database given the baseline equals one migrated step by step: the same schema, journal rows and table contents", () => {
    const fresh = open("baseline.db");
    const migrated = open("steps.db");
    expect(migrate(fresh)).toBe(embeddedMigrations.length);
    stepByStep(migrated);
    const a = contents(fresh.$client);
    const b = contents(migrated.$client);
    expect(a.schema).toEqual(b.schema);
    expect(a.rows).toEqual(b.rows);
    expect(a.pragmas).toEqual(b.pragmas);
    expect(a.rows.__drizzle_migrations).toHaveLength(embeddedMigrations.length);
    expect(fresh.$client.query("PRAGMA integrity_check").values()).toEqual([["ok"]]);
  });

  test("the embedded baseline is the one the embedded migrations make (npm run db:generate writes both)", () => {
    const migrated = open("steps-again.db");
    stepByStep(migrated);
    expect(embeddedBaseline.upTo).toBe(embeddedMigrations.at(-1)!.when);
    expect(baselineScript(migrated.$client)).toBe(embeddedBaseline.sql);
  });

  test("a database already holding some migrations gets the rest from drizzle's migrator, as before", () => {
    const part = open("part.db");
    const meta = migrationsMeta();
    (part as any).dialect.migrate(meta.slice(0, 5), (part as any).session, {});
    expect(migrate(part)).toBe(meta.length - 5);
    const whole = open("whole.db");
    stepByStep(whole);
    expect(contents(part.$client)).toEqual(contents(whole.$client));
  });

  test("an empty database is made from the baseline script, not by running the migrations", () => {
    const sql = embeddedBaseline.sql;
    embeddedBaseline.sql = sql + "\nCREATE TABLE `baseline_probe` (`x` integer);";
    try {
      const db = open("probe.db");
      expect(migrate(db)).toBe(embeddedMigrations.length);
      expect(db.$client.query("SELECT name FROM sqlite_master WHERE name = 'baseline_probe'").values()).toEqual([
        ["baseline_probe"],
      ]);
      const old = open("probe-old.db");
      stepByStep(old);
      expect(migrate(old)).toBe(0);
      expect(old.$client.query("SELECT name FROM sqlite_master WHERE name = 'baseline_probe'").values()).toEqual([]);
    } finally {
      embeddedBaseline.sql = sql;
    }
  });

  test("migrating again changes nothing", () => {
    const db = open("twice.db");
    migrate(db);
    const before = contents(db.$client);
    expect(migrate(db)).toBe(0);
    expect(contents(db.$client)).toEqual(before);
  });
});

describe("the image a new data folder's database is written from", () => {
  test("a database written from the image equals one migrated step by step, is in WAL mode, passes SQLite's integrity check and needs no migration", () => {
    const file = join(dir, "image.db");
    expect(createFromImage(file)).toBe(true);
    const fromImage = open("image.db");
    const migrated = open("image-steps.db");
    stepByStep(migrated);
    expect(contents(fromImage.$client)).toEqual(contents(migrated.$client));
    expect(fromImage.$client.query("PRAGMA journal_mode").values()).toEqual([["wal"]]);
    expect(fromImage.$client.query("PRAGMA integrity_check").values()).toEqual([["ok"]]);
    expect(migrate(fromImage)).toBe(0);
    expect(embeddedImage.upTo).toBe(embeddedMigrations.at(-1)!.when);
    // Nothing is left beside it but SQLite's own files.
    expect(
      readdirSync(dir)
        .filter((f) => f.startsWith("image.db"))
        .sort(),
    ).toEqual(["image.db", "image.db-shm", "image.db-wal"]);
  });

  test("an existing file, even an empty one, is never overwritten by the image", () => {
    const file = join(dir, "existing.db");
    writeFileSync(file, "");
    expect(createFromImage(file)).toBe(false);
    expect(statSync(file).size).toBe(0);
    // An empty file is still an empty database: the baseline makes it.
    const db = open("existing.db");
    expect(migrate(db)).toBe(embeddedMigrations.length);
    const migrated = open("existing-steps.db");
    stepByStep(migrated);
    expect(contents(db.$client)).toEqual(contents(migrated.$client));
  });

  test("where the image cannot be put in place (no such folder here), nothing is left behind and the database is made the slower way", () => {
    const file = join(dir, "no-such-folder", "apis.db");
    expect(createFromImage(file)).toBe(false);
    expect(existsSync(join(dir, "no-such-folder"))).toBe(false);
    expect(readdirSync(dir).filter((f) => f.includes(".image-"))).toEqual([]);
  });

  test("the next start of a database made from the image runs no migration and changes nothing", () => {
    const file = join(dir, "restart.db");
    createFromImage(file);
    const first = open("restart.db");
    const before = contents(first.$client);
    first.$client.close();
    const again = open("restart.db");
    expect(migrate(again)).toBe(0);
    expect(contents(again.$client)).toEqual(before);
    expect(existsSync(file)).toBe(true);
  });
});
