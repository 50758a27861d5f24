import { afterAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defaultValue, loadConfig, settings } from "../../src/config";
import { freshDatabase, pgAvailable } from "../helpers/pg-cluster";
import { servedUrl, until, SLOW_TEST_MS } from "../helpers/server";

const root = join(import.meta.dir, "../..");
const dirs: string[] = [];
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), "apis-cli-"));
  dirs.push(d);
  return d;
};
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function apis(args: string[], env: Record<string, string> = {}) {
  const p = Bun.spawnSync([process.execPath, "src/main.ts", ...args], {
    cwd: root,
    env: { ...process.env, APIS_LOG_LEVEL: "error", ...env },
  });
  return { code: p.exitCode, out: p.stdout.toString(), err: p.stderr.toString() };
}

describe("the command line", () => {
  test(
    "--version prints the dotted version",
    () => {
      const r = apis(["--version"]);
      expect(r.code).toBe(0);
      expect(r.out.trim()).toMatch(/^\d{4}\.\d+\.\d+$/);
    },
    SLOW_TEST_MS,
  );

  test(
    "--help lists the commands and every setting",
    () => {
      const r = apis(["--help"]);
      expect(r.code).toBe(0);
      for (const word of ["serve", "user create", "migrate", "doctor", "APIS_PORT", "APIS_DATA", "APIS_JWT_SECRET"])
        expect(r.out).toContain(word);
    },
    SLOW_TEST_MS,
  );

  test(
    "a bad setting stops start-up with one line and exit code 2",
    () => {
      const r = apis(["serve", "--port", "99999"]);
      expect(r.code).toBe(2);
      expect(r.err.trim().split("\n")).toHaveLength(1);
      expect(r.err).toContain("--port");
      const env = apis(["serve"], { APIS_LOG_LEVEL: "loud" });
      expect(env.code).toBe(2);
      expect(env.err).toContain("APIS_LOG_LEVEL");
    },
    SLOW_TEST_MS,
  );

  test(
    "a mistyped flag is a usage error with exit code 2, not silently ignored",
    () => {
      const r = apis(["migrate", "--data", tmp(), "--dat", "x"]);
      expect(r.code).toBe(2);
      expect(r.err).toContain("--dat");
    },
    SLOW_TEST_MS,
  );

  test(
    "an unknown command is a usage error with exit code 2",
    () => {
      expect(apis(["frobnicate"]).code).toBe(2);
    },
    SLOW_TEST_MS,
  );

  test(
    "migrate applies the migrations to a new data folder",
    () => {
      const r = apis(["migrate", "--data", tmp()]);
      expect(r.code).toBe(0);
      expect(r.out).toContain("up to date");
    },
    SLOW_TEST_MS,
  );

  test(
    "user create bootstraps an account that can log in, and list shows it",
    async () => {
      const data = tmp();
      const c = apis([
        "user",
        "create",
        "--data",
        data,
        "--username",
        "root",
        "--email",
        "root@example.test",
        "--password",
        "secret-pass-1",
        "--name",
        "Root",
      ]);
      expect(c.code).toBe(0);
      const dup = apis([
        "user",
        "create",
        "--data",
        data,
        "--username",
        "root",
        "--email",
        "x@example.test",
        "--password",
        "secret-pass-1",
      ]);
      expect(dup.code).toBe(1);
      const weak = apis([
        "user",
        "create",
        "--data",
        data,
        "--username",
        "weak",
        "--email",
        "w@example.test",
        "--password",
        "short",
      ]);
      expect(weak.code).toBe(2);
      const list = apis(["user", "list", "--json", "--data", data]);
      expect(JSON.parse(list.out)).toEqual([
        expect.objectContaining({ username: "root", email: "root@example.test", name: "Root", status: "active" }),
      ]);
    },
    SLOW_TEST_MS,
  );

  test(
    "user deactivate locks an account out and user reactivate lets it back in",
    async () => {
      const data = tmp();
      apis([
        "user",
        "create",
        "--data",
        data,
        "--username",
        "ann",
        "--email",
        "ann@example.test",
        "--password",
        "secret-pass-1",
      ]);
      expect(apis(["user", "deactivate", "--data", data, "--username", "ann"]).code).toBe(0);
      const listed = () => JSON.parse(apis(["user", "list", "--json", "--data", data]).out)[0].status;
      expect(listed()).toBe("inactive");
      expect(apis(["user", "reactivate", "--data", data, "--username", "ann"]).code).toBe(0);
      expect(listed()).toBe("active");
      expect(apis(["user", "reactivate", "--data", data, "--username", "ann"]).code).toBe(2);
    },
    SLOW_TEST_MS,
  );

  test(
    "doctor checks sharp, SQLite and the data folder",
    () => {
      const r = apis(["doctor", "--data", tmp()]);
      expect(r.code).toBe(0);
      expect(r.out).toContain("libvips");
      expect(r.out).toContain("all checks passed");
    },
    SLOW_TEST_MS,
  );
});

describe("a mistyped data folder", () => {
  test(
    "user and index commands other than user create refuse a folder without a database, with exit code 2, instead of starting an empty instance there",
    () => {
      const data = join(tmp(), "typo");
      for (const args of [
        ["user", "list"],
        ["user", "set-password", "--username", "ann", "--password", "x"],
        ["index", "list"],
      ]) {
        const r = apis([...args, "--data", data]);
        expect(r.code).toBe(2);
        expect(r.err).toStartWith(
          `apis: no database in ${data}: check --data (or APIS_DATA); apis ${args[0]} ${args[1]} works`,
        );
      }
      expect(existsSync(data)).toBe(false);
      expect(apis(["user", "--data", data]).err).toStartWith("apis: usage: apis user");
      expect(
        apis([
          "user",
          "create",
          "--username",
          "ann",
          "--email",
          "ann@example.com",
          "--password",
          "long enough pass",
          "--data",
          data,
        ]).code,
      ).toBe(0);
      expect(apis(["user", "list", "--data", data]).out).toContain("ann");
    },
    SLOW_TEST_MS,
  );
});

