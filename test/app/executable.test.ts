// The self-contained executable: built once by scripts/build.ts, copied alone into an empty folder,
// run with a fresh HOME, cache and temp folder, so nothing from this checkout can help it.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import sharp from "sharp";
import { io } from "socket.io-client";
import { servedUrl } from "../helpers/server";

const repo = join(import.meta.dir, "../..");
let tmp: string;
let folder: string; // holds only the executable
let env: Record<string, string>;

function freshEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: "/usr/bin:/bin",
    HOME: join(tmp, "home"),
    XDG_CACHE_HOME: join(tmp, "cache"),
    TMPDIR: join(tmp, "tmp"),
    ...extra,
  };
}

async function run(args: string[], runEnv = env): Promise<{ code: number; out: string; err: string }> {
  const p = Bun.spawn(["./apis", ...args], { cwd: folder, env: runEnv, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, out, err };
}

/** The cached libvips under `root` (one `libvips-<sha256>/libvips-cpp.so.*` folder). */
function cachedLibvips(root: string): string {
  const dirs = readdirSync(root).filter((d) => /^libvips-[0-9a-f]{64}$/.test(d));
  expect(dirs).toHaveLength(1);
  const files = readdirSync(join(root, dirs[0]!));
  expect(files).toEqual([expect.stringMatching(/^libvips-cpp\.so\.\d/)]);
  return join(root, dirs[0]!, files[0]!);
}

describe.skipIf(process.platform !== "linux")("the compiled executable", () => {
  beforeAll(async () => {
    tmp = mkdtempSync(join(tmpdir(), "apis-exe-"));
    const build = Bun.spawnSync([process.execPath, join(repo, "scripts/build.ts"), join(tmp, "build", "apis")], {
      cwd: repo,
      stdout: "pipe",
      stderr: "pipe",
    });
    if (build.exitCode !== 0) throw new Error(`build failed:\n${build.stdout}\n${build.stderr}`);
    folder = join(tmp, "run");
    mkdirSync(folder);
    for (const d of ["home", "cache", "tmp"]) mkdirSync(join(tmp, d));
    copyFileSync(join(tmp, "build", "apis"), join(folder, "apis"));
    Bun.spawnSync(["chmod", "755", join(folder, "apis")]);
    env = freshEnv();
  }, 240_000);
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  test("doctor passes from an empty folder and writes libvips into the cache once", async () => {
    const first = await run(["doctor", "--data", join(tmp, "d0")]);
    expect(first.err).toBe("");
    expect(first.code).toBe(0);
    expect(first.out).toMatch(/^ok {4}sharp: sharp [\d.]+, libvips [\d.]+$/m);
    expect(first.out).toContain("ok    resize: 64x48 png -> 16x12 jpeg");
    expect(first.out).toContain("all checks passed");
    const lib = cachedLibvips(join(tmp, "cache", "apis"));
    const written = statSync(lib).mtimeMs;

    const again = await run(["doctor", "--data", join(tmp, "d0")]);
    expect(again.code).toBe(0);
    expect(statSync(lib).mtimeMs).toBe(written);
    expect(readdirSync(folder)).toEqual(["apis"]);
  });

  test("--version prints the package version", async () => {
    const r = await run(["--version"]);
    expect(r.code).toBe(0);
    expect(r.out.trim()).toBe(JSON.parse(readFileSync(join(repo, "package.json"), "utf8")).version);
  });

  test("a damaged cached libvips is replaced by a verified copy", async () => {
    const lib = cachedLibvips(join(tmp, "cache", "apis"));
    const good = readFileSync(lib);
    writeFileSync(lib, Buffer.alloc(good.length, 7)); // same size, wrong bytes
    const r = await run(["doctor", "--data", join(tmp, "d0")]);
    expect(r.code).toBe(0);
    expect(readFileSync(lib).equals(good)).toBe(true);
  });

  test("without a usable cache folder the library goes to a private folder in TMPDIR", async () => {
    writeFileSync(join(tmp, "not-a-home"), "");
    const r = await run(
      ["doctor", "--data", join(tmp, "d1")],
      freshEnv({ HOME: join(tmp, "not-a-home"), XDG_CACHE_HOME: "" }),
    );
    expect(r.code).toBe(0);
    const root = join(tmp, "tmp", `apis-${process.getuid!()}`);
    cachedLibvips(root);
    expect(statSync(root).mode & 0o077).toBe(0);
  });

  test("a whole session works in the executable: login, JWT endpoints, upload, transform, media and a pushed sync item", async () => {
    const data = join(tmp, "session");
    const created = await run([
      "user",
      "create",
      "--data",
      data,
      "--username",
      "exeuser",
      "--email",
      "exe@example.test",
      "--password",
      "password1",
    ]);
    expect(created.code).toBe(0);
    const p = Bun.spawn(
      ["./apis", "serve", "--port", "0", "--host", "127.0.0.1", "--data", data, "--log-level", "error"],
      { cwd: folder, env, stdout: "pipe", stderr: "pipe" },
    );
    try {
      const url = await servedUrl(p);
      const post = (path: string, body: unknown, token?: string) =>
        fetch(url + path, {
          method: "POST",
          headers: token ? { authorization: `Bearer ${token}` } : {},
          body: body instanceof FormData ? body : JSON.stringify(body),
        });
      const login = await post("/api/login", { username: "exeuser", password: "password1" });
      expect(login.status).toBe(200);
      const token = login.headers.get("authorization")!.replace(/^Bearer /, "");
      const init = await fetch(`${url}/api/init`, { headers: { authorization: `Bearer ${token}` } });
      expect(init.status).toBe(200);
      expect(init.headers.get("authorization")).toStartWith("Bearer ");

      // A socket subscribed before the change receives it.
      const socket = io(url!, {
        path: "/sync/io",
        auth: { JWT: token },
        transports: ["websocket"],
        reconnection: false,
      });
      const ack: unknown = await new Promise((resolve, reject) => {
        socket.on("connect_error", reject);
        socket.on("connect", () => socket.emit("initsync", { "cc.cursor": 0 }, resolve));
      });
      expect(Array.isArray(ack)).toBe(true);
      const pushed = new Promise<any[]>((resolve) => socket.on("sync", resolve));
      const project = ((await (await post("/api/projects/create", { name: "Exe" }, token)).json()) as any).result
        .project as string;
      expect((await pushed).map((i) => i.data_type)).toContain("cc.projects");
      socket.close();

      const form = new FormData();
      form.append(
        "upload_file",
        new File(
          [
            await sharp({ create: { width: 64, height: 48, channels: 3, background: "#3366cc" } })
              .jpeg()
              .toBuffer(),
          ],
          "blue.jpg",
        ),
      );
      const upload = (await (await post(`/api/p/${project}/assets/upload`, form, token)).json()) as any;
      expect(upload.success).toBe(true);
      const asset = upload.data.assets[upload.result.asset];
      const transform = await fetch(
        `${url}/dam/p/${project}/transform/${asset.gid}~${asset.version}.${asset.type}/width=32/type=png`,
        { headers: { authorization: `Bearer ${token}` } },
      );
      const t = (await transform.json()) as any;
      expect(t.result.dimensions).toEqual([32, 24]);
      const media = await fetch(t.result.public_url.replace(/^https?:\/\/[^/]+/, url!));
      expect(media.status).toBe(200);
      expect(media.headers.get("content-type")).toBe("image/png");
      const meta = await sharp(Buffer.from(await media.arrayBuffer())).metadata();
      expect([meta.width, meta.height]).toEqual([32, 24]);
      // The first image loaded libvips: the verified copy in the cache folder, nothing from node_modules.
      const maps = readFileSync(`/proc/${p.pid}/maps`, "utf8");
      expect(maps).not.toContain("node_modules");
      expect(maps).toContain(join(tmp, "cache", "apis"));
    } finally {
      p.kill("SIGTERM");
      await p.exited;
    }
  });

  test("an Excel import job reads its workbook in the executable's worker thread: rows land, a damaged file is refused", async () => {
    const data = join(tmp, "excel");
    expect(
      (
        await run([
          "user",
          "create",
          "--data",
          data,
          "--username",
          "exeexcel",
          "--email",
          "excel@example.test",
          "--password",
          "password1",
        ])
      ).code,
    ).toBe(0);
    const p = Bun.spawn(
      ["./apis", "serve", "--port", "0", "--host", "127.0.0.1", "--data", data, "--log-level", "error"],
      { cwd: folder, env, stdout: "pipe", stderr: "pipe" },
    );
    try {
      const url = await servedUrl(p);
      const login = await fetch(`${url}/api/login`, {
        method: "POST",
        body: JSON.stringify({ username: "exeexcel", password: "password1" }),
      });
      const auth = login.headers.get("authorization")!;
      const post = async (path: string, body: unknown) =>
        (await (
          await fetch(url + path, {
            method: "POST",
            headers: { authorization: auth },
            body: body instanceof FormData ? body : JSON.stringify(body),
          })
        ).json()) as any;
      const project = (await post("/api/projects/create", { name: "Excel" })).result.project as string;
      const call = (path: string, body: unknown) => post(`/api/p/${project}/${path}`, body);
      const field = (await call("fields/create", { name: "name", type: "textline" })).result.field as string;
      await call("fields/commit", { field });
      const article = (await call("definitions/create", { name: "article", fields: [field], titlefield: field })).result
        .definition as string;
      await call("definitions/commit", { definition: article });
      const rootAnswer = await call("records/root", {});
      const root = rootAnswer.result.root as string;
      await call("definitions/childdefinitions/add", {
        definition: rootAnswer.data.records[root].definition,
        childdefinition: article,
      });
      await call("definitions/commit", { definition: rootAnswer.data.records[root].definition });
      const exp = await call("records/excel/children", { record: root, language: "en", definition: article });
      const ExcelJS = (await import("exceljs")).default;
      const wb = new ExcelJS.Workbook();
      await wb.xlsx.load(Buffer.from(Object.values(exp.data.files)[0] as string, "base64") as any);
      for (let i = 0; i < 600; i++) wb.getWorksheet("Records")!.addRow([null, `Row ${i}`]);
      const bytes = Buffer.from(await wb.xlsx.writeBuffer());
      const importJob = async (content: Uint8Array) => {
        const fd = new FormData();
        fd.append("job", "true");
        fd.append("upload_file", new Blob([content as any]), "root-children.xlsx");
        const token = (await call("records/excel/update", fd)).result["job.token"] as string;
        for (;;) {
          const job = (await call("jobs/get", { token })).result.job;
          if (job.status === "done" || job.status === "rejected") return job;
          await Bun.sleep(50);
        }
      };
      const done = await importJob(bytes);
      expect(done.status).toBe("done");
      expect(done.info["report.counts"]).toMatchObject({ rows: 600, created: 600, errors: 0 });
      const kids = await call("records/children", { record: root, language: "en", "page.size": 1000 });
      expect(kids.result["children.size"]).toBe(600);
      expect(kids.data.records[kids.result.children[599]].fields.en.name).toBe("Row 599");
      const damaged = await importJob(bytes.subarray(0, Math.floor(bytes.length / 2)));
      expect(damaged).toMatchObject({
        status: "rejected",
        info: {
          code: 400,
          error_info: {
            reason: "not an Excel workbook made by records/excel/children: the file is not a readable .xlsx workbook",
          },
        },
      });
    } finally {
      p.kill("SIGTERM");
      await p.exited;
    }
  }, 120_000);

  test("serve answers the web console from inside the executable: the page, its script and its styles", async () => {
    const p = Bun.spawn(["./apis", "serve", "--port", "0", "--data", join(tmp, "console")], {
      cwd: folder,
      env,
      stdout: "pipe",
      stderr: "pipe",
    });
    try {
      const url = await servedUrl(p);
      // The first bundle, and the records pages' own bundle (pages/records/records.html).
      for (const address of ["/console/projects", "/console/p/x1/records"]) {
        const page = await fetch(url + address);
        expect(page.status).toBe(200);
        const html = await page.text();
        expect(html).toContain('<div id="app">');
        const assets = [...html.matchAll(/(?:src|href)="(\/[^"]+\.(?:js|css))"/g)].map((m) => m[1]!);
        expect(assets.length).toBeGreaterThanOrEqual(2);
        for (const a of assets) {
          const res = await fetch(url + a);
          expect(res.status).toBe(200);
          // The browser build of socket.io-client, not its Node transports.
          expect(await res.text()).not.toContain("child_process");
        }
      }
    } finally {
      p.kill();
      await p.exited;
    }
  });

  test("serve answers /api/ping, loads nothing from node_modules nor libvips before the first image, and exits 0 on SIGTERM", async () => {
    const p = Bun.spawn(["./apis", "serve", "--port", "0", "--data", join(tmp, "d")], {
      cwd: folder,
      env,
      stdout: "pipe",
      stderr: "pipe",
    });
    try {
      const url = await servedUrl(p);
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/); // 127.0.0.1 unless --host says otherwise
      const res = await fetch(`${url}/api/ping`);
      expect(res.status).toBe(200);
      expect(((await res.json()) as any).result.pong).toBe(true);

      const maps = readFileSync(`/proc/${p.pid}/maps`, "utf8");
      expect(maps).not.toContain("node_modules");
      // sharp and libvips are loaded with the first image (the session test above sees them then).
      expect(maps).not.toContain("libvips");

      p.kill("SIGTERM");
      expect(await p.exited).toBe(0);
      expect(existsSync(join(tmp, "d"))).toBe(true);
    } finally {
      p.kill();
    }
  });

  test("logs, health, metrics and the bundled API viewer work in the executable", async () => {
    const p = Bun.spawn(
      ["./apis", "serve", "--port", "0", "--data", join(tmp, "d2"), "--log-format", "json", "--metrics"],
      { cwd: folder, env, stdout: "pipe", stderr: "pipe" },
    );
    try {
      const url = await servedUrl(p);
      const health = await fetch(`${url}/api/health`);
      expect(health.status).toBe(200);
      expect(((await health.json()) as any).result.status).toBe("ok");
      const page = await (await fetch(`${url}/api/docs`)).text();
      const viewer = await fetch(url + page.match(/<script src="([^"]+)"/)![1]);
      expect(viewer.status).toBe(200);
      expect((await viewer.text()).length).toBeGreaterThan(1_000_000);
      expect(await (await fetch(`${url}/metrics`)).text()).toContain(
        'apis_http_requests_total{method="GET",route="/api/health",status="200"} 1',
      );
      p.kill("SIGTERM");
      expect(await p.exited).toBe(0);
      const lines = (await new Response(p.stderr).text())
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l));
      expect(lines.find((l) => l.path === "/api/health")).toMatchObject({ level: "info", method: "GET", status: 200 });
      expect(lines.find((l) => l.path === "/api/docs/viewer.js")).toMatchObject({ status: 200 });
    } finally {
      p.kill();
    }
  });

  test("the text log format works in the executable", async () => {
    const p = Bun.spawn(["./apis", "serve", "--port", "0", "--data", join(tmp, "d3"), "--log-format", "text"], {
      cwd: folder,
      env,
      stdout: "pipe",
      stderr: "pipe",
    });
    try {
      const url = await servedUrl(p);
      expect((await fetch(`${url}/api/ping`)).status).toBe(200);
      p.kill("SIGTERM");
      expect(await p.exited).toBe(0);
      expect(await new Response(p.stderr).text()).toMatch(
        /^\[[\d\-T:.]+Z\] INFO: GET \/api\/ping 200 \{.*"request_id":"\w+"\}$/m,
      );
    } finally {
      p.kill();
    }
  });
});
