/**
 * The DAM benchmark (issue 5 item 8):
 *
 * - uncached transforms through `GET /dam/.../transform` (with `force`, one at a time) against the
 *   very same sharp pipeline (`render` of src/features/dam/dam.transform.ts) called directly in this process on
 *   the same originals, in alternating rounds; target ratio >= 0.85;
 * - repeated transforms without `force` (the file is up to date: no image work) in req/s;
 * - `GET /media/p/<project>/var/...` against a bare Bun.serve sending the same file with
 *   `new Response(Bun.file(path))` and the same headers, with autocannon; target ratio >= 0.95
 *   (and, for information, against the file sent with its Content-Type alone);
 * - uploads through `POST /api/p/<project>/assets/upload` in MB/s against the fair ceiling (issue
 *   41): a bare Bun.serve that streams the request body to a file and syncs the file and its folder
 *   entry before it answers, as the durable default does; one upload at a time (the image set, a
 *   64 MB file) and 4 in flight (how a DAM is filled); for information, the same bare server
 *   doing a DAM's least work besides (SHA-256, image header, a durable row), the same bare server
 *   without the syncs, and Apis with `--sqlite-synchronous normal`.
 *
 * `BENCH_DAM_ONLY=uploads` measures only the upload rows.
 *
 * The images: real photographs (2.3–4.1 MP JPEGs) from Debian's plasma-workspace-wallpapers
 * (`apt-get install plasma-workspace-wallpapers`; KDE's photographic wallpapers in
 * /usr/share/wallpapers) when that package is installed, else four generated 2–6 MP JPEG
 * "photographs" (smooth gradients, shapes, sensor-like noise) in bench/.tmp/dam/ (gitignored);
 * plus a generated PNG with alpha. RESULTS.md says which set was used. Apis and the
 * bare server each run in their own process; autocannon and the direct pipeline run in this one.
 * Runnable alone: `bun bench/dam.bench.ts`, or through the runner: `npm run bench -- dam`.
 */
import { existsSync, mkdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import sharp from "sharp";
import { effectiveBackground, outputType, parseOptions } from "../src/features/dam/dam.options";
import { configureSharp, planGeometry, render, type RenderJob } from "../src/features/dam/dam.transform";
import {
  BUN,
  compareLoad,
  comparePairs,
  CONNECTIONS,
  freePort,
  load,
  median,
  removeDir,
  ROOT,
  round,
  ROUNDS,
  SECONDS,
  spawnServer,
  tempDir,
  timed,
  type BenchResult,
  type Child,
  type Row,
  spawnApis,
} from "./harness";

const USER = { username: "dambench", email: "dambench@example.test", password: "bench-password-1" };
const IMAGES_DIR = join(ROOT, "bench", ".tmp", "dam");
/** Media GET: rounds per side and their length (BENCH_SECONDS halved). */
const MEDIA_ROUNDS = Math.max(ROUNDS, 8);
const MEDIA_SECONDS = Math.max(1, Math.round(SECONDS / 3));
/** Uncached transforms per image and side. */
const REPEAT = Number(process.env.BENCH_DAM_REPEAT ?? 10);
/** Alternating upload rounds of the 64 MB file per side. */
const UPLOAD_ROUNDS = Number(process.env.BENCH_DAM_UPLOAD_ROUNDS ?? 3);
/**
 * The image set: sets sent to each side before measuring (a bulk ingest's steady state: the
 * server's code compiled), then measured alternating rounds. Every set has file names of its own,
 * as an ingest's files do.
 */
const SET_WARMUP = Number(process.env.BENCH_DAM_SET_WARMUP ?? 10);
const SET_ROUNDS = Number(process.env.BENCH_DAM_SET_ROUNDS ?? 6);
/** Uploads in flight at once in the concurrent rows, and the image sets each of their rounds sends. */
const IN_FLIGHT = 4;
const FLIGHT_SETS = Number(process.env.BENCH_DAM_FLIGHT_SETS ?? 4);
/** `uploads`: only the upload rows. */
const ONLY_UPLOADS = process.env.BENCH_DAM_ONLY === "uploads";
/** The server's defaults, so the direct pipeline runs under the same guards. */
const PIXEL_LIMIT = 50_000_000;
const TIMEOUT_SECONDS = 30;

export type Source = { file: string; label: string; options: string; bytes: number; pathname?: string };

/** A deterministic pseudo-random generator (same images on every machine). */
function rng(seed: number) {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
}

/** A photograph-like JPEG: smooth light gradients, soft shapes, fine noise; about as compressible as a photo. */
async function photo(width: number, height: number, seed: number): Promise<Buffer> {
  const rand = rng(seed);
  const raw = Buffer.alloc(width * height * 3);
  const fx = 1 + rand() * 2;
  const fy = 1 + rand() * 2;
  const phase = rand() * Math.PI;
  for (let y = 0; y < height; y++) {
    const v = y / height;
    for (let x = 0; x < width; x++) {
      const u = x / width;
      const i = (y * width + x) * 3;
      raw[i] = 110 + 90 * Math.sin(u * Math.PI * fx + phase) * Math.cos(v * Math.PI * fy);
      raw[i + 1] = 120 + 70 * Math.sin((u + v) * Math.PI * 1.3 + phase);
      raw[i + 2] = 100 + 80 * Math.cos(v * Math.PI * fy * 0.7 - phase) * (1 - u * 0.5);
    }
  }
  const shapes = Array.from({ length: 12 }, () => {
    const r = Math.round((0.03 + rand() * 0.12) * width);
    const colour = `rgb(${Math.floor(rand() * 255)},${Math.floor(rand() * 255)},${Math.floor(rand() * 255)})`;
    return `<circle cx="${Math.round(rand() * width)}" cy="${Math.round(rand() * height)}" r="${r}" fill="${colour}" fill-opacity="0.55"/>`;
  }).join("");
  const svg = Buffer.from(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}"><filter id="b"><feGaussianBlur stdDeviation="${Math.round(width / 300)}"/></filter><g filter="url(#b)">${shapes}</g></svg>`,
  );
  const noise = await sharp({
    create: { width, height, channels: 3, background: "#808080", noise: { type: "gaussian", mean: 128, sigma: 40 } },
  })
    .png({ compressionLevel: 0 })
    .toBuffer();
  const base = await sharp(raw, { raw: { width, height, channels: 3 } })
    .composite([{ input: svg }])
    .png({ compressionLevel: 0 })
    .toBuffer();
  return sharp(base)
    .composite([{ input: noise, blend: "overlay" }])
    .jpeg({ quality: 90 })
    .toBuffer();
}

/** A PNG with alpha: a soft-edged product cut-out on a transparent background. */
async function cutout(width: number, height: number): Promise<Buffer> {
  const raw = Buffer.alloc(width * height * 4);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 4;
      const dx = (x - width / 2) / (width * 0.4);
      const dy = (y - height / 2) / (height * 0.42);
      const d = Math.sqrt(dx * dx + dy * dy);
      raw[i] = 200 - 120 * (x / width);
      raw[i + 1] = 60 + 150 * (y / height);
      raw[i + 2] = 90 + 100 * Math.abs(Math.sin(x / 37));
      raw[i + 3] = d < 0.95 ? 255 : d < 1 ? Math.round(255 * (1 - (d - 0.95) / 0.05)) : 0;
    }
  }
  return sharp(raw, { raw: { width, height, channels: 4 } })
    .png({ compressionLevel: 6 })
    .toBuffer();
}

