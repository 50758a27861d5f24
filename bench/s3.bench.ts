/**
 * Files in S3 (issue 37.8): Apis with `--storage s3://...` on a throw-away radosgw
 * (scripts/ceph-s3.sh) against the same operations done directly with Bun's S3Client in the same
 * run, one at a time, in alternating rounds:
 *
 * - uploads (the DAM bench's image set, and one 64 MB file): `POST .../assets/upload` (streamed
 *   to the bucket while received into tmp/, hashed, sniffed; row committed) against
 *   `S3Client.write` of the same file;
 * - uncached transforms (a new key each time): `/dam/.../transform` against reading the original
 *   from the bucket, the same sharp resize, and writing the output to the bucket;
 * - media GETs of a transformed file: `/media/...` proxied from the bucket against `S3Client` reading
 *   the same object.
 *
 * The data-folder rows of the same operations are the `dam` section's (bench/dam.bench.ts).
 *
 * The store is pinned to half of the CPUs this process may use (one core of two) and everything
 * measured (this process, the client; Apis; the bare server) to the other half (BENCH_S3_PIN=0: no
 * pinning): a deployment's object store runs on machines of its own, so its CPU time must not be
 * taken from the servers compared, nor theirs from it.
 */
import { S3Client } from "bun";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { dirname, join, resolve } from "node:path";
import sharp from "sharp";
import { images, multipart, startApis, upload, type Multipart } from "./dam.bench";
import {
  BUN,
  comparePairs,
  freePort,
  median,
  removeDir,
  spawnServer,
  tempDir,
  timed,
  type BenchResult,
  type Child,
  type Row,
} from "./harness";

const SCRIPT = resolve(import.meta.dir, "../scripts/ceph-s3.sh");
const BUCKET = "apis-bench";
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
/** Image sets sent to every upload side before measuring, then measured alternating rounds of one set. */
const SET_WARMUP = Number(process.env.BENCH_S3_SET_WARMUP ?? 3);
const SET_ROUNDS = Number(process.env.BENCH_S3_SET_ROUNDS ?? 6);
/** Alternating rounds of the 64 MB upload. */
const BIG_ROUNDS = Number(process.env.BENCH_S3_BIG_ROUNDS ?? 3);
const TRANSFORMS = 24;
const GETS = 100;
const round = (n: number, d = 2) => Math.round(n * 10 ** d) / 10 ** d;
const PIN = process.env.BENCH_S3_PIN !== "0";

/** CPUs in a Cpus_allowed_list such as "0-1,3". */
function parseCpus(list: string): number[] {
  const out: number[] = [];
  for (const part of list.trim().split(",")) {
    const [a, b = a] = part.split("-").map(Number);
    for (let c = a!; c <= b!; c++) out.push(c);
  }
  return out;
}

const statusField = (path: string, field: string) =>
  new RegExp(`^${field}:\\s*(.*)$`, "m").exec(readFileSync(path, "utf8"))?.[1]?.trim() ?? "";

/** The CPU list of every thread of `pid` (threads that ended meanwhile are skipped). */
function threadCpus(pid: number): string[] {
  const out: string[] = [];
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      out.push(statusField(`/proc/${pid}/task/${tid}/status`, "Cpus_allowed_list"));
    } catch {}
  }
  return out;
}

function taskset(args: string[]) {
  const r = Bun.spawnSync(["taskset", ...args], { stdout: "ignore", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`taskset ${args.join(" ")}: ${r.stderr.toString().trim()}`);
}

/** Checks that every thread of `pids` may run on `cpus` only; returns how many threads were seen. */
function checkPinned(what: string, pids: number[], cpus: string): number {
  let n = 0;
  for (const pid of pids) {
    for (const list of threadCpus(pid)) {
      if (list !== cpus) throw new Error(`${what} (pid ${pid}): a thread on CPUs ${list}, not ${cpus}`);
      n++;
    }
  }
  return n;
}

const TICK_MS = 1000 / Number(Bun.spawnSync(["getconf", "CLK_TCK"]).stdout.toString().trim() || 100);
/** User and system CPU time of processes so far, in ms (all their threads, children not counted). */
function cpuMs(pids: number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    ticks += Number(f[11]) + Number(f[12]);
  }
  return ticks * TICK_MS;
}