describe("backup", () => {
  /** A data folder with a database in it. */
  const instance = () => {
    const data = tmp();
    expect(apis(["migrate", "--data", data]).code).toBe(0);
    return data;
  };

  test(
    "backup create --out with a folder writes an archive with the default name inside it instead of failing with EISDIR",
    () => {
      const data = instance();
      const folder = tmp();
      const first = apis(["backup", "create", "--data", data, "--out", folder]);
      expect(first.err).toBe("");
      expect(first.code).toBe(0);
      const second = apis(["backup", "create", "--data", data, "--out", `${join(folder, "new")}/`]);
      expect(second.code).toBe(0);
      const made = readdirSync(folder).filter((n) => n.endsWith(".tar"));
      expect(made).toHaveLength(1);
      expect(made[0]).toMatch(/^apis-\d{8}-\d{6}\.tar$/);
      expect(readdirSync(join(folder, "new"))[0]).toMatch(/^apis-\d{8}-\d{6}\.tar$/);
      expect(apis(["backup", "verify", join(folder, made[0]!)]).code).toBe(0);
    },
    SLOW_TEST_MS,
  );

  test(
    "backup verify and restore of a folder or a compressed archive say what it is, with exit code 2 and nothing changed",
    () => {
      const data = instance();
      const archive = join(tmp(), "a.tar");
      expect(apis(["backup", "create", "--data", data, "--out", archive]).code).toBe(0);
      const gz = `${archive}.gz`;
      writeFileSync(gz, Bun.gzipSync(readFileSync(archive)));
      const folder = tmp();
      for (const sub of [["verify"], ["restore", "--yes", "--data", data]]) {
        const dir = apis(["backup", sub[0]!, folder, ...sub.slice(1)]);
        expect(dir.code).toBe(2);
        expect(dir.err).toBe(
          `apis: ${folder} is a folder, not an archive; give the .tar file (apis backup list shows them)\n`,
        );
        const packed = apis(["backup", sub[0]!, gz, ...sub.slice(1)]);
        expect(packed.code).toBe(2);
        expect(packed.err).toBe(`apis: ${gz} is compressed with gzip; decompress it first (gunzip ${gz})\n`);
      }
      expect(readdirSync(data)).toContain("apis.db");
    },
    SLOW_TEST_MS,
  );
});

describe("arguments", () => {
  test(
    "a switch never takes the word after it: restore --keep-previous FILE --yes restores FILE and keeps the previous state",
    () => {
      const data = tmp();
      expect(apis(["migrate", "--data", data]).code).toBe(0);
      const archive = join(tmp(), "a.tar");
      expect(apis(["backup", "create", "--data", data, "--out", archive]).code).toBe(0);
      const r = apis(["backup", "restore", "--keep-previous", archive, "--yes", "--json", "--data", data]);
      expect(r.err).toBe("");
      expect(r.code).toBe(0);
      const { previous } = JSON.parse(r.out);
      expect(readdirSync(previous)).toContain("apis.db");
      // A true-or-false setting is a switch too: the archive after it is still the archive.
      const s = apis(["backup", "restore", "--yes", "--media-redirect", archive, "--data", data]);
      expect(s.err).toBe("");
      expect(s.code).toBe(0);
    },
    SLOW_TEST_MS,
  );

  test(
    "a true-or-false setting reads --flag, --flag=false and --flag false as before, and refuses another word as its value",
    () => {
      const data = tmp();
      for (const forms of [["--metrics"], ["--metrics=false"], ["--metrics", "false"], ["--trust-proxy", "true"]])
        expect(apis(["migrate", "--data", data, ...forms]).code).toBe(0);
      expectRefused(apis(["migrate", "--data", data, "--metrics=maybe"]), 'invalid --metrics="maybe"');
      expectRefused(apis(["migrate", "--data", data, "--metrics", "maybe"]), 'unexpected word "maybe"');
      expectRefused(apis(["user", "list", "--data", data, "--json=maybe"]), "--json is a switch");
    },
    SLOW_TEST_MS,
  );

  test(
    "a flag that needs a value and is given none is a usage error naming it, with exit code 2",
    () => {
      const data = tmp();
      expect(apis(["migrate", "--data", data]).code).toBe(0);
      for (const [args, flag] of [
        [["backup", "create", "--data", data, "--out"], "out"],
        [["backup", "create", "--out", "--data", data], "out"],
        [["migrate", "--data"], "data"],
      ] as [string[], string][]) {
        const r = apis(args);
        expect(r.code).toBe(2);
        expect(r.err).toBe(`apis: --${flag} needs a value\n`);
      }
    },
    SLOW_TEST_MS,
  );

  test(
    "a word a command does not take is a usage error naming it, with exit code 2, and nothing is done",
    () => {
      const data = join(tmp(), "never-made");
      for (const [args, word] of [
        [["backup", "verify", "A.tar", "B.tar"], "B.tar"],
        [["backup", "create", "extra"], "extra"],
        [["backup", "list", "extra"], "extra"],
        [["backup", "restore", "A.tar", "B.tar", "--yes"], "B.tar"],
        [["user", "list", "extra"], "extra"],
        [
          ["user", "create", "ann", "--username", "ann", "--email", "a@example.test", "--password", "long enough pass"],
          "ann",
        ],
        [["serve", "foo"], "foo"],
        [["migrate", "extra"], "extra"],
        [["doctor", "extra"], "extra"],
        [["vacuum", "extra"], "extra"],
        [["migrate-database", "extra", "--to", "postgres://u:p@localhost/db"], "extra"],
        [["index", "list", "extra"], "extra"],
        [["storage", "migrate", "extra", "--to", "file:///tmp/x"], "extra"],
        [["jobs", "list", "extra"], "extra"],
        [["jobs", "run", "changelog", "extra"], "extra"],
      ] as [string[], string][]) {
        const r = apis([...args, "--data", data]);
        expect(r.err).toStartWith(`apis: unexpected word "${word}" after apis ${args[0]}`);
        expect(r.err.trim().split("\n")).toHaveLength(1);
        expect(r.code).toBe(2);
      }
      expect(existsSync(data)).toBe(false);
    },
    SLOW_TEST_MS,
  );

  test(
    "command and flag names that are properties of every object (constructor, __proto__) are unknown ones, not a crash",
    () => {
      for (const args of [
        ["constructor"],
        ["toString"],
        ["migrate", "--constructor", "x"],
        ["migrate", "--__proto__=x"],
      ]) {
        const r = apis([...args, "--data", tmp()]);
        expect(r.err).toMatch(/^apis: unknown (command|flag)/);
        expect(r.code).toBe(2);
      }
    },
    SLOW_TEST_MS,
  );
});

