// `--database` / `APIS_DATABASE_URL` (src/config.ts, src/cli/database.cli.ts): parsing, what the
// commands do with a PostgreSQL URL (serve, user, jobs, doctor, migrate), on a real cluster.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConfigError, databaseKind, loadConfig, redactDatabaseUrl } from "../../../src/config";
import { embeddedPgMigrations } from "../../../src/db/pg/migrations.generated";
import { apisCli, cliEnv, REPO_ROOT, servedUrl, SLOW_TEST_MS } from "../../helpers/server";
import { freshDatabase, pgAvailable, pgSkipReason } from "../../helpers/pg-cluster";

describe("the --database setting", () => {
  test("is the data folder's SQLite file by default, and takes a postgres:// or postgresql:// URL from the flag or the environment", () => {
    expect(loadConfig({}, {}).database).toBe("sqlite:");
    expect(databaseKind(loadConfig({}, {}))).toBe("sqlite");
    const flag = loadConfig({ database: "postgres://apis:pw@db.example:5432/apis" }, {});
    expect(databaseKind(flag)).toBe("postgres");
    expect(loadConfig({}, { APIS_DATABASE_URL: "postgresql://db/apis" }).database).toBe("postgresql://db/apis");
  });

  test("refuses anything else in one line that does not echo the value (it may hold a password)", () => {
    for (const bad of ["mysql://u:secret@h/db", "sqlite:/tmp/x.db", "postgres://", "postgres://a b"]) {
      let err: unknown;
      try {
        loadConfig({ database: bad }, {});
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as Error).message).toBe(
        "invalid --database=(hidden): not sqlite: (the data folder's database) or postgres://user:password@host:port/database",
      );
    }
  });

  test("a URL is printed without its password", () => {
    expect(redactDatabaseUrl("postgres://apis:s3cr:et@db:5432/apis")).toBe("postgres://apis:***@db:5432/apis");
    expect(redactDatabaseUrl("postgres://apis@db/apis")).toBe("postgres://apis@db/apis");
  });

  test(
    "serve with a PostgreSQL database it cannot reach stops at start with one line naming it, without its password or a stack",
    () => {
      const data = mkdtempSync(join(tmpdir(), "apis-dbset-"));
      try {
        const r = apisCli([
          "serve",
          "--data",
          data,
          "--port",
          "0",
          "--database",
          "postgres://apis:secret@127.0.0.1:1/apis",
        ]);
        expect(r.code).toBe(1);
        expect(r.out).toBe("");
        expect(r.err.trim().split("\n")).toEqual([
          expect.stringMatching(/^apis: cannot open the database postgres:\/\/apis:\*\*\*@127\.0\.0\.1:1\/apis: /),
        ]);
        expect(r.err).not.toContain("secret");
      } finally {
        rmSync(data, { recursive: true, force: true });
      }
    },
    SLOW_TEST_MS,
  );
});

if (!pgAvailable) test.skip(pgSkipReason, () => {});

