// The log of a real `apis serve` process: one line per request, JSON or text, and no secret in it.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { servedUrl, until, SLOW_TEST_MS } from "../helpers/server";
import { codeOf, TestSmtp } from "../helpers/smtp";
import { Logger } from "../../src/core/log";

const main = join(import.meta.dir, "../../src/main.ts");

/** The environment without APIS_* settings of whoever runs the tests. */
function withoutApisSettings(): Record<string, string> {
  return Object.fromEntries(
    Object.entries(process.env).filter((e): e is [string, string] => !e[0].startsWith("APIS_") && e[1] !== undefined),
  );
}

/** A spawned server whose stderr is collected as it comes. */
async function spawnServer(dataDir: string, flags: string[]) {
  const proc = Bun.spawn([process.execPath, main, "serve", "--port", "0", "--data", dataDir, ...flags], {
    stdout: "pipe",
    stderr: "pipe",
    env: { ...withoutApisSettings(), APIS_LOG_LEVEL: "info" },
  });
  let err = "";
  void (async () => {
    const dec = new TextDecoder();
    for await (const chunk of proc.stderr) err += dec.decode(chunk);
  })();
  const url = await servedUrl(proc);
  return { proc, url, log: () => err };
}

async function call(url: string, path: string, body?: unknown, token?: string) {
  const headers: Record<string, string> = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(url + path, {
    method: body === undefined ? "GET" : "POST",
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return {
    status: res.status,
    body: (await res.json()) as any,
    token: res.headers.get("authorization")?.replace(/^Bearer /, ""),
    id: res.headers.get("x-request-id"),
  };
}

describe("the log of a session of sign-up, reset, login and API keys", () => {
  let smtp: TestSmtp;
  let dataDir: string;
  let server: Awaited<ReturnType<typeof spawnServer>>;
  const secrets = new Map<string, string>();

  beforeAll(async () => {
    smtp = await TestSmtp.start();
    dataDir = mkdtempSync(join(tmpdir(), "apis-logs-"));
    server = await spawnServer(dataDir, ["--log-format", "json", "--smtp-url", smtp.url]);
    const url = server.url;
    const who = { username: "logwatcher", email: "logwatcher@example.test", password: "first-Secret-pass-1" };
    secrets.set("first password", who.password);

    let since = smtp.messages.length;
    const req = await call(url, "/api/signup_request", who);
    expect(req.status).toBe(200);
    const signupCode = codeOf(await smtp.next(who.email, since));
    secrets.set("signup verification code", signupCode).set("signup validation code", req.body.result.validation_code);
    const wrong = await call(url, "/api/signup", {
      ...who,
      validation_code: req.body.result.validation_code,
      verification_code: "WRONG9",
    });
    expect(wrong.status).toBe(422);
    const signed = await call(url, "/api/signup", {
      ...who,
      validation_code: req.body.result.validation_code,
      verification_code: signupCode,
    });
    expect(signed.status).toBe(200);
    secrets.set("signup JWT", signed.token!);

    since = smtp.messages.length;
    const reset = await call(url, "/api/reset_password_request", { username_or_email: who.email });
    expect(reset.status).toBe(200);
    const resetCode = codeOf(await smtp.next(who.email, since));
    secrets.set("reset verification code", resetCode).set("reset validation code", reset.body.result.validation_code);
    const newPassword = "second-Secret-pass-2";
    secrets.set("new password", newPassword);
    const done = await call(url, "/api/reset_password", {
      username: who.username,
      new_password: newPassword,
      validation_code: reset.body.result.validation_code,
      verification_code: resetCode,
    });
    expect(done.status).toBe(200);
    secrets.set("reset JWT", done.token!);

    const badLogin = await call(url, "/api/login", { username: who.username, password: "a-Wrong-guess-77" });
    expect(badLogin.status).toBe(403);
    secrets.set("wrong password", "a-Wrong-guess-77");
    const login = await call(url, "/api/login", { username: who.username, password: newPassword });
    expect(login.status).toBe(200);
    secrets.set("login JWT", login.token!);

    const project = (await call(url, "/api/projects/create", { name: "Logged" }, login.token)).body.result
      .project as string;
    const key = await call(url, `/api/p/${project}/apikeys/create`, { name: "Shop" }, login.token);
    expect(key.status).toBe(200);
    secrets.set("API key", key.body.result.apikey);
    const auth = await call(url, `/api/p/${project}/auth`, { api_key: key.body.result.apikey });
    expect(auth.status).toBe(200);
    secrets.set("API user JWT", auth.token!);
    const asKey = await call(url, `/api/p/${project}/assets/root`, {}, auth.token);
    expect(asKey.id).toMatch(/^[A-Za-z0-9]{16}$/);
    await until(() => server.log().includes(asKey.id!), undefined, "the last request's log line");
  }, SLOW_TEST_MS);

  afterAll(async () => {
    server.proc.kill("SIGTERM");
    await server.proc.exited;
    await smtp.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  test("no code, password, JWT or API key appears anywhere in the log", () => {
    const log = server.log();
    expect(secrets.size).toBe(12);
    for (const [what, value] of secrets) {
      expect(value.length).toBeGreaterThanOrEqual(6);
      if (log.includes(value)) throw new Error(`the ${what} is in the log`);
    }
  });

  test("every line is one JSON object with a level, a time and a message", () => {
    const lines = server.log().trim().split("\n");
    expect(lines.length).toBeGreaterThan(10);
    for (const line of lines) {
      const e = JSON.parse(line);
      expect(["debug", "info", "warn", "error"]).toContain(e.level);
      expect(typeof e.time).toBe("string");
      expect(typeof e.msg).toBe("string");
    }
  });

  test("each request is one info line with method, path, status, duration, user, project and request id", () => {
    const requests = server
      .log()
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l))
      .filter((e) => e.request_id && e.status);
    const paths = requests.map((e) => `${e.method} ${e.path.replace(/\/p\/[^/]+\//, "/p/<p>/")} ${e.status}`);
    expect(paths).toEqual([
      "POST /api/signup_request 200",
      "POST /api/signup 422",
      "POST /api/signup 200",
      "POST /api/reset_password_request 200",
      "POST /api/reset_password 200",
      "POST /api/login 403",
      "POST /api/login 200",
      "POST /api/projects/create 200",
      "POST /api/p/<p>/apikeys/create 200",
      "POST /api/p/<p>/auth 200",
      "POST /api/p/<p>/assets/root 200",
    ]);
    for (const e of requests) {
      expect(e.level).toBe("info");
      expect(typeof e.ms).toBe("number");
      expect(e.request_id).toMatch(/^[A-Za-z0-9]{16}$/);
    }
    const created = requests.find((e) => e.path === "/api/projects/create");
    expect(created.user).toMatch(/^[a-z0-9]+$/);
    const keyed = requests.at(-1);
    expect(keyed.project).toBe(keyed.path.split("/")[3]);
    expect(keyed.user).toBeDefined();
    expect(keyed.user).not.toBe(created.user); // the API user
    expect(requests[0].user).toBeUndefined();
  });

  test("the mail lines name the recipient but not the subject", () => {
    const mails = server
      .log()
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l))
      .filter((e) => e.msg === "mail sent");
    expect(mails.length).toBe(2);
    for (const m of mails) expect(Object.keys(m).sort()).toEqual(["level", "msg", "time", "to"]);
  });
});