describe("Ctrl-C and SIGTERM in a long command", () => {
  /** A data folder with a database and four 64 MiB stored files (sparse: made at once, read as zeros). */
  const bigInstance = () => {
    const data = tmp();
    expect(apis(["migrate", "--data", data]).code).toBe(0);
    mkdirSync(join(data, "files", "big"), { recursive: true });
    for (const n of [1, 2, 3, 4]) {
      const file = join(data, "files", "big", `f${n}`);
      writeFileSync(file, "");
      truncateSync(file, 64 * 1024 * 1024);
    }
    return data;
  };
  /** Starts `apis args`, sends `signal` once `ready` holds (the work under way), and gives how it ended. */
  async function interrupt(args: string[], ready: (out: string) => boolean, signal: "SIGINT" | "SIGTERM") {
    const proc = Bun.spawn([process.execPath, "src/main.ts", ...args], {
      cwd: root,
      stdout: "pipe",
      stderr: "pipe",
      env: { ...process.env, APIS_LOG_LEVEL: "error" },
    });
    const got = collect(proc);
    await until(() => ready(got.out), undefined, "the command to be under way");
    proc.kill(signal);
    const code = await proc.exited;
    return { code, out: got.out, err: got.err };
  }

  test(
    "Ctrl-C during backup create leaves neither the archive nor its .partial, says interrupted and exits 130",
    async () => {
      const data = bigInstance();
      const folder = tmp();
      const archive = join(folder, "a.tar");
      const r = await interrupt(
        ["backup", "create", "--data", data, "--out", archive],
        () => (statSync(`${archive}.partial`, { throwIfNoEntry: false })?.size ?? 0) > 0,
        "SIGINT",
      );
      expect(r.err).toBe("apis: interrupted: no archive was written\n");
      expect(r.code).toBe(130);
      expect(readdirSync(folder)).toEqual([]);
      expect(readdirSync(join(data, "tmp"))).toEqual([]); // no database copy or pinned files left
    },
    SLOW_TEST_MS,
  );

  test(
    "SIGTERM during backup restore changes nothing: the data folder is as it was and usable, nothing is left in tmp/, exit 143",
    async () => {
      const data = bigInstance();
      const archive = join(tmp(), "a.tar");
      expect(apis(["backup", "create", "--data", data, "--out", archive]).code).toBe(0);
      // A change after the archive: a restore would lose it.
      const made = apis([
        "user",
        "create",
        "--data",
        data,
        "--username",
        "ann",
        "--email",
        "ann@example.test",
        "--password",
        "long enough pass",
      ]);
      expect(made.code).toBe(0);
      const staged = () => readdirSync(join(data, "tmp")).filter((n) => n.startsWith("restore-"));
      const r = await interrupt(
        ["backup", "restore", archive, "--yes", "--data", data],
        () => staged().some((n) => existsSync(join(data, "tmp", n, "files"))),
        "SIGTERM",
      );
      expect(r.err).toBe(`apis: interrupted: nothing was restored; ${data} is as it was\n`);
      expect(r.code).toBe(143);
      expect(staged()).toEqual([]);
      expect(existsSync(join(data, "apis.pid"))).toBe(false);
      expect(apis(["user", "list", "--data", data]).out).toContain("ann");
    },
    SLOW_TEST_MS,
  );

  test(
    "Ctrl-C during storage migrate stops after whole, verified copies; the same command run again goes on and finishes",
    async () => {
      const data = bigInstance();
      const target = tmp();
      const to = `file://${target}`;
      const r = await interrupt(
        ["storage", "migrate", "--to", to, "--data", data],
        (out) => out.includes("[1/4]"),
        "SIGINT",
      );
      expect(r.code).toBe(130);
      expect(r.err).toMatch(
        /^apis: interrupted: stopped after [1-3] of 4 stored files; .* run the same command again to go on\n$/,
      );
      const copied = readdirSync(join(target, "files", "big"));
      expect(copied.length).toBeLessThan(4);
      for (const f of copied) expect(statSync(join(target, "files", "big", f)).size).toBe(64 * 1024 * 1024);
      expect(readdirSync(join(target, "tmp"))).toEqual([]); // no half-written copy
      const again = apis(["storage", "migrate", "--to", to, "--data", data]);
      expect(again.code).toBe(0);
      expect(again.out).toContain(`${copied.length} already there and equal, 4 in all`);
      expect(readdirSync(join(target, "files", "big")).sort()).toEqual(["f1", "f2", "f3", "f4"]);
    },
    SLOW_TEST_MS,
  );

  test.skipIf(!pgAvailable)(
    "Ctrl-C during migrate-database rolls the copy back: no row in PostgreSQL, exit 130, and the same command run again copies everything",
    async () => {
      const data = tmp();
      expect(apis(["migrate", "--data", data]).code).toBe(0);
      const db = new Database(join(data, "apis.db"));
      const add = db.query(
        "INSERT INTO changes (type, action, data_type, data_key, data, created_on) VALUES ('record', 'update', 'record', ?, '{}', 1)",
      );
      db.transaction(() => {
        for (let i = 0; i < 300_000; i++) add.run(`k${i}`);
      })();
      db.close();
      const target = await freshDatabase("interrupted");
      try {
        // A progress line of the large table, not its last: the copy is under way.
        const r = await interrupt(
          ["migrate-database", "--data", data, "--to", target.url],
          (out) => /changes: [1-9]\d*\/300000\n/.test(out) && !out.includes("changes: 300000/"),
          "SIGINT",
        );
        expect(r.err).toBe(
          `apis: interrupted: no row was committed to ${target.url}; the SQLite database is unchanged\n`,
        );
        expect(r.code).toBe(130);
        expect((await target.sql`SELECT count(*)::int AS n FROM changes`)[0].n).toBe(0);
        const again = apis(["migrate-database", "--data", data, "--to", target.url]);
        expect(again.code).toBe(0);
        expect((await target.sql`SELECT count(*)::int AS n FROM changes`)[0].n).toBe(300_000);
      } finally {
        await target.close();
      }
    },
    SLOW_TEST_MS,
  );
});