describe.skipIf(!pgAvailable)("apis doctor and apis migrate with a PostgreSQL URL", () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let data: string;
  beforeAll(async () => {
    db = await freshDatabase("doctorcli");
    data = mkdtempSync(join(tmpdir(), "apis-dbset-"));
  });
  afterAll(async () => {
    await db?.close();
    rmSync(data, { recursive: true, force: true });
  });

  test(
    "doctor checks the connection, the server version, the extensions and the migrations; migrate applies them",
    () => {
      const before = apisCli(["doctor", "--data", data, "--database", db.url]);
      expect(before.code).toBe(1);
      expect(before.out).toMatch(
        /^ok {4}database: postgres:\/\/postgres@127\.0\.0\.1:\d+\/\w+ \(connected as postgres/m,
      );
      expect(before.out).toMatch(/^ok {4}server version: PostgreSQL 1\d/m);
      expect(before.out).toContain("ok    extension unaccent: ");
      expect(before.out).toContain("ok    extension pg_trgm: ");
      expect(before.out).toContain(
        `FAIL  database migrations: 0 of ${embeddedPgMigrations.length} applied: the server migrates at start`,
      );
      const migrated = apisCli(["migrate", "--data", data, "--database", db.url]);
      expect(migrated.code).toBe(0);
      expect(migrated.out).toContain(`(${embeddedPgMigrations.length} migration(s) applied`);
      const after = apisCli(["doctor", "--data", data, "--database", db.url]);
      expect(after.out).toContain(`ok    database migrations: ${embeddedPgMigrations.length} applied, up to date`);
      expect(after.out).toContain("all checks passed");
      expect(after.code).toBe(0);
    },
    SLOW_TEST_MS,
  );

  test(
    "two servers on one PostgreSQL database accept each other's tokens, and the user and jobs commands run on it",
    async () => {
      const made = apisCli([
        "user",
        "create",
        "--username",
        "nodeuser",
        "--email",
        "nodeuser@example.test",
        "--password",
        "node-pass-12345",
        "--data",
        data,
        "--database",
        db.url,
      ]);
      expect(made.err).toBe("");
      expect(made.code).toBe(0);
      expect(apisCli(["user", "list", "--data", data, "--database", db.url]).out).toContain("nodeuser");
      const checkpoint = apisCli(["jobs", "run", "checkpoint", "--data", data, "--database", db.url]);
      expect(checkpoint.code).toBe(0);
      expect(checkpoint.out).toContain("nothing to do: PostgreSQL checkpoints its write-ahead log itself");
      // SQLite's checkpoint is no task of a server on PostgreSQL: not listed (nor scheduled).
      const list = apisCli(["jobs", "list", "--json", "--data", data, "--database", db.url]);
      expect(list.code).toBe(0);
      const listed = (JSON.parse(list.out).schedules as { name: string }[]).map((s) => s.name);
      expect(listed).toEqual(expect.arrayContaining(["changelog", "jobs", "codes", "temp"]));
      expect(listed).not.toContain("checkpoint");
      expect(apisCli(["jobs", "list", "--data", data, "--database", db.url]).out).not.toContain("checkpoint");
      const nodes = [0, 1].map(() => {
        const folder = mkdtempSync(join(tmpdir(), "apis-node-"));
        const proc = Bun.spawn(
          [process.execPath, "src/main.ts", "serve", "--data", folder, "--port", "0", "--database", db.url],
          { cwd: REPO_ROOT, env: cliEnv(), stdout: "pipe", stderr: "pipe" },
        );
        return { folder, proc };
      });
      try {
        const urls: string[] = [];
        for (const n of nodes) urls.push(await servedUrl(n.proc));
        const login = await fetch(`${urls[0]}/api/login`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ username: "nodeuser", password: "node-pass-12345" }),
        });
        expect(login.status).toBe(200);
        const token = login.headers.get("authorization")!;
        const me = await fetch(`${urls[1]}/api/users/get`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: token },
          body: JSON.stringify({ user: ((await login.json()) as { result: { user: string } }).result.user }),
        });
        expect(me.status).toBe(200);
        expect(JSON.stringify(await me.json())).toContain('"nodeuser"');
      } finally {
        for (const n of nodes) {
          n.proc.kill("SIGTERM");
          await n.proc.exited;
          rmSync(n.folder, { recursive: true, force: true });
        }
      }
    },
    SLOW_TEST_MS,
  );

  test(
    "apis serve on PostgreSQL names the database (without its password) and where the files are in its log at start",
    async () => {
      const folder = mkdtempSync(join(tmpdir(), "apis-node-"));
      // The run's cluster trusts every login: the password is only there to be left out.
      const url = new URL(db.url);
      url.password = "not-to-be-printed";
      const proc = Bun.spawn(
        [process.execPath, "src/main.ts", "serve", "--data", folder, "--port", "0", "--database", url.toString()],
        { cwd: REPO_ROOT, env: cliEnv(), stdout: "pipe", stderr: "pipe" },
      );
      try {
        await servedUrl(proc);
        proc.kill("SIGTERM");
        await proc.exited;
        const said = await new Response(proc.stderr).text();
        url.password = "***";
        expect(said).toContain(`INFO: database ${decodeURIComponent(url.toString())}, files in file:${folder}`);
        expect(said).not.toContain("not-to-be-printed");
      } finally {
        proc.kill("SIGKILL");
        rmSync(folder, { recursive: true, force: true });
      }
    },
    SLOW_TEST_MS,
  );

  test(
    "doctor with a database it cannot reach fails that check in one line, without the password or a stack",
    () => {
      const r = apisCli(["doctor", "--data", data, "--database", "postgres://apis:secret@127.0.0.1:1/apis"]);
      expect(r.code).toBe(1);
      const line = r.out.split("\n").find((l) => l.includes(" database:"));
      expect(line).toMatch(/^FAIL {2}database: /);
      expect(r.out).not.toContain("secret");
      expect(r.out + r.err).not.toContain("    at ");
      expect(r.out).not.toContain("server version");
    },
    SLOW_TEST_MS,
  );

  test(
    "serve, migrate and doctor refuse a database a newer Apis migrated, in one line saying so, instead of serving a schema this build does not know",
    async () => {
      const newer = await freshDatabase("newerapis");
      const folder = mkdtempSync(join(tmpdir(), "apis-newer-"));
      try {
        expect(apisCli(["migrate", "--data", folder, "--database", newer.url]).code).toBe(0);
        // What a newer build's migration leaves: a row later than this build's newest.
        const later = embeddedPgMigrations.at(-1)!.when + 86_400_000;
        await newer.sql`INSERT INTO drizzle.__drizzle_migrations (hash, created_at) VALUES ('newer', ${later})`;
        const said =
          /the database was migrated by a newer Apis than this one \(it holds a migration this build does not know\): run that version on every node, or restore the backup taken before the upgrade$/;
        const serve = apisCli(["serve", "--data", folder, "--port", "0", "--database", newer.url]);
        expect({ code: serve.code, out: serve.out, lines: serve.err.trim().split("\n").length }).toEqual({
          code: 2,
          out: "",
          lines: 1,
        });
        expect(serve.err.trim()).toMatch(said);
        const migrate = apisCli(["migrate", "--data", folder, "--database", newer.url]);
        expect(migrate.code).toBe(2);
        expect(migrate.err.trim()).toMatch(said);
        const doctor = apisCli(["doctor", "--data", folder, "--database", newer.url]);
        expect(doctor.code).toBe(1);
        expect(doctor.out.split("\n").find((l) => l.includes("database migrations:"))).toMatch(
          /^FAIL {2}database migrations: the database was migrated by a newer Apis/,
        );
      } finally {
        rmSync(folder, { recursive: true, force: true });
        await newer.close();
      }
    },
    SLOW_TEST_MS,
  );
});