describe("--log-format text", () => {
  test("writes one readable line per request with its fields", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "apis-logs-"));
    const s = await spawnServer(dataDir, ["--log-format", "text"]);
    try {
      const r = await fetch(`${s.url}/api/ping?token=should-not-appear`, {
        headers: { "x-request-id": "proxy-given-id-1" },
      });
      expect(r.headers.get("x-request-id")).toBe("proxy-given-id-1");
      const line = await until(
        () =>
          s
            .log()
            .split("\n")
            .find((l) => l.includes("proxy-given-id-1")),
        undefined,
        "the ping line",
      );
      expect(line).toMatch(
        /^\[\d{4}-\d\d-\d\dT[\d:.]+Z\] INFO: GET \/api\/ping 200 \{.*"path":"\/api\/ping".*"status":200.*"ms":[\d.]+.*\}$/,
      );
      expect(s.log()).not.toContain("should-not-appear");
    } finally {
      s.proc.kill("SIGTERM");
      await s.proc.exited;
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  test("a bad --log-format is refused at start with exit code 2", async () => {
    const p = Bun.spawn(
      [process.execPath, main, "serve", "--port", "0", "--data", join(tmpdir(), "apis-never"), "--log-format", "xml"],
      { stdout: "pipe", stderr: "pipe" },
    );
    expect(await p.exited).toBe(2);
    expect(await new Response(p.stderr).text()).toContain("invalid --log-format");
  });

  test("both formats hide the same secret members, at the top and one level down, and survive a cycle", () => {
    const lines: Record<string, string[]> = { text: [], json: [] };
    for (const format of ["text", "json"] as const) {
      const log = new Logger("info", { format, destination: { write: (l: string) => void lines[format]!.push(l) } });
      const cyclic: Record<string, unknown> = { name: "a" };
      cyclic.self = cyclic;
      log.info("signed in", { user: "u1", password: "hunter2", request: { token: "t0k3n", path: "/x" }, n: 1n });
      log.warn("odd", { cyclic });
      log.debug("not written");
    }
    expect(lines.text).toHaveLength(2);
    expect(lines.json).toHaveLength(2);
    const text = lines.text.join("");
    for (const secret of ["hunter2", "t0k3n"]) {
      expect(text).not.toContain(secret);
      expect(lines.json.join("")).not.toContain(secret);
    }
    expect(lines.text[0]).toMatch(
      /^\[\d{4}-\d\d-\d\dT[\d:.]+Z\] INFO: signed in \{"user":"u1","password":"\[redacted\]","request":\{"token":"\[redacted\]","path":"\/x"\},"n":"1"\}\n$/,
    );
    expect(lines.text[1]).toContain('WARN: odd {"cyclic":{"name":"a","self":');
    expect(lines.text[1]).toContain('"self":"[Circular]"');
  });
});