describe("serve", () => {
  test(
    "port 0 picks a free port, prints the URL, and SIGTERM lets a request in flight finish",
    async () => {
      const data = tmp();
      apis([
        "user",
        "create",
        "--data",
        data,
        "--username",
        "root",
        "--email",
        "root@example.test",
        "--password",
        "secret-pass-1",
      ]);
      const proc = Bun.spawn(
        [process.execPath, "src/main.ts", "serve", "--port", "0", "--host", "127.0.0.1", "--data", data],
        {
          cwd: root,
          stdout: "pipe",
          stderr: "pipe",
          env: { ...process.env, APIS_LOG_LEVEL: "info" },
        },
      );
      const url = await servedUrl(proc);
      const logged = collectStderr(proc);
      expect(url).not.toEndWith(":0");
      expect((await fetch(`${url}/api/ping`)).status).toBe(200);
      // A login held in flight for certain: its headers ask `Expect: 100-continue`, and the body is
      // sent only after the server has answered "100 Continue" (it has the request) and has logged
      // that SIGTERM reached it (it is stopping). No timing decides whether the request is in flight.
      const body = JSON.stringify({ username: "root", password: "secret-pass-1" });
      let answer = "";
      const { port } = new URL(url);
      const socket = await Bun.connect({
        hostname: "127.0.0.1",
        port: Number(port),
        socket: { data: (_s, chunk) => void (answer += new TextDecoder().decode(chunk)) },
      });
      socket.write(
        `POST /api/login HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nExpect: 100-continue\r\n\r\n`,
      );
      await until(() => answer.startsWith("HTTP/1.1 100 Continue"), undefined, "the server to take the request");
      proc.kill("SIGTERM");
      await until(
        () => logged.err.includes("SIGTERM: finishing requests in flight"),
        undefined,
        "the server to start stopping",
      );
      socket.write(body);
      await until(
        () => /HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 \d{3}/.test(answer),
        undefined,
        "the login's answer",
      );
      socket.end();
      expect(answer.split("\r\n\r\n")[1]!.split("\r\n")[0]).toBe("HTTP/1.1 200 OK");
      expect(await proc.exited).toBe(0);
    },
    SLOW_TEST_MS,
  );
});

/** A spawned process's stderr (its stdout already read elsewhere), collected as it arrives. */
function collectStderr(proc: { stderr: ReadableStream<Uint8Array> }) {
  const got = { err: "" };
  void (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of proc.stderr) got.err += decoder.decode(chunk, { stream: true });
  })();
  return got;
}

/** A spawned process's stdout and stderr, collected as they arrive. */
function collect(proc: { stdout: ReadableStream<Uint8Array>; stderr: ReadableStream<Uint8Array> }) {
  const got = { out: "", err: "" };
  const pump = async (stream: ReadableStream<Uint8Array>, key: "out" | "err") => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) got[key] += decoder.decode(chunk, { stream: true });
  };
  void pump(proc.stdout, "out");
  void pump(proc.stderr, "err");
  return got;
}

/** `apis` with text on its stdin. */
async function apisWithStdin(args: string[], input: string) {
  const p = Bun.spawn([process.execPath, "src/main.ts", ...args], {
    cwd: root,
    stdin: new TextEncoder().encode(input),
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, APIS_LOG_LEVEL: "error" },
  });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, out, err };
}

