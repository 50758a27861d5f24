import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { servedUrl } from "../helpers/server";

const root = join(import.meta.dir, "../..");
const dirs: string[] = [];
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), "apis-cli-"));
  dirs.push(d);
  return d;
};
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function apis(args: string[], env: Record<string, string> = {}) {
  const p = Bun.spawnSync([process.execPath, "src/main.ts", ...args], { cwd: root, env: { ...process.env, APIS_LOG_LEVEL: "error", ...env } });
  return { code: p.exitCode, out: p.stdout.toString(), err: p.stderr.toString() };
}

describe("the command line", () => {
  test("--version prints the dotted version", () => {
    const r = apis(["--version"]);
    expect(r.code).toBe(0);
    expect(r.out.trim()).toMatch(/^\d{4}\.\d+\.\d+$/);
  });

  test("--help lists the commands and every setting", () => {
    const r = apis(["--help"]);
    expect(r.code).toBe(0);
    for (const word of ["serve", "user create", "migrate", "doctor", "APIS_PORT", "APIS_DATA", "APIS_JWT_SECRET"]) expect(r.out).toContain(word);
  });

  test("a bad setting stops start-up with one line and exit code 2", () => {
    const r = apis(["serve", "--port", "99999"]);
    expect(r.code).toBe(2);
    expect(r.err.trim().split("\n")).toHaveLength(1);
    expect(r.err).toContain("--port");
    const env = apis(["serve"], { APIS_LOG_LEVEL: "loud" });
    expect(env.code).toBe(2);
    expect(env.err).toContain("APIS_LOG_LEVEL");
  });

  test("a mistyped flag is a usage error with exit code 2, not silently ignored", () => {
    const r = apis(["migrate", "--data", tmp(), "--dat", "x"]);
    expect(r.code).toBe(2);
    expect(r.err).toContain("--dat");
  });

  test("an unknown command is a usage error with exit code 2", () => {
    expect(apis(["frobnicate"]).code).toBe(2);
  });

  test("migrate applies the migrations to a new data folder", () => {
    const r = apis(["migrate", "--data", tmp()]);
    expect(r.code).toBe(0);
    expect(r.out).toContain("up to date");
  });

  test("user create bootstraps an account that can log in, and list shows it", async () => {
    const data = tmp();
    const c = apis(["user", "create", "--data", data, "--username", "root", "--email", "root@example.test", "--password", "secret-pass-1", "--name", "Root"]);
    expect(c.code).toBe(0);
    const dup = apis(["user", "create", "--data", data, "--username", "root", "--email", "x@example.test", "--password", "secret-pass-1"]);
    expect(dup.code).toBe(1);
    const weak = apis(["user", "create", "--data", data, "--username", "weak", "--email", "w@example.test", "--password", "short"]);
    expect(weak.code).toBe(2);
    const list = apis(["user", "list", "--json", "--data", data]);
    expect(JSON.parse(list.out)).toEqual([expect.objectContaining({ username: "root", email: "root@example.test", name: "Root", status: "active" })]);
  });

  test("user deactivate locks an account out and user reactivate lets it back in", async () => {
    const data = tmp();
    apis(["user", "create", "--data", data, "--username", "ann", "--email", "ann@example.test", "--password", "secret-pass-1"]);
    expect(apis(["user", "deactivate", "--data", data, "--username", "ann"]).code).toBe(0);
    const listed = () => JSON.parse(apis(["user", "list", "--json", "--data", data]).out)[0].status;
    expect(listed()).toBe("inactive");
    expect(apis(["user", "reactivate", "--data", data, "--username", "ann"]).code).toBe(0);
    expect(listed()).toBe("active");
    expect(apis(["user", "reactivate", "--data", data, "--username", "ann"]).code).toBe(2);
  });

  test("doctor checks sharp, SQLite and the data folder", () => {
    const r = apis(["doctor", "--data", tmp()]);
    expect(r.code).toBe(0);
    expect(r.out).toContain("libvips");
    expect(r.out).toContain("all checks passed");
  });
});

describe("serve", () => {
  test("port 0 picks a free port, prints the URL, and SIGTERM lets a request in flight finish", async () => {
    const data = tmp();
    apis(["user", "create", "--data", data, "--username", "root", "--email", "root@example.test", "--password", "secret-pass-1"]);
    const proc = Bun.spawn([process.execPath, "src/main.ts", "serve", "--port", "0", "--host", "127.0.0.1", "--data", data], {
      cwd: root,
      stdout: "pipe",
      stderr: "pipe",
      env: { ...process.env, APIS_LOG_LEVEL: "error" },
    });
    const url = await servedUrl(proc);
    expect(url).not.toEndWith(":0");
    expect((await fetch(`${url}/api/ping`)).status).toBe(200);
    // A login hashes with argon2 (tens of milliseconds): still in flight when SIGTERM arrives.
    const inFlight = fetch(`${url}/api/login`, { method: "POST", body: JSON.stringify({ username: "root", password: "secret-pass-1" }) });
    await Bun.sleep(5);
    proc.kill("SIGTERM");
    const res = await inFlight;
    expect(res.status).toBe(200);
    expect(await proc.exited).toBe(0);
  });
});