/** KDE's photographic wallpapers (Debian package plasma-workspace-wallpapers), 2560x1600 JPEGs. */
const WALLPAPERS = "/usr/share/wallpapers";
const wallpaper = (name: string) => join(WALLPAPERS, name, "contents", "images", "2560x1600.jpg");
const REAL_PHOTOS = ["FallenLeaf", "EveningGlow", "Path", "ColorfulCups"];

/** True when the real photographs are installed (the benchmark then uses them). */
export function realPhotos(): boolean {
  return REAL_PHOTOS.every((n) => existsSync(wallpaper(n)));
}

/** The image set: real photographs when installed, else generated ones; made on first use. */
export async function images(): Promise<Source[]> {
  mkdirSync(IMAGES_DIR, { recursive: true });
  const real = (name: string, width?: number) => async () => {
    const img = sharp(wallpaper(name));
    return (width ? img.resize(width) : img).jpeg({ quality: 92 }).toBuffer();
  };
  const photos: { name: string; make: () => Promise<Buffer>; label: string; options: string }[] = realPhotos()
    ? [
        {
          name: "real-fallenleaf-2mp.jpg",
          make: real("FallenLeaf", 1920),
          label: "1920x1200 photo (FallenLeaf)",
          options: "fill=800,600/q=85",
        },
        {
          name: "real-eveningglow-4mp.jpg",
          make: real("EveningGlow"),
          label: "2560x1600 photo (EveningGlow)",
          options: "fit=800,800/q=85",
        },
        { name: "real-path-4mp.jpg", make: real("Path"), label: "2560x1600 photo (Path)", options: "width=1200/q=85" },
        {
          name: "real-cups-4mp.jpg",
          make: real("ColorfulCups"),
          label: "2560x1600 photo (ColorfulCups)",
          options: "fill=600,600/hs=0.3,0.4/q=85",
        },
      ]
    : [
        {
          name: "photo-2mp.jpg",
          make: () => photo(1920, 1080, 1),
          label: "1920x1080 generated JPEG",
          options: "fill=800,600/q=85",
        },
        {
          name: "photo-3mp.jpg",
          make: () => photo(2048, 1536, 2),
          label: "2048x1536 generated JPEG",
          options: "fit=800,800/q=85",
        },
        {
          name: "photo-4mp.jpg",
          make: () => photo(2400, 1600, 3),
          label: "2400x1600 generated JPEG",
          options: "width=1200/q=85",
        },
        {
          name: "photo-6mp.jpg",
          make: () => photo(3000, 2000, 4),
          label: "3000x2000 generated JPEG",
          options: "fill=600,600/hs=0.3,0.4/q=85",
        },
      ];
  const specs = [
    ...photos,
    {
      name: "cutout-2mp.png",
      make: () => cutout(1600, 1200),
      label: "1600x1200 PNG with alpha",
      options: "fit=800,800/padding=20,20,20,20",
    },
  ];
  const out: Source[] = [];
  for (const s of specs) {
    const file = join(IMAGES_DIR, s.name);
    if (!existsSync(file)) writeFileSync(file, await s.make());
    out.push({ file, label: s.label, options: s.options, bytes: statSync(file).size });
  }
  return out;
}