/** Starts a server on the data folder, answers the status of a login with each password, stops it. */
async function loginStatuses(data: string, username: string, passwords: string[]): Promise<number[]> {
  const proc = Bun.spawn([process.execPath, "src/main.ts", "serve", "--port", "0", "--data", data], {
    cwd: root,
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, APIS_LOG_LEVEL: "error" },
  });
  try {
    const url = await servedUrl(proc);
    const statuses: number[] = [];
    for (const password of passwords)
      statuses.push(
        (await fetch(`${url}/api/login`, { method: "POST", body: JSON.stringify({ username, password }) })).status,
      );
    return statuses;
  } finally {
    proc.kill("SIGTERM");
    await proc.exited;
  }
}

/** One line on stderr, exit code 2: how every start-up refusal ends. */
function expectRefused(r: { code: number | null; err: string }, words: string) {
  expect(r.code).toBe(2);
  expect(r.err.trim().split("\n")).toHaveLength(1);
  expect(r.err).toContain(words);
}

describe("start-up checks", () => {
  test(
    "a data folder that is a file, or lies below a file, ends start-up with one line and exit code 2 and creates nothing",
    () => {
      const dir = tmp();
      const file = join(dir, "not-a-folder");
      writeFileSync(file, "x");
      expectRefused(apis(["serve", "--port", "0", "--data", file]), "is a file, not a folder");
      expectRefused(apis(["serve", "--port", "0", "--data", join(file, "data")]), `${file} is a file`);
      expectRefused(apis(["migrate", "--data", file]), "is a file");
      expectRefused(apis(["user", "list", "--data", file]), "is a file");
      expect(readdirSync(dir)).toEqual(["not-a-folder"]);
      expect(readFileSync(file, "utf8")).toBe("x");
    },
    SLOW_TEST_MS,
  );

  // As root every folder is writable, so the check runs as "nobody" there (setpriv, util-linux).
  const asRoot = process.getuid?.() === 0;
  const setpriv = Bun.which("setpriv");
  test.skipIf(asRoot && !setpriv)(
    "a data folder the server's user cannot write ends start-up with one line and exit code 2 and stays empty",
    () => {
      const dir = tmp();
      chmodSync(dir, 0o755);
      const locked = join(dir, "locked");
      mkdirSync(locked, { mode: 0o555 });
      chmodSync(locked, 0o555);
      const prefix = asRoot ? [setpriv!, "--reuid=65534", "--regid=65534", "--clear-groups"] : [];
      const run = (data: string) => {
        const p = Bun.spawnSync(
          [...prefix, process.execPath, join(root, "src/main.ts"), "serve", "--port", "0", "--data", data],
          {
            cwd: dir,
            env: { ...process.env, APIS_LOG_LEVEL: "error", HOME: dir, TMPDIR: dir },
          },
        );
        return { code: p.exitCode, err: p.stderr.toString() };
      };
      expectRefused(run(locked), `data folder ${locked} is not writable`);
      expectRefused(run(join(locked, "sub")), `cannot be created in ${locked}`);
      expect(readdirSync(locked)).toEqual([]);
    },
    SLOW_TEST_MS,
  );

  test(
    "a port in use ends start-up with one line and exit code 2 before the data folder is created or migrated",
    () => {
      const blocker = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("busy") });
      try {
        const data = join(tmp(), "new");
        expectRefused(
          apis(["serve", "--host", "127.0.0.1", "--port", String(blocker.port), "--data", data]),
          `cannot listen on 127.0.0.1:${blocker.port}: the port is in use`,
        );
        expect(existsSync(data)).toBe(false);
        const existing = tmp();
        expectRefused(
          apis(["serve", "--host", "127.0.0.1", "--port", String(blocker.port), "--data", existing]),
          "the port is in use",
        );
        expect(readdirSync(existing)).toEqual([]);
      } finally {
        void blocker.stop(true);
      }
    },
    SLOW_TEST_MS,
  );

  test(
    "a host that is not an address of this machine, or not known at all, ends start-up with one line and exit code 2",
    () => {
      const data = join(tmp(), "new");
      // 192.0.2.0/24 is TEST-NET-1 (RFC 5737): never an address of a real interface.
      expectRefused(
        apis(["serve", "--host", "192.0.2.1", "--port", "0", "--data", data]),
        "192.0.2.1 is not an address of this machine",
      );
      expectRefused(
        apis(["serve", "--host", "no-such-host.invalid", "--port", "0", "--data", data]),
        "host no-such-host.invalid is not known",
      );
      expect(existsSync(data)).toBe(false);
    },
    SLOW_TEST_MS,
  );

  test(
    "serve listens on 127.0.0.1 unless --host says otherwise, says so, and prints a relative --data as an absolute folder",
    async () => {
      const cwd = tmp();
      const proc = Bun.spawn(
        [process.execPath, join(root, "src/main.ts"), "serve", "--port", "0", "--data", "rel/data"],
        {
          cwd,
          stdout: "pipe",
          stderr: "pipe",
          env: { ...process.env, APIS_LOG_LEVEL: "error" },
        },
      );
      const got = collect(proc);
      try {
        await until(() => got.out.includes("reachable"), undefined, "the start-up lines");
        const url = got.out.match(/listening on (http:\/\/\S+) /)![1]!;
        expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
        expect(got.out).toContain(`(data: ${join(cwd, "rel", "data")})`);
        expect(got.out).toContain("reachable from this machine only (--host 127.0.0.1)");
        expect(existsSync(join(cwd, "rel", "data", "apis.db"))).toBe(true);
        expect((await fetch(`${url}/api/ping`)).status).toBe(200);
      } finally {
        proc.kill("SIGTERM");
        await proc.exited;
      }
    },
    SLOW_TEST_MS,
  );

  test(
    "serve with --host 0.0.0.0 says it is reachable on every interface",
    async () => {
      const proc = Bun.spawn(
        [process.execPath, "src/main.ts", "serve", "--host", "0.0.0.0", "--port", "0", "--data", tmp()],
        {
          cwd: root,
          stdout: "pipe",
          stderr: "pipe",
          env: { ...process.env, APIS_LOG_LEVEL: "error" },
        },
      );
      const got = collect(proc);
      try {
        await until(() => got.out.includes("reachable"), undefined, "the start-up lines");
        expect(got.out).toContain("reachable on every network interface of this machine (--host 0.0.0.0)");
      } finally {
        proc.kill("SIGTERM");
        await proc.exited;
      }
    },
    SLOW_TEST_MS,
  );
});

