// Asset full-text search on PostgreSQL (src/db/pg/search.ts, assetMatchesPg) against SQLite's
// (assets.search.ts: assets_fts and assets_fts_en, filled by their triggers) over one corpus.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { SQL as Client } from "bun";
import { sql } from "drizzle-orm";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pgSqlText } from "../../../src/core/filter";
import { closeDatabase, migrate, openDatabase, type DB } from "../../../src/db/connection";
import { migratePg } from "../../../src/db/pg/migrate";
import { assetMatchesPg } from "../../../src/db/pg/search";
import { searchAssets } from "../../../src/features/assets/assets.search";
import { freshDatabase, pgAvailable } from "../../helpers/pg-cluster";

const P = "proj1";
const text = (value: string) => ({ type: "text", is_localized: false, value });
const ASSETS: {
  gid: string;
  name: string;
  metadata?: unknown;
  title?: unknown;
  description?: unknown;
  extracted?: unknown;
  status?: string;
}[] = [
  {
    gid: "a1",
    name: "red-running-shoes.jpg",
    metadata: { color: text("Red"), size: { type: "number", value: 42 } },
    title: { en: "Running shoes" },
  },
  {
    gid: "a2",
    name: "blue_shoe.png",
    metadata: { color: text("Blue") },
    description: { en: "A shoe for walking", de: "Ein Schuh zum Gehen" },
  },
  { gid: "a3", name: "Crème brûlée.tif", extracted: { Make: "Canon", Model: "EOS 5D Mark IV", ISO: 400 } },
  {
    gid: "a4",
    name: "catalogue 2024 v1.5.pdf",
    metadata: { notes: text("Printed catalogues; see sales@example.com") },
  },
  { gid: "a5", name: "shoebox.jpg", title: { en: "Shoebox", fr: "Boîte à chaussures" } },
  { gid: "a6", name: "Running track.jpg", description: { en: "The runner runs on the track" } },
  { gid: "a7", name: "old shoe.jpg", status: "deleted" },
  { gid: "a8", name: "cafés.jpg", metadata: { place: text("Naïve Café"), type: text("typed value") } },
];

const QUERIES: { q: string; language?: string }[] = [
  { q: "shoe" },
  { q: "shoe", language: "en" },
  { q: "shoes", language: "en" },
  { q: "running", language: "en" },
  { q: "run", language: "en" },
  { q: "runs", language: "en" },
  { q: "run" },
  { q: "sho" },
  { q: "shoe*", language: "en" },
  { q: "red shoe" },
  { q: "+red +shoe" },
  { q: "+shoe -blue" },
  { q: "shoe -box" },
  { q: '"running shoes"', language: "en" },
  { q: '"red running"' },
  { q: "creme" },
  { q: "BRÛLÉE" },
  { q: "canon" },
  { q: "eos 5d" },
  { q: "400" },
  { q: "42" },
  { q: "catalogue", language: "en" },
  { q: "catalogues", language: "en" },
  { q: "catal" },
  { q: "v1.5" },
  { q: "example.com" },
  { q: "sales" },
  { q: "schuh" },
  { q: "chaussures" },
  { q: "cafe" },
  { q: "naive" },
  { q: "text" },
  { q: "typed" },
  { q: "old" },
  { q: "-shoe" },
  { q: "*" },
  { q: "the", language: "en" },
];

describe.skipIf(!pgAvailable)("asset search on PostgreSQL", () => {
  let pg: Client;
  let close: () => Promise<void>;
  let dir: string;
  let lite: DB;
  beforeAll(async () => {
    ({ sql: pg, close } = await freshDatabase("assetsearch"));
    await migratePg(pg);
    dir = mkdtempSync(join(tmpdir(), "apis-pgassets-"));
    lite = openDatabase(join(dir, "apis.db"));
    migrate(lite);
    const c = lite.$client;
    c.run("INSERT INTO users (gid, created_on, updated_on) VALUES ('u1', 1, 1)");
    c.run(`INSERT INTO projects (gid, name, owner, created_on, updated_on) VALUES ('${P}', 'P', 'u1', 1, 1)`);
    await pg`INSERT INTO users (gid, created_on, updated_on) VALUES ('u1', 1, 1)`;
    await pg`INSERT INTO projects (gid, name, owner, created_on, updated_on) VALUES (${P}, 'P', 'u1', 1, 1)`;
    for (const a of ASSETS) {
      const json = [a.metadata ?? {}, a.title ?? {}, a.description ?? {}, a.extracted ?? {}].map((x) =>
        JSON.stringify(x),
      );
      c.query(
        "INSERT INTO assets (gid, project_gid, parent, type, name, status, metadata, title, description, extracted, created_on, updated_on) VALUES (?, ?, 'root', 'file', ?, ?, ?, ?, ?, ?, 1, 1)",
      ).run(a.gid, P, a.name, a.status ?? "active", ...json);
      await pg`INSERT INTO assets (gid, project_gid, parent, type, name, status, metadata, title, description, extracted, created_on, updated_on) VALUES (${a.gid}, ${P}, 'root', 'file', ${a.name}, ${a.status ?? "active"}, ${json[0]}::text::jsonb, ${json[1]}::text::jsonb, ${json[2]}::text::jsonb, ${json[3]}::text::jsonb, 1, 1)`;
    }
  });
  afterAll(async () => {
    if (lite) closeDatabase(lite);
    if (dir) rmSync(dir, { recursive: true, force: true });
    await close?.();
  });

  async function pgHits(x: (typeof QUERIES)[number]): Promise<string[]> {
    const m = assetMatchesPg(x.q, x.language);
    if (!m) return [];
    const q = pgSqlText(
      sql`SELECT a.gid FROM assets a WHERE a.project_gid = ${P}::text AND a.parent IS NOT NULL AND a.status = 'active' AND ${m.where} ORDER BY ${m.rank} DESC, a.id`,
    );
    return ((await pg.unsafe(q.sql, q.params as any[])) as { gid: string }[]).map((r) => r.gid);
  }

  test("every query of the table finds the same assets on PostgreSQL as on SQLite", async () => {
    const differences: string[] = [];
    let found = 0;
    for (const x of QUERIES) {
      const want = (await searchAssets(lite, P, { q: x.q, language: x.language }, { top: 0, size: 1000 })).rows.map(
        (r) => r.gid,
      );
      const got = await pgHits(x);
      if (want.length) found++;
      if (JSON.stringify([...got].sort()) !== JSON.stringify([...want].sort()))
        differences.push(`${JSON.stringify(x)}: SQLite ${JSON.stringify(want)}, PostgreSQL ${JSON.stringify(got)}`);
    }
    expect(differences).toEqual([]);
    expect(found).toBeGreaterThan(QUERIES.length * 0.6);
  });
});