/** The transform the endpoint does, minus the database and HTTP: header read, plan, render. */
async function direct(src: Source, target: string): Promise<void> {
  const o = parseOptions(src.options.split("/"));
  const meta = await sharp(src.file).metadata();
  const ext = src.file.slice(src.file.lastIndexOf(".") + 1);
  const type = outputType(o, ext, meta.hasAlpha);
  const job: RenderJob = {
    source: src.file,
    target: `${target}.${type}`,
    geometry: planGeometry(
      { width: meta.autoOrient?.width ?? meta.width, height: meta.autoOrient?.height ?? meta.height },
      o,
      PIXEL_LIMIT,
    ),
    type,
    bg: effectiveBackground(o, type),
    q: o.q,
    optimize: o.optimize,
    palette: true,
    animated: false,
    pixelLimit: PIXEL_LIMIT,
    timeoutSeconds: TIMEOUT_SECONDS,
  };
  await render(job);
}

async function json(res: Response): Promise<any> {
  const text = await res.text();
  if (!res.ok) throw new Error(`${res.url}: ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

/** The multipart body of an upload of `file`, made once so Apis and the bare server get the very same bytes. */
export type Multipart = { body: Uint8Array; type: string };
export async function multipart(file: string, name: string): Promise<Multipart> {
  const form = new FormData();
  form.append("file", Bun.file(file), name);
  const r = new Response(form);
  return { type: r.headers.get("content-type")!, body: new Uint8Array(await r.arrayBuffer()) };
}

/** Uploads one multipart body through the asset endpoint; returns the storage name. */
export async function upload(url: string, project: string, auth: string, m: Multipart): Promise<string> {
  const body = await json(
    await fetch(`${url}/api/p/${project}/assets/upload`, {
      method: "POST",
      headers: { authorization: auth, "content-type": m.type },
      body: m.body,
    }),
  );
  const a = body.data.assets[body.result.asset];
  // The DAM storage pathname of an asset: <gid>~<version>.<type> (the asset form does not show it).
  return `${a.gid}~${a.version}.${a.type}`;
}

/** Apis serving `data` (a user made by the CLI first), signed in, with a new project. */
export async function startApis(
  data: string,
  args: string[],
): Promise<{ child: Child; auth: string; project: string }> {
  const cli = Bun.spawn(
    [
      BUN,
      "src/main.ts",
      "user",
      "create",
      "--data",
      data,
      "--username",
      USER.username,
      "--email",
      USER.email,
      "--password",
      USER.password,
    ],
    { cwd: ROOT, stdout: "pipe", stderr: "pipe" },
  );
  if ((await cli.exited) !== 0) throw new Error(`user create: ${await new Response(cli.stderr).text()}`);
  const child = await spawnApis(data, args);
  try {
    const login = await fetch(`${child.url}/api/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ username: USER.username, password: USER.password }),
    });
    await login.arrayBuffer();
    const auth = login.headers.get("authorization");
    if (!auth) throw new Error(`login failed: ${login.status}`);
    const project = (
      await json(
        await fetch(`${child.url}/api/projects/create`, {
          method: "POST",
          headers: { authorization: auth, "content-type": "application/json" },
          body: JSON.stringify({ name: "DAM bench" }),
        }),
      )
    ).result.project;
    return { child, auth, project };
  } catch (err) {
    await child.stop();
    throw err;
  }
}

/** Seconds to send every body of `bodies` with `send`, `n` at a time (each sender takes the next body). */
export async function inFlight(
  send: (m: Multipart) => Promise<unknown>,
  bodies: Multipart[],
  n: number,
): Promise<number> {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < bodies.length) await send(bodies[next++]!);
    }),
  );
  return (performance.now() - t0) / 1000;
}