describe("settings", () => {
  test(
    "sizes take K, M, G and T suffixes in flags and variables, and a size that is not one stops start-up with one line and exit code 2",
    () => {
      const c = loadConfig({ "upload-max-bytes": "2G", "image-max-bytes": "512K", "sync-max-bytes": "1.5M" }, {});
      expect([c.uploadMaxBytes, c.imageMaxBytes, c.syncMaxBytes]).toEqual([2 * 1024 ** 3, 512 * 1024, 1.5 * 1024 ** 2]);
      expect(loadConfig({}, { APIS_UPLOAD_MAX_BYTES: "10M" }).uploadMaxBytes).toBe(10 * 1024 ** 2);
      expect(loadConfig({}, { APIS_UPLOAD_MAX_BYTES: "10MiB" }).uploadMaxBytes).toBe(10 * 1024 ** 2);
      expect(loadConfig({}, { APIS_UPLOAD_MAX_BYTES: "4096" }).uploadMaxBytes).toBe(4096);
      const defaults = loadConfig({}, {});
      expect([defaults.uploadMaxBytes, defaults.imageMaxBytes, defaults.syncMaxBytes]).toEqual([
        1024 ** 3,
        10 * 1024 ** 2,
        100_000,
      ]);
      expectRefused(apis(["serve", "--upload-max-bytes", "2X", "--data", tmp()]), "--upload-max-bytes");
      expectRefused(apis(["serve", "--data", tmp()], { APIS_IMAGE_MAX_BYTES: "2G" }), "must be between 1K and 1G");
      expect(apis(["--help"]).out).toContain('(default: "1G")');
    },
    SLOW_TEST_MS,
  );
});

describe("defaults", () => {
  test("every setting's default passes its own schema and gives the value a start without flags or variables uses (defaults are not run through the schemas at start-up)", () => {
    const config = loadConfig({}, {}) as Record<string, unknown>;
    for (const [key, s] of Object.entries(settings)) {
      const parsed = s.schema().safeParse(s.default);
      expect([key, parsed.success]).toEqual([key, true]);
      expect([key, defaultValue(s)]).toEqual([key, parsed.data]);
      expect([key, config[key]]).toEqual([key, parsed.data]);
    }
  });

  test("a value given as a flag or a variable is still checked by its schema, and one equal to the default is accepted as before", () => {
    expect(() => loadConfig({ port: "70000" }, {})).toThrow('invalid --port="70000"');
    expect(() => loadConfig({}, { APIS_SCHEDULE_JOBS: "not cron" })).toThrow("invalid APIS_SCHEDULE_JOBS");
    expect(() => loadConfig({}, { APIS_JWT_SECRET: "short" })).toThrow("invalid APIS_JWT_SECRET=(hidden)");
    expect(loadConfig({ "upload-max-bytes": "1G" }, {}).uploadMaxBytes).toBe(1024 ** 3);
    expect(loadConfig({}, { APIS_METRICS: "yes" }).metrics).toBe(true);
  });
});

describe("passwords", () => {
  test(
    "user create and set-password read the password from stdin when --password is absent, and refuse an empty one",
    async () => {
      const data = tmp();
      const created = await apisWithStdin(
        ["user", "create", "--data", data, "--username", "piped", "--email", "piped@example.test"],
        "first-pass-1\n",
      );
      expect(created.code).toBe(0);
      const changed = await apisWithStdin(
        ["user", "set-password", "--data", data, "--username", "piped"],
        "second-pass-2\r\n",
      );
      expect(changed.code).toBe(0);
      expectRefused(
        await apisWithStdin(["user", "set-password", "--data", data, "--username", "piped"], ""),
        "no password",
      );
      expectRefused(
        await apisWithStdin(["user", "set-password", "--data", data, "--username", "piped"], "short\n"),
        "password:",
      );
      expect(await loginStatuses(data, "piped", ["first-pass-1", "second-pass-2"])).toEqual([403, 200]);
    },
    SLOW_TEST_MS,
  );

  test(
    "on a terminal, user create asks for the password twice without echoing it, and two different answers change nothing",
    async () => {
      const data = tmp();
      const typeInto = async (args: string[], answers: string[]) => {
        let screen = "";
        const proc = Bun.spawn([process.execPath, "src/main.ts", ...args], {
          cwd: root,
          env: { ...process.env, APIS_LOG_LEVEL: "error" },
          terminal: { cols: 100, rows: 24, data: (_t, bytes) => (screen += new TextDecoder().decode(bytes)) },
        });
        await until(() => screen.includes("Password: "), undefined, "the first prompt");
        proc.terminal!.write(`${answers[0]}\r`);
        await until(() => screen.includes("Repeat password: "), undefined, "the second prompt");
        proc.terminal!.write(`${answers[1]}\r`);
        const code = await proc.exited;
        return { code, screen };
      };
      const ok = await typeInto(
        ["user", "create", "--data", data, "--username", "typed", "--email", "typed@example.test"],
        ["typed-pass-1", "typed-pass-1"],
      );
      expect(ok.code).toBe(0);
      expect(ok.screen).toContain("created user typed");
      expect(ok.screen).not.toContain("typed-pass-1");
      const differ = await typeInto(
        ["user", "set-password", "--data", data, "--username", "typed"],
        ["other-pass-1", "other-pass-2"],
      );
      expect(differ.code).toBe(2);
      expect(differ.screen).toContain("the two passwords differ");
      expect(differ.screen).not.toContain("other-pass");
      expect(await loginStatuses(data, "typed", ["typed-pass-1"])).toEqual([200]);
    },
    SLOW_TEST_MS,
  );
});