export async function run(): Promise<BenchResult> {
  const loadBefore = loadavg()[0]!;
  // Pinning: the store on the first half of this process's CPUs, this process (and so Apis and
  // the bare server, which inherit its CPUs when spawned) on the rest; undone at the end.
  const ownCpus = statusField("/proc/self/status", "Cpus_allowed_list");
  const cpus = parseCpus(ownCpus);
  const hasTaskset = Bun.spawnSync(["sh", "-c", "command -v taskset"]).exitCode === 0;
  const pinned = PIN && cpus.length >= 2 && hasTaskset;
  const half = cpus.length >> 1;
  const storeCpus = cpus.slice(0, half).join(",");
  const serverCpus = cpus.slice(half).join(",");
  const whyNotPinned = !PIN
    ? "BENCH_S3_PIN=0"
    : !hasTaskset
      ? "no taskset (util-linux) here"
      : `this process may run on ${cpus.length} CPU only`;
  const unpin = () => pinned && taskset(["-a", "-p", "-c", ownCpus, String(process.pid)]);
  if (pinned) taskset(["-a", "-p", "-c", serverCpus, String(process.pid)]);
  const dir = join(tempDir("apis-bench-ceph-"), "cluster");
  const start = Bun.spawn([...(pinned ? ["taskset", "-c", storeCpus] : []), "sh", SCRIPT, "start", dir, BUCKET], {
    stdout: "pipe",
    stderr: "pipe",
    stdin: "ignore",
  });
  const out = await new Response(start.stdout).text();
  if ((await start.exited) !== 0) {
    removeDir(dirname(dir));
    unpin();
    throw new Error(`ceph-s3.sh: ${await new Response(start.stderr).text()}`);
  }
  const vars = new Map(
    out
      .trim()
      .split("\n")
      .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)] as const),
  );
  const storePids = (vars.get("S3_PIDS") ?? "").trim().split(/\s+/).filter(Boolean).map(Number);
  // The daemons inherited the store's CPUs from the script; set again for every thread all the same.
  if (pinned) for (const pid of storePids) taskset(["-a", "-p", "-c", storeCpus, String(pid)]);
  const endpoint = vars.get("S3_ENDPOINT")!;
  const accessKeyId = vars.get("S3_ACCESS_KEY")!;
  const secretAccessKey = vars.get("S3_SECRET_KEY")!;
  const s3 = new S3Client({ endpoint, accessKeyId, secretAccessKey, bucket: BUCKET, region: "us-east-1" });
  const data = tempDir();
  const work = tempDir("apis-bench-files-");
  let apis: Awaited<ReturnType<typeof startApis>> | undefined;
  let bare: Child | undefined;
  try {
    apis = await startApis(data, [
      "--storage",
      `s3://${BUCKET}/apis`,
      "--s3-endpoint",
      endpoint,
      "--s3-access-key-id",
      accessKeyId,
      "--s3-secret-access-key",
      secretAccessKey,
    ]);
    const { child, auth, project } = apis;
    const sources = await images();
    const big = join(work, "big.bin");
    writeFileSync(
      big,
      Buffer.alloc(64 * 2 ** 20, 7).map((_, i) => (i * 2654435761) >>> 24),
    );
    const bigBody = await multipart(big, "big.bin");
    const setBytes = sources.reduce((n, s) => n + s.bytes, 0);
    const setOf = (tag: string) =>
      Promise.all(sources.map((s) => multipart(s.file, `${tag}-${s.file.split("/").pop()!}`)));
    const barePort = await freePort();
    bare = await spawnServer([BUN, "bench/s3-bare.ts", String(barePort), work], barePort, {
      readyPath: "/ping",
      env: { S3_ENDPOINT: endpoint, S3_ACCESS_KEY: accessKeyId, S3_SECRET_KEY: secretAccessKey, S3_BUCKET: BUCKET },
    });
    const pinNote = pinned
      ? `Pinned with taskset, checked for every thread: the store (ceph-mon, ceph-osd, radosgw: ${checkPinned("store", storePids, storeCpus)} threads) on CPU ${storeCpus}; this process (the client, and S3Client for the direct figures), Apis and the bare server (${checkPinned("servers", [process.pid, child.pid, bare.pid], serverCpus)} threads) on CPU ${serverCpus}.`
      : `Not pinned (${whyNotPinned}): the store shares every CPU with the servers measured.`;
    const bareUpload = async (m: Multipart, path = "/upload") => {
      const r = await fetch(`${bare!.url}${path}`, {
        method: "POST",
        headers: { "content-type": m.type },
        body: m.body,
      });
      const text = await r.text();
      if (!r.ok) throw new Error(`bare upload: ${r.status} ${text}`);
    };
    let n = 0;
    // Warm-up: every side takes a few image sets and the large file first (code compiled, connections open).
    const pathnames = [];
    for (const m of await setOf("first")) pathnames.push(await upload(child.url, project, auth, m));
    for (let w = 0; w < SET_WARMUP; w++) {
      const set = await setOf(`w${w}`);
      for (const m of set) await upload(child.url, project, auth, m);
      for (const m of set) await bareUpload(m);
      for (const m of set) await bareUpload(m, "/upload-write");
      for (const m of set) await bareUpload(m, "/upload-dam");
      for (const s of sources) await s3.write(`direct/warm-${n++}`, Bun.file(s.file));
    }
    await upload(child.url, project, auth, bigBody);
    await bareUpload(bigBody);
    await bareUpload(bigBody, "/upload-dam");

    // Alternating rounds, one upload at a time, so other work on the machine falls on every side
    // alike; each side's figure is its median round (a stall of the shared machine in one round
    // does not decide the row).
    const sets = {
      api: [] as number[],
      bare: [] as number[],
      floor: [] as number[],
      write: [] as number[],
      direct: [] as number[],
    };
    const sumOf = async (fns: (() => Promise<unknown>)[]) => {
      let t = 0;
      for (const f of fns) t += await timed(f);
      return t;
    };
    // CPU time spent during the measured upload rounds: the server's, the client's (this process)
    // and the store's (every daemon), to see which core bounds each side.
    type Cpu = { server: number; client: number; store: number };
    const cpu = () => ({ server: 0, client: 0, store: 0 }) as Cpu;
    const setCpu = { api: cpu(), bare: cpu() };
    const bigCpu = { api: cpu(), bare: cpu() };
    const withCpu = async (acc: Cpu, server: number, fn: () => Promise<number>) => {
      const [s0, c0, st0] = [cpuMs([server]), cpuMs([process.pid]), cpuMs(storePids)];
      const t = await fn();
      acc.server += cpuMs([server]) - s0;
      acc.client += cpuMs([process.pid]) - c0;
      acc.store += cpuMs(storePids) - st0;
      return t;
    };
    for (let r = 0; r < SET_ROUNDS; r++) {
      const set = await setOf(`r${r}`);
      sets.api.push(
        await withCpu(setCpu.api, child.pid, () => sumOf(set.map((m) => () => upload(child.url, project, auth, m)))),
      );
      sets.bare.push(await withCpu(setCpu.bare, bare!.pid, () => sumOf(set.map((m) => () => bareUpload(m)))));
      sets.floor.push(await sumOf(set.map((m) => () => bareUpload(m, "/upload-dam"))));
      sets.write.push(await sumOf(set.map((m) => () => bareUpload(m, "/upload-write"))));
      sets.direct.push(await sumOf(sources.map((s) => () => s3.write(`direct/set-${n++}`, Bun.file(s.file)))));
    }
    const bigs = { api: [] as number[], bare: [] as number[], floor: [] as number[], direct: [] as number[] };
    await s3.write(`direct/big-${n++}`, Bun.file(big), { partSize: 8 * 2 ** 20, queueSize: 4 });
    for (let r = 0; r < BIG_ROUNDS; r++) {
      bigs.api.push(await withCpu(bigCpu.api, child.pid, () => timed(() => upload(child.url, project, auth, bigBody))));
      bigs.bare.push(await withCpu(bigCpu.bare, bare!.pid, () => timed(() => bareUpload(bigBody))));
      bigs.floor.push(await timed(() => bareUpload(bigBody, "/upload-dam")));
      bigs.direct.push(
        await timed(() => s3.write(`direct/big-${n++}`, Bun.file(big), { partSize: 8 * 2 ** 20, queueSize: 4 })),
      );
    }
    const [apiSet, bareSet, floorSet, writeSet, directSet] = [
      sets.api,
      sets.bare,
      sets.floor,
      sets.write,
      sets.direct,
    ].map(median);
    const [apiBig, bareBig, floorBig, directBig] = [bigs.api, bigs.bare, bigs.floor, bigs.direct].map(median);

    // Uncached transforms of the first image: a new key each time on both sides, in pairs (the
    // endpoint and the direct way back to back, the order alternating), after a warm-up pair.
    const src = pathnames[0]!;
    const srcKey = `apis/files/projects/${project}/originals/${src}`;
    const apiTransformOnce = async (key: string) => {
      const r = await fetch(`${child.url}/dam/p/${project}/transform/${src}/fit=400,300/type=jpg/key=${key}`, {
        headers: { authorization: auth },
      });
      if (!r.ok) throw new Error(`transform: ${r.status} ${await r.text()}`);
      await r.arrayBuffer();
    };
    const directTransformOnce = async (key: string) => {
      const input = await s3.file(srcKey).bytes();
      const output = await sharp(input).rotate().resize(400, 300, { fit: "inside" }).jpeg().toBuffer();
      await s3.write(`direct/t-${key}.jpg`, output);
    };
    await apiTransformOnce("warm");
    await directTransformOnce("warm");
    const {
      subject: apiTransform,
      ceiling: directTransform,
      ratios: transformPairs,
    } = await comparePairs(
      TRANSFORMS,
      (i) => apiTransformOnce(`b${i}`),
      (i) => directTransformOnce(`${i}`),
    );

    // Media GETs of one transformed file, through Apis (proxied) and straight from the bucket.
    const made = await fetch(`${child.url}/dam/p/${project}/transform/${src}/fit=400,300/type=jpg/key=media`, {
      headers: { authorization: auth },
    }).then((r) => r.json() as Promise<any>);
    const url: string = made.result.public_url;
    const mediaKey = `apis/files/projects/${project}/media/${url.split("/").pop()}`;
    let apiGet = 0;
    let directGet = 0;
    for (let r = 0; r < ROUNDS; r++) {
      apiGet += await timed(async () => {
        for (let i = 0; i < GETS; i++) await (await fetch(url)).arrayBuffer();
      });
      directGet += await timed(async () => {
        for (let i = 0; i < GETS; i++) await s3.file(mediaKey).bytes();
      });
    }
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const cpuText = (c: Cpu, rounds: number, wall: number[]) =>
      `${Math.round(c.server / rounds)} ms server, ${Math.round(c.client / rounds)} ms client, ${Math.round(c.store / rounds)} ms store in ${Math.round(mean(wall) * 1000)} ms`;
    const cpuNote = `CPU time per upload during the measured rounds (mean of the rounds; ${TICK_MS} ms ticks), image set: Apis ${cpuText(setCpu.api, SET_ROUNDS, sets.api)}, bare server ${cpuText(setCpu.bare, SET_ROUNDS, sets.bare)}; 64 MB: Apis ${cpuText(bigCpu.api, BIG_ROUNDS, bigs.api)}, bare server ${cpuText(bigCpu.bare, BIG_ROUNDS, bigs.bare)}.`;
    const mb = (b: number) => b / 2 ** 20;
    const setMb = mb(setBytes);
    const bigMb = 64;
    const rows: Row[] = [
      {
        metric: `S3: upload, image set (${sources.length} files, ${round(mb(setBytes), 1)} MB), one at a time`,
        value: round(setMb / apiSet, 1),
        unit: "MB/s",
        ceiling: round(setMb / bareSet, 1),
        ratio: round(bareSet / apiSet),
        target: "ratio ≥ 0.8",
      },
      {
        metric: "S3: upload, one 64 MB file",
        value: round(bigMb / apiBig, 1),
        unit: "MB/s",
        ceiling: round(bigMb / bareBig, 1),
        ratio: round(bareBig / apiBig),
        target: "ratio ≥ 0.8",
      },
      {
        metric:
          "S3: upload, image set, against the same bare server that also hashes, reads the header and commits a durable row (a DAM's least work; for information)",
        value: round(setMb / apiSet, 1),
        unit: "MB/s",
        ceiling: round(setMb / floorSet, 1),
        ratio: round(floorSet / apiSet),
      },
      {
        metric: "S3: upload, one 64 MB file, against the same (for information)",
        value: round(bigMb / apiBig, 1),
        unit: "MB/s",
        ceiling: round(bigMb / floorBig, 1),
        ratio: round(floorBig / apiBig),
      },
      {
        metric:
          "S3: upload, image set, against the bare server storing then sending with S3Client.write (for information)",
        value: round(setMb / apiSet, 1),
        unit: "MB/s",
        ceiling: round(setMb / writeSet, 1),
        ratio: round(writeSet / apiSet),
      },
      {
        metric: "S3: upload, image set, against S3Client.write of the files, no HTTP (for information)",
        value: round(setMb / apiSet, 1),
        unit: "MB/s",
        ceiling: round(setMb / directSet, 1),
        ratio: round(directSet / apiSet),
      },
      {
        metric:
          "S3: upload, one 64 MB file, against S3Client.write of the file in 8 MiB parts, no HTTP (for information)",
        value: round(bigMb / apiBig, 1),
        unit: "MB/s",
        ceiling: round(bigMb / directBig, 1),
        ratio: round(directBig / apiBig),
      },
      {
        metric: "S3: uncached transform (fit 400x300 jpg)",
        value: round((apiTransform / TRANSFORMS) * 1000, 1),
        unit: "ms each",
        ceiling: round((directTransform / TRANSFORMS) * 1000, 1),
        ratio: round(median(transformPairs)),
        target: "ratio ≥ 0.8",
      },
      {
        metric: "S3: media GET of a transformed file (one at a time)",
        value: round((ROUNDS * GETS) / apiGet, 0),
        unit: "req/s",
        ceiling: round((ROUNDS * GETS) / directGet, 0),
        ratio: round(directGet / apiGet),
        target: "ratio ≥ 0.8",
      },
    ];
    return {
      name: "s3",
      rows,
      notes: [
        `radosgw of a one-node Ceph (memstore OSD) on this machine (scripts/ceph-s3.sh); load average (1 min) ${round(loadBefore, 1)} at the start of this run, ${round(loadavg()[0]!, 1)} at its end. Data-folder rows of the same operations: the dam section.`,
        `${pinNote} Why: a deployment's object store runs on machines of its own, so its CPU time is not taken from the servers compared, nor theirs from it; unpinned, radosgw (about 9.5 ms of CPU per image) runs on the same cores as Apis (about 10 ms) and the bare server (2.5 ms). Both sides run under the same pinning, in the same alternating rounds, the client on the servers' core for both.`,
        cpuNote,
        `Uploads: multipart POST /api/p/<project>/assets/upload, one at a time; ${SET_WARMUP} image sets and one 64 MB file to every side first, then ${SET_ROUNDS} alternating rounds of the image set (every set with file names of its own) and ${BIG_ROUNDS} of the 64 MB file (pseudo-random bytes); each side's figure is its median round. Ceiling: bench/s3-bare.ts, a bare Bun.serve (no framework, database, hashing, sniffing or temp file) receiving the very same multipart body over HTTP and streaming its file part to the bucket while it arrives, in one PUT of the exact size made as Apis's store makes it (a presigned URL of an S3Client with Apis's settings, fetch fed by the request body), answering once the store has answered. For information: the same bare server doing a DAM's least work besides (\`/upload-dam\`, bench/dam-floor.ts: the file's SHA-256 and head taken as its bytes pass to the PUT, the image header read with sharp, one row in a WAL SQLite database whose log is synced before the answer; no EXIF, names, folders, rights, change log or sync item: it runs at ${round(bareSet / floorSet)} of its own speed with the image set and ${round(bareBig / floorBig)} with the 64 MB file), the same bare server reading the whole body first and then sending the file with S3Client.write, and S3Client.write of the files straight from this process (no HTTP exchange at all; the 64 MB file in 8 MiB parts, 4 at a time, as S3Client does for a file that large).`,
        `Transforms and media GETs: ${TRANSFORMS} transforms per side after one warm-up each, measured in pairs (the endpoint and the direct way back to back, the order alternating); the transform's ratio is the median over the pairs of direct time / endpoint time (a spike of other work hits one pair, not the total; ratio of the totals ${round(directTransform / apiTransform)}), its value and ceiling the mean times; ${ROUNDS} alternating rounds of ${GETS} GETs; ceiling: the same operation done directly with Bun's S3Client in the same run (transform: read the original from the bucket, the same sharp resize, write the output; media: S3Client reading the same object).`,
        "Apis's upload on S3 streams the file to the bucket while it arrives (one streamed PUT, as the Content-Length tells the file's size; files over 256 MiB or of unknown size go in 8 MiB parts), besides receiving it into tmp/ (hashed, sniffed, EXIF read from the first 512 KiB); the PUT starts with the body (the object is named from the type sniffed in the file's first 64 KiB, usually the first chunk), and the row is committed after the store's answer. Its temp file and SHA-256 are made by a worker thread at a low CPU priority (nice 10; src/http/upload-sink.ts), so that on the core Apis shares with the client, the bytes' way to the store (the main thread, fetch's HTTP thread) goes first and the hashing fills the time the store takes after the last byte; that took the image set from 0.57 to 0.63 to 0.69 and the 64 MB file from 0.75 to 0.77 to 0.9 (2026-12-05, the run before the change and six after, with nice 19 and 10, which measured alike; a probe of 10 alternating sets gave 89 against 75 ms a set). The transform's source is read from the bucket once and kept in tmp/dam-sources/, a cache of at most --dam-source-cache (512M by default, least recently used out; the direct side reads the source every time). Where an image's time goes (2026-12-05, this pinning, 50 uploads, medians of timestamps in the code, ms from the request reaching the project route): Apis's upload handler starts at 0.5 (routing, token, membership), its first body chunk is read at 1.1, the file's last byte is handed to the PUT's body at 3.3 to 3.8 and taken by fetch at 4.8, the store answers at 12.5 to 12.8, the unit begins at 13.1, its rows are written at 13.8 and its commit, with the log synced, ends at 14.9 (the sync 0.85 of it); the bare server's last byte is taken by fetch at 2.2 to 2.9 and the store answers at 8.5 to 9.8. So the store takes the same 7.6 to 8 ms after the last byte on both sides; Apis hands that byte over about 2.5 ms later (it reads the body through the framework, keeps the head, copies each chunk for the hashing worker while the PUT holds it, and sniffs the first bytes to name the object) and then needs 2 ms for its durable row. Per thread (same pinning, before the priority change): main thread 4.4 ms user and 1.2 system per image, hashing and temp-file thread 1.6 and 0.4, JIT 1.0, libvips (the header) 0.6, the HTTP client's thread 0.4. Since the least a DAM does besides (the floor row) already runs at about 0.83 of the bare server, 0.8 asks Apis for about 0.96 of that floor, which does no multipart parsing, EXIF, names, folders, rights, change log or sync item. A media GET through Apis is answered from memory while the store's stat (asked at most once a second) shows the same ETag (objects up to 1 MiB), against a read of the store each time directly.",
      ],
    };
  } finally {
    await apis?.child.stop();
    await bare?.stop();
    await Bun.spawn(["sh", SCRIPT, "stop", dir]).exited;
    removeDir(dirname(dir));
    unpin();
    removeDir(data);
    removeDir(work);
  }
}