export async function run(): Promise<BenchResult> {
  configureSharp();
  const notes: string[] = [];
  const data = tempDir();
  const dataNormal = tempDir();
  const work = tempDir("apis-dam-bench-");
  let apis: Child | undefined;
  let apisNormal: Child | undefined;
  let bare: Child | undefined;
  let auth: string;
  let project: string;
  let authNormal: string;
  let projectNormal: string;
  try {
    const sources = await images();
    ({ child: apis, auth, project } = await startApis(data, []));
    // The same server under the faster setting, for the uploads only: what durability costs.
    ({
      child: apisNormal,
      auth: authNormal,
      project: projectNormal,
    } = await startApis(dataNormal, ["--sqlite-synchronous", "normal"]));

    // Uploads: the image set, and one large file, against the bare server streaming to disk.
    const big = join(work, "large.bin");
    writeFileSync(
      big,
      Buffer.alloc(64 * 2 ** 20, 7).map((_, i) => (i * 2654435761) >>> 24),
    );
    const setBytes = sources.reduce((n, s) => n + s.bytes, 0);
    const filesJson = join(work, "files.json");
    const varFiles: Record<string, { file: string; headers: Record<string, string> }> = {};

    // Uploads first (they make the originals the transforms read).
    const bodies = await Promise.all(sources.map((s) => multipart(s.file, s.file.split("/").pop()!)));
    const bigBody = await multipart(big, "large.bin");
    // Warm-up: both sides take one image first (code paths loaded, files and folders made).
    for (const [i, s] of sources.entries()) s.pathname = await upload(apis!.url, project, auth, bodies[i]!);
    for (const m of bodies) await upload(apisNormal!.url, projectNormal, authNormal, m);

    // The media files to serve: a thumbnail and a web-size image made by the endpoint.
    const thumb = await json(
      await fetch(`${apis.url}/dam/p/${project}/transform/${sources[0]!.pathname}/fill=200,200/q=80`, {
        headers: { authorization: auth },
      }),
    );
    const web = await json(
      await fetch(`${apis.url}/dam/p/${project}/transform/${sources[3]!.pathname}/fit=1200,1200/q=85`, {
        headers: { authorization: auth },
      }),
    );
    const mediaFile = (publicUrl: string) =>
      join(data, "files", "projects", project, "media", publicUrl.split("/").pop()!);
    const thumbUrl = thumb.result.public_url.replace(/^https?:\/\/[^/]+/, apis.url);
    const webUrl = web.result.public_url.replace(/^https?:\/\/[^/]+/, apis.url);
    // Each file twice on the bare server: with its Content-Type alone, and with every header Apis
    // sends with it (validators, caching, CORS, request id; Bun adds Date and Content-Length to both).
    for (const [name, url, pub] of [
      ["thumb", thumbUrl, thumb.result.public_url],
      ["web", webUrl, web.result.public_url],
    ] as const) {
      const res = await fetch(url);
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`${url}: ${res.status}`);
      const same: Record<string, string> = {};
      res.headers.forEach((v, k) => {
        if (k !== "date" && k !== "content-length") same[k] = v;
      });
      varFiles[`/${name}.jpg`] = { file: mediaFile(pub), headers: { "content-type": "image/jpeg" } };
      varFiles[`/${name}-same.jpg`] = { file: mediaFile(pub), headers: same };
    }
    writeFileSync(filesJson, JSON.stringify(varFiles));
    const barePort = await freePort();
    bare = await spawnServer([BUN, "bench/dam-bare.ts", String(barePort), filesJson, work], barePort, {
      readyPath: "/ping",
    });

    // "durable": the ceiling; "dam": the same plus a DAM's least work (for information).
    const bareUpload = async (m: Multipart, mode: "plain" | "durable" | "dam" = "plain") =>
      (
        await fetch(`${bare!.url}/${mode === "plain" ? "upload" : `upload-${mode}`}`, {
          method: "POST",
          headers: { "content-type": m.type },
          body: m.body,
        })
      ).arrayBuffer();
    await bareUpload(bodies[0]!);
    await bareUpload(bodies[0]!, "durable");
    await bareUpload(bodies[0]!, "dam");
    // Alternating rounds (Apis, bare, Apis, ...), one upload at a time, so other work on the machine falls on both alike.
    let uploadSetSeconds = 0;
    let bareSetSeconds = 0;
    let uploadBigSeconds = 0;
    let bareBigSeconds = 0;
    let durableSetSeconds = 0;
    let floorSetSeconds = 0;
    let durableBigSeconds = 0;
    let normalSetSeconds = 0;
    let normalBigSeconds = 0;
    const setOf = (tag: string) =>
      Promise.all(sources.map((s) => multipart(s.file, `${tag}-${s.file.split("/").pop()!}`)));
    for (let w = 0; w < SET_WARMUP; w++) {
      const set = await setOf(`w${w}`);
      for (const m of set) await upload(apis!.url, project, auth, m);
      for (const m of set) await upload(apisNormal!.url, projectNormal, authNormal, m);
      for (const m of set) await bareUpload(m);
      for (const m of set) await bareUpload(m, "dam");
    }
    for (let r = 0; r < SET_ROUNDS; r++) {
      const set = await setOf(`r${r}`);
      for (const m of set) uploadSetSeconds += await timed(() => upload(apis!.url, project, auth, m));
      for (const m of set) bareSetSeconds += await timed(() => bareUpload(m));
      for (const m of set) durableSetSeconds += await timed(() => bareUpload(m, "durable"));
      for (const m of set) floorSetSeconds += await timed(() => bareUpload(m, "dam"));
      for (const m of set) normalSetSeconds += await timed(() => upload(apisNormal!.url, projectNormal, authNormal, m));
    }
    await upload(apis!.url, project, auth, bigBody);
    await upload(apisNormal!.url, projectNormal, authNormal, bigBody);
    await bareUpload(bigBody);
    for (let r = 0; r < UPLOAD_ROUNDS; r++) {
      uploadBigSeconds += await timed(() => upload(apis!.url, project, auth, bigBody));
      bareBigSeconds += await timed(() => bareUpload(bigBody));
      durableBigSeconds += await timed(() => bareUpload(bigBody, "durable"));
      normalBigSeconds += await timed(() => upload(apisNormal!.url, projectNormal, authNormal, bigBody));
    }
    // 4 uploads in flight: rounds of FLIGHT_SETS image sets each, Apis and the syncing bare server in turn.
    let flightSeconds = 0;
    let durableFlightSeconds = 0;
    let floorFlightSeconds = 0;
    const flightOf = async (tag: string) =>
      (await Promise.all(Array.from({ length: FLIGHT_SETS }, (_, i) => setOf(`${tag}-${i}`)))).flat();
    await inFlight((m) => upload(apis!.url, project, auth, m), await flightOf("fw"), IN_FLIGHT);
    await inFlight((m) => bareUpload(m, "durable"), await flightOf("fw"), IN_FLIGHT);
    await inFlight((m) => bareUpload(m, "dam"), await flightOf("fw"), IN_FLIGHT);
    for (let r = 0; r < SET_ROUNDS; r++) {
      const bodies = await flightOf(`f${r}`);
      flightSeconds += await inFlight((m) => upload(apis!.url, project, auth, m), bodies, IN_FLIGHT);
      durableFlightSeconds += await inFlight((m) => bareUpload(m, "durable"), bodies, IN_FLIGHT);
      floorFlightSeconds += await inFlight((m) => bareUpload(m, "dam"), bodies, IN_FLIGHT);
    }
    await apisNormal.stop();
    apisNormal = undefined;
    const mb = (bytes: number) => bytes / 2 ** 20;
    const flightMb = SET_ROUNDS * FLIGHT_SETS * mb(setBytes);
    const uploadNotes = [
      `Uploads: multipart POST /api/p/<project>/assets/upload (streamed to disk, SHA-256, type sniffing, header and EXIF/IPTC/XMP extraction, database row, sync item); the image set one at a time: ${SET_WARMUP} sets to each side first (the steady state of a bulk ingest), then ${SET_ROUNDS} alternating measured rounds, every set with file names of its own; the 64 MB file (pseudo-random bytes, stored as a plain file): ${UPLOAD_ROUNDS} alternating rounds after one warm-up upload; 4 in flight: ${SET_ROUNDS} alternating rounds of ${FLIGHT_SETS} image sets (${FLIGHT_SETS * sources.length} files), ${IN_FLIGHT} senders each taking the next file. Apis runs with its default \`--sqlite-synchronous full\`: the file's bytes and folder entry are synced, then the row committed and the log synced, before the answer. Ceiling: bench/dam-bare.ts streaming the very same multipart body (built in memory) to a file, then syncing the file and its folder entry before it answers (no hashing, sniffing or database), the same number in flight. For information: the same bare server doing a DAM's least work besides (bench/dam-bare.ts \`/upload-dam\`: the body's SHA-256 while it arrives, the image header read with sharp from the first 512 KiB, one row in a WAL SQLite database whose log is synced after the file and its folder entry, one sync shared by the uploads committing meanwhile; no multipart parsing, EXIF, names, folders, rights, change log or sync item), the same bare server without the syncs (the file removed at once, so its bytes need never reach the disk), and a second Apis with \`--sqlite-synchronous normal\` (own process and data folder; neither the file nor the log synced before the answer) in the same alternating rounds: with the default \`full\`, the image set goes at ${round(normalSetSeconds / uploadSetSeconds)} of its speed and the 64 MB file at ${round(normalBigSeconds / uploadBigSeconds)}.`,
      "Where an image's time goes (2026-12-03, 60 image sets one at a time, per thread from /proc, stage times from timestamps in the upload's code): Apis spends 9.5 ms of CPU per image (main thread 4.2 ms user and 1.0 system: reading and cutting the body, the head's sniff, header and EXIF, the database and the answer; the hashing and temp-file thread 1.5 and 0.8; the JIT 0.9; libvips and the syncs on the thread pool 1.0), the syncing bare server 2.4 (its main thread, 0.9 user and 1.5 system). From the upload's start the body is in after 2.8 ms (the bare server's after 1.6: its main thread alone does less while the client sends), the sniff is done at 3.2, the header and metadata at 3.8, the file and its folder entry are on disk at 4.2 and the row is committed with its log synced at 5.4; without any sync (`--sqlite-synchronous normal`) Apis is still at 0.56 to 0.65 of the syncing bare server, so the syncs are not the gap: the durable default costs Apis 6 to 14 % of its speed, the bare server about 44 %. With 4 in flight the two cores are the limit: 9.5 ms of server CPU and about 1 ms of the client's per image on 2 cores is at most about 345 MB/s, what the row measures (345 to 352); 0.9 of the ceiling would need the server's CPU per image cut to about 6.6 ms.",
      "On a quiet machine (2026-12-04, load average 0.2 to 0.5; 1,000 uploads one at a time, CPU per thread from /proc): Apis spends 6.2 to 7.4 ms of CPU per image (main thread 2.0 user and 1.0 system; hashing and temp-file thread 1.3 and 0.7; thread pool 0.7, the syncs and the image header; JIT 0.2 to 0.5, falling as the run goes on), the syncing bare server 1.9 to 2.1 and the DAM's-least-work floor 3.7 to 4.0; SHA-256 runs at 1.7 GB/s on this CPU with its SHA instructions (Bun's, node:crypto's: the same), 1.05 ms of an image, and `perf` finds 12 % of the main thread copying memory (the request body reaching JavaScript, which the bare server pays too) and its JavaScript at about 1.3 ms per upload with no part above 0.3 ms. Two cores shared with a client that needs about 1 ms per image leave 0.9 of the bare server (3.3 to 3.6 ms per image one at a time, 3.0 to 3.3 with 4 in flight) below the floor's own 5.2 and 4.4.",
      "Where the 64 MB file's time goes (2026-12-03, 6 uploads each with nothing dirty in the page cache, per thread from /proc): the syncing bare server takes 116 to 181 ms (median about 138) and 80 ms of CPU (23 user, 57 system), Apis 151 to 175 ms and about 170 ms of CPU (main thread 72: receiving and cutting the body; hashing and temp-file thread 83, of which SHA-256 of 64 MB is 37; the rest 15); the client spends 55 ms. On two cores shared with the client that is at least (80 + 55) / 2 = 68 ms for the bare server and (170 + 55) / 2 = 112 ms for Apis before the last sync, so the row follows how well the last sync and the machine's other work overlap: 0.50 to 1.00 over the runs of 2026-12-03, with or without a `sync` before each upload (tried: 0.62 and 0.71 with, 0.70 and 0.64 without).",
      `The least a DAM must do of an upload besides storing it durably (its content hash, its image header, a durable row: the bare server's \`/upload-dam\`) already takes the syncing bare server to ${round(durableSetSeconds / floorSetSeconds)} of its speed one at a time and to ${round(durableFlightSeconds / floorFlightSeconds)} with ${IN_FLIGHT} in flight, in this run: below the 0.9 asked of Apis, which also parses the multipart body, reads EXIF/IPTC/XMP, checks rights, names and folders, and writes the change log and the sync item. Against that floor Apis is at ${round(floorSetSeconds / uploadSetSeconds)} and ${round(floorFlightSeconds / flightSeconds)}.`,
    ];
    const uploadRows: Row[] = [
      {
        metric: `upload, image set (${sources.length} files, ${round(mb(setBytes), 1)} MB), one at a time`,
        value: round((SET_ROUNDS * mb(setBytes)) / uploadSetSeconds, 1),
        unit: "MB/s",
        ceiling: round((SET_ROUNDS * mb(setBytes)) / durableSetSeconds, 1),
        ratio: round(durableSetSeconds / uploadSetSeconds),
        target: "ratio >= 0.9",
      },
      {
        metric: "upload, one 64 MB file",
        value: round((UPLOAD_ROUNDS * 64) / uploadBigSeconds, 1),
        unit: "MB/s",
        ceiling: round((UPLOAD_ROUNDS * 64) / durableBigSeconds, 1),
        ratio: round(durableBigSeconds / uploadBigSeconds),
        target: "ratio >= 1.0",
      },
      {
        metric: `upload, image set, ${IN_FLIGHT} in flight (${FLIGHT_SETS * sources.length} files a round)`,
        value: round(flightMb / flightSeconds, 1),
        unit: "MB/s",
        ceiling: round(flightMb / durableFlightSeconds, 1),
        ratio: round(durableFlightSeconds / flightSeconds),
        target: "ratio >= 0.9",
      },
      {
        metric:
          "upload, image set, against the syncing bare server that also hashes, reads the header and commits a durable row (a DAM's least work; for information)",
        value: round((SET_ROUNDS * mb(setBytes)) / uploadSetSeconds, 1),
        unit: "MB/s",
        ceiling: round((SET_ROUNDS * mb(setBytes)) / floorSetSeconds, 1),
        ratio: round(floorSetSeconds / uploadSetSeconds),
      },
      {
        metric: `upload, image set, ${IN_FLIGHT} in flight, against the same (for information)`,
        value: round(flightMb / flightSeconds, 1),
        unit: "MB/s",
        ceiling: round(flightMb / floorFlightSeconds, 1),
        ratio: round(floorFlightSeconds / flightSeconds),
      },
      {
        metric: "upload, image set, against the bare server without syncs (for information)",
        value: round((SET_ROUNDS * mb(setBytes)) / uploadSetSeconds, 1),
        unit: "MB/s",
        ceiling: round((SET_ROUNDS * mb(setBytes)) / bareSetSeconds, 1),
        ratio: round(bareSetSeconds / uploadSetSeconds),
      },
      {
        metric: "upload, one 64 MB file, against the bare server without syncs (for information)",
        value: round((UPLOAD_ROUNDS * 64) / uploadBigSeconds, 1),
        unit: "MB/s",
        ceiling: round((UPLOAD_ROUNDS * 64) / bareBigSeconds, 1),
        ratio: round(bareBigSeconds / uploadBigSeconds),
      },
      {
        metric: "upload, image set, --sqlite-synchronous normal, against the syncing bare server (for information)",
        value: round((SET_ROUNDS * mb(setBytes)) / normalSetSeconds, 1),
        unit: "MB/s",
        ceiling: round((SET_ROUNDS * mb(setBytes)) / durableSetSeconds, 1),
        ratio: round(durableSetSeconds / normalSetSeconds),
      },
      {
        metric:
          "upload, one 64 MB file, --sqlite-synchronous normal, against the syncing bare server (for information)",
        value: round((UPLOAD_ROUNDS * 64) / normalBigSeconds, 1),
        unit: "MB/s",
        ceiling: round((UPLOAD_ROUNDS * 64) / durableBigSeconds, 1),
        ratio: round(durableBigSeconds / normalBigSeconds),
      },
    ];
    if (ONLY_UPLOADS)
      return {
        name: "dam",
        rows: uploadRows,
        notes: [
          ...uploadNotes,
          "Only the upload rows were measured in this run (`BENCH_DAM_ONLY=uploads`); `npm run bench -- dam` measures the transforms and media too.",
        ],
      };

    // Uncached transforms: endpoint (force) vs the direct pipeline, alternating rounds.
    const endpointUrl = (s: Source) => `${apis!.url}/dam/p/${project}/transform/${s.pathname}/${s.options}/force=true`;
    const endpointOnce = async (s: Source) => json(await fetch(endpointUrl(s), { headers: { authorization: auth } }));
    const directOnce = (s: Source) => direct(s, join(work, "direct-" + s.label.replace(/\W+/g, "-")));
    for (const s of sources) {
      await endpointOnce(s); // warm-up of both sides
      await directOnce(s);
    }
    // Pairs, one image at a time, in alternating order, so noise from other work falls on both alike.
    const transforms = REPEAT * sources.length;
    const {
      subject: endpointSeconds,
      ceiling: directSeconds,
      ratios: pairRatios,
    } = await comparePairs(
      transforms,
      (i) => endpointOnce(sources[i % sources.length]!),
      (i) => directOnce(sources[i % sources.length]!),
    );
    const endpointRate = transforms / endpointSeconds;
    const directRate = transforms / directSeconds;
    const perImage: string[] = [];
    for (const s of sources) {
      const ms: number[] = [];
      for (let i = 0; i < 3; i++)
        ms.push(
          (await json(await fetch(endpointUrl(s), { headers: { authorization: auth } }))).result.timing_ms.transform,
        );
      perImage.push(`${s.label} \`${s.options}\`: ${Math.min(...ms)} ms`);
    }

    // Repeated transform without force: the file is up to date, no image work.
    const cachedUrl = `${apis.url}/dam/p/${project}/transform/${sources[0]!.pathname}/${sources[0]!.options}`;
    await json(await fetch(cachedUrl, { headers: { authorization: auth } }));
    await load(cachedUrl, { seconds: 2, headers: { authorization: auth } });
    const cached = await load(cachedUrl, { headers: { authorization: auth } });

    // Media GET vs the bare server, same files: against the same answer (the target), and against
    // the file with its Content-Type alone (for information: what the other headers cost).
    for (const u of [
      thumbUrl,
      webUrl,
      `${bare.url}/thumb-same.jpg`,
      `${bare.url}/web-same.jpg`,
      `${bare.url}/thumb.jpg`,
      `${bare.url}/web.jpg`,
    ])
      await load(u, { seconds: 2 });
    // Short rounds, many of them: the speed of this machine drifts within seconds (other guests),
    // and a drift falls on both sides alike only when they take turns often.
    const media = (subject: string, ceiling: string) =>
      compareLoad(
        () => load(subject, { seconds: MEDIA_SECONDS }),
        () => load(ceiling, { seconds: MEDIA_SECONDS }),
        MEDIA_ROUNDS,
      );
    const mediaThumb = await media(thumbUrl, `${bare!.url}/thumb-same.jpg`);
    const mediaWeb = await media(webUrl, `${bare!.url}/web-same.jpg`);
    const plainThumb = await media(thumbUrl, `${bare!.url}/thumb.jpg`);
    const plainWeb = await media(webUrl, `${bare!.url}/web.jpg`);

    const thumbBytes = statSync(varFiles["/thumb.jpg"]!.file).size;
    const webBytes = statSync(varFiles["/web.jpg"]!.file).size;
    notes.push(
      `Images (${realPhotos() ? "real photographs from Debian's plasma-workspace-wallpapers, re-encoded at q92" : "generated photo-like images: install Debian's plasma-workspace-wallpapers for real photographs"}; prepared once into bench/.tmp/dam/): ${sources.map((s) => `${s.label} (${round(mb(s.bytes), 2)} MB)`).join(", ")}.`,
      `Uncached transform: each image with its options and \`force=true\`, one request at a time, ${REPEAT}× per image and side, measured in pairs (endpoint and direct on the same image back to back, the order alternating) after a warm-up; the ratio is the median over the pairs of direct time / endpoint time (a spike of other work on the machine hits one pair, not the total), value and ceiling are totals (transforms per second over all pairs, ratio of totals ${round(endpointRate / directRate)}); ceiling: \`render()\` of src/features/dam/dam.transform.ts (the endpoint's own pipeline: header read, plan, sharp, temp file + rename) called in this process on the same image files. Both sides: sharp cache off, libvips concurrency min(4, cores). Per image through the endpoint (timing_ms.transform, best of 3): ${perImage.join("; ")}.`,
      `Repeated transform: \`${sources[0]!.options}\` without force on the up-to-date file (JWT check, membership, asset lookup, stats of source and output, the output size recorded at its render), autocannon ${CONNECTIONS} connections, ${SECONDS} s; p50 ${cached.p50} ms, p99 ${cached.p99} ms.`,
      `Media: autocannon ${CONNECTIONS} connections, ${MEDIA_SECONDS} s per round, ${MEDIA_ROUNDS} alternating rounds after a 2 s warm-up (value and ceiling: the mean requests per second; ratio: the median over the rounds of Apis / ceiling, so a spike of other work on the machine in one round does not decide it; ratios of the means: thumbnail ${round(mediaThumb.subject / mediaThumb.ceiling)}, web image ${round(mediaWeb.subject / mediaWeb.ceiling)}), on a ${round(thumbBytes / 1024, 1)} KB thumbnail and a ${round(webBytes / 1024, 1)} KB web image; ceiling: bench/dam-bare.ts (its own process) answering \`new Response(Bun.file(path))\` with the very headers Apis sent with that file (Content-Type, Cache-Control, ETag, Last-Modified, Accept-Ranges, Access-Control-Allow-Origin, X-Request-Id; captured from one answer), so both put the same bytes on the wire. The "Content-Type only" rows compare with the same bare server sending the file with its Content-Type alone: the gap there is what the six other headers cost (Bun writing them, the load tool reading them); a bare server that sends them pays it as well.`,
      ...uploadNotes,
    );
    const rows: Row[] = [
      {
        metric: "uncached transform through /dam (force)",
        value: round(endpointRate, 2),
        unit: "transforms/s",
        ceiling: round(directRate, 2),
        ratio: round(median(pairRatios)),
        target: "ratio >= 0.95",
      },
      { metric: "repeated transform without force (up to date)", value: round(cached.rps, 0), unit: "req/s" },
      {
        metric: `GET /media/.../var (${round(thumbBytes / 1024, 1)} KB thumbnail)`,
        value: round(mediaThumb.subject, 0),
        unit: "req/s",
        ceiling: round(mediaThumb.ceiling, 0),
        ratio: round(median(mediaThumb.ratios)),
        target: "ratio >= 0.95",
      },
      {
        metric: `GET /media/.../var (${round(webBytes / 1024, 1)} KB image)`,
        value: round(mediaWeb.subject, 0),
        unit: "req/s",
        ceiling: round(mediaWeb.ceiling, 0),
        ratio: round(median(mediaWeb.ratios)),
        target: "ratio >= 0.95",
      },
      {
        metric: `GET /media/.../var (${round(thumbBytes / 1024, 1)} KB thumbnail), ceiling: Content-Type only`,
        value: round(plainThumb.subject, 0),
        unit: "req/s",
        ceiling: round(plainThumb.ceiling, 0),
        ratio: round(median(plainThumb.ratios)),
      },
      {
        metric: `GET /media/.../var (${round(webBytes / 1024, 1)} KB image), ceiling: Content-Type only`,
        value: round(plainWeb.subject, 0),
        unit: "req/s",
        ceiling: round(plainWeb.ceiling, 0),
        ratio: round(median(plainWeb.ratios)),
      },
      ...uploadRows,
    ];
    return { name: "dam", rows, notes };
  } finally {
    await apis?.stop();
    await apisNormal?.stop();
    await bare?.stop();
    removeDir(data);
    removeDir(dataNormal);
    removeDir(work);
  }
}

if (import.meta.main) {
  const r = await run();
  console.log(JSON.stringify(r, null, 2));
}