describe("doctor --data", () => {
  test(
    "checks the folder it is given and creates nothing: missing, a file, a migrated database, a secret others can read",
    () => {
      const dir = tmp();
      const missing = join(dir, "missing");
      const first = apis(["doctor", "--data", missing]);
      expect(first.code).toBe(0);
      expect(first.out).toContain(`ok    data folder: ${missing} does not exist yet; serve creates it`);
      expect(first.out).toMatch(/^ok {4}free space: [\d.]+ GiB free/m);
      expect(existsSync(missing)).toBe(false);

      writeFileSync(join(dir, "file"), "");
      const file = apis(["doctor", "--data", join(dir, "file")]);
      expect(file.code).toBe(1);
      expect(file.out).toContain("FAIL  data folder:");
      expect(file.out).toContain("is a file, not a folder");

      const data = join(dir, "data");
      expect(apis(["migrate", "--data", data]).code).toBe(0);
      const migrated = apis(["doctor", "--data", data]);
      expect(migrated.code).toBe(0);
      expect(migrated.out).toContain(`ok    database: ${join(data, "apis.db")}`);
      expect(migrated.out).toContain("integrity ok, migrations up to date");
      expect(migrated.out).not.toContain("free pages");
      expect(migrated.out).toContain("ok    jwt.secret: mode 600");

      // Pages a delete left empty inside the file are named when they are a tenth of it or more.
      const db = new Database(join(data, "apis.db"));
      db.run("CREATE TABLE scratch (b BLOB)");
      db.query("INSERT INTO scratch VALUES (zeroblob(4194304))").run();
      db.run("DROP TABLE scratch");
      db.run("PRAGMA wal_checkpoint(TRUNCATE)");
      db.close();
      expect(apis(["doctor", "--data", data]).out).toMatch(/MiB, [\d.]+ MiB of it free pages, integrity ok/);
    },
    SLOW_TEST_MS,
  );

  test(
    "serve and migrate refuse a data folder a newer Apis migrated, in one line saying so (exit 2), doctor names it, and its archive is not restored over another instance",
    () => {
      const data = join(tmp(), "data");
      expect(apis(["migrate", "--data", data]).code).toBe(0);
      // What a newer build's migration leaves: a journal row later than this build's newest.
      const db = new Database(join(data, "apis.db"));
      const { newest } = db.query("SELECT max(created_at) AS newest FROM __drizzle_migrations").get() as {
        newest: number;
      };
      db.query("INSERT INTO __drizzle_migrations (hash, created_at) VALUES ('newer', ?)").run(newest + 86_400_000);
      db.close();
      const said =
        /^apis: cannot open the database .*apis\.db: the database was migrated by a newer Apis than this one \(it holds a migration this build does not know\): run that version on every node, or restore the backup taken before the upgrade$/;
      for (const args of [["serve", "--port", "0"], ["migrate"]]) {
        const r = apis([...args, "--data", data]);
        expect({ args, code: r.code, out: r.out, lines: r.err.trim().split("\n").length }).toEqual({
          args,
          code: 2,
          out: "",
          lines: 1,
        });
        expect(r.err.trim()).toMatch(said);
      }
      const doctor = apis(["doctor", "--data", data]);
      expect(doctor.code).toBe(1);
      expect(doctor.out).toMatch(/FAIL {2}database: .* was migrated by a newer Apis/);

      // Its archive is not restored over another instance, which would then not start either.
      const archive = join(tmp(), "newer.tar");
      expect(apis(["backup", "create", "--data", data, "--out", archive]).code).toBe(0);
      const other = join(tmp(), "other");
      expect(apis(["migrate", "--data", other]).code).toBe(0);
      const before = readFileSync(join(other, "apis.db"));
      const restore = apis(["backup", "restore", archive, "--data", other, "--yes"]);
      expect(restore.code).toBe(1);
      expect(restore.err.trim()).toMatch(
        /^apis: the archive was made by a newer Apis \([\d.]+\) than this one \([\d.]+\): restore it with that version; nothing was changed$/,
      );
      expect(readFileSync(join(other, "apis.db")).equals(before)).toBe(true);
      expect(apis(["migrate", "--data", other]).code).toBe(0);
    },
    SLOW_TEST_MS,
  );

  test(
    "vacuum gives a database's free pages back to the disk, and refuses while a server uses the folder",
    () => {
      const data = join(tmp(), "data");
      expect(apis(["migrate", "--data", data]).code).toBe(0);
      const file = join(data, "apis.db");
      const db = new Database(file);
      db.run("CREATE TABLE scratch (b BLOB)");
      db.query("INSERT INTO scratch VALUES (zeroblob(4194304))").run();
      db.run("DROP TABLE scratch");
      db.run("PRAGMA wal_checkpoint(TRUNCATE)");
      db.close();
      const before = statSync(file).size;

      // A live process named in the folder's pid file stands for a running server.
      writeFileSync(join(data, "apis.pid"), `${process.pid}\n`);
      const refused = apis(["vacuum", "--data", data]);
      expect(refused.code).toBe(1);
      expect(refused.err).toContain(`an Apis server (pid ${process.pid}) is using ${data}; stop it first`);
      expect(statSync(file).size).toBe(before);
      rmSync(join(data, "apis.pid"));

      const done = apis(["vacuum", "--data", data, "--json"]);
      expect(done.code).toBe(0);
      const r = JSON.parse(done.out);
      expect(r).toMatchObject({ ok: true, file, before });
      expect(r.freed).toBeGreaterThanOrEqual(4 * 1024 ** 2);
      expect(r.after).toBeLessThan(before - 4 * 1024 ** 2);
      expect(statSync(file).size).toBe(r.after);
      const checked = apis(["doctor", "--data", data]);
      expect(checked.code).toBe(0);
      expect(checked.out).toContain("integrity ok, migrations up to date");
      expect(checked.out).not.toContain("free pages");

      chmodSync(join(data, "jwt.secret"), 0o644);
      const leaky = apis(["doctor", "--data", data]);
      expect(leaky.code).toBe(1);
      expect(leaky.out).toContain("FAIL  jwt.secret:");
    },
    SLOW_TEST_MS,
  );
});

describe("npm start", () => {
  /** `npm start` in its own process group, as a terminal runs it; resolves with its URL. */
  async function npmStart(data: string) {
    const proc = Bun.spawn(["npm", "start", "--", "--port", "0", "--data", data], {
      cwd: root,
      stdout: "pipe",
      stderr: "pipe",
      detached: true,
      env: { ...process.env, APIS_LOG_LEVEL: "error" },
    });
    return { proc, url: await servedUrl(proc) };
  }
  const portFree = async (port: number) => {
    try {
      void Bun.serve({ hostname: "127.0.0.1", port, fetch: () => new Response("") }).stop(true);
      return true;
    } catch {
      return false;
    }
  };

  test(
    "SIGTERM to npm stops the server: npm exits, the port is released and the data folder let go",
    async () => {
      const data = tmp();
      const { proc, url } = await npmStart(data);
      expect((await fetch(`${url}/api/ping`)).status).toBe(200);
      expect(existsSync(join(data, "apis.pid"))).toBe(true);
      proc.kill("SIGTERM");
      await proc.exited;
      await until(() => !existsSync(join(data, "apis.pid")), undefined, "the server to let the data folder go");
      expect(await until(() => portFree(Number(new URL(url).port)), undefined, "the port to be released")).toBe(true);
    },
    SLOW_TEST_MS,
  );

  test(
    "Ctrl-C (SIGINT to the whole process group) stops the server once, cleanly",
    async () => {
      const data = tmp();
      const { proc, url } = await npmStart(data);
      process.kill(-proc.pid, "SIGINT");
      await proc.exited;
      await until(() => !existsSync(join(data, "apis.pid")), undefined, "the server to let the data folder go");
      expect(await until(() => portFree(Number(new URL(url).port)), undefined, "the port to be released")).toBe(true);
    },
    SLOW_TEST_MS,
  );
});

describe("documentation", () => {
  const readme = readFileSync(join(root, "README.md"), "utf8");
  const docs = readdirSync(join(root, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => ({ name: `docs/${f}`, text: readFileSync(join(root, "docs", f), "utf8") }));

  test("README's configuration table has a row for every setting, with the default the code uses", () => {
    for (const s of Object.values(settings)) {
      const row = readme.split("\n").find((l) => l.startsWith(`| \`--${s.flag}\` | \`${s.env}\` |`));
      expect(row, `README row of --${s.flag}`).toBeDefined();
      const cell = row!.split("|")[3]!.trim().replace(/`/g, "");
      if (
        typeof s.default === "number" ||
        /^\d+[KMGT]$/.test(String(s.default)) ||
        ["127.0.0.1", "./data", "*", "off"].includes(String(s.default))
      )
        expect(cell, `default of --${s.flag} in README`).toBe(String(s.default));
    }
  });

  test("wherever the docs give a number setting's default next to its flag, it is the code's", () => {
    const numeric = Object.values(settings).filter((s) => typeof s.default === "number");
    for (const { name, text } of [{ name: "README.md", text: readme }, ...docs]) {
      for (const s of numeric) {
        // "`--auth-ip-rate-limit`, 100", "`--rate-limit` / `APIS_RATE_LIMIT`, **200**", "`--auth-rate-limit` (10)"
        const re = new RegExp(`\`--${s.flag}\`(?: / \`${s.env}\`)?(?:, | \\()\\**(\\d[\\d,]*)\\**`, "g");
        for (const m of text.matchAll(re))
          expect(`${name}: --${s.flag} ${m[1]!.replace(/,/g, "")}`).toBe(`${name}: --${s.flag} ${s.default}`);
      }
    }
  });
});
