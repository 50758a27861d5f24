import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { sweepTemp } from "../../src/platform/storage/temp-sweep";
import { TestServer, apisCli, until } from "../helpers/server";
import { tempFolders } from "../helpers/temp";

const DAY = 86400;

/** The pid of a process that has ended (spawned and waited for). */
async function endedPid(): Promise<number> {
  const p = Bun.spawn([process.execPath, "-e", "0"]);
  await p.exited;
  return p.pid;
}

/** A data folder whose tmp/ holds what interrupted work leaves, and what must stay. */
async function leftovers(): Promise<{ data: string; tmp: string; gone: string[]; kept: string[] }> {
  const data = dataFolder();
  const tmp = join(data, "tmp");
  mkdirSync(join(tmp, "dam-out", "p1"), { recursive: true });
  mkdirSync(join(tmp, "dam-sources", "p1"), { recursive: true });
  const dead = await endedPid();
  const old = (name: string) => {
    writeFileSync(join(tmp, name), "x".repeat(1000));
    const t = Date.now() / 1000 - 2 * DAY;
    utimesSync(join(tmp, name), t, t);
  };
  const fresh = (name: string) => writeFileSync(join(tmp, name), "x");
  old("upload-old0000000000.part");
  fresh("upload-new0000000000.part");
  old("excel-0123abcd.xlsx");
  old("excel-download-0123abcd.xlsx");
  old("excel-report-0123abcd.xlsx");
  old("dam-out/p1/abcdefgh~1@web.jpg");
  fresh("dam-out/p1/abcdefgh~1@thumb.jpg");
  // A crashed backup's snapshot and pinned files: gone once their process has ended and they are
  // an hour old (younger, they may be a backup's of another pid namespace).
  old(`snapshot-${dead}-1700000000000.db`);
  mkdirSync(join(tmp, `pinned-${dead}-1700000000000`, "files"), { recursive: true });
  old(`pinned-${dead}-1700000000000/files/a.jpg`);
  const t = Date.now() / 1000 - 2 * DAY;
  utimesSync(join(tmp, `pinned-${dead}-1700000000000`), t, t);
  fresh(`snapshot-${dead}-1700000000001.db`);
  // A backup still being made (this process lives), the DAM's source cache, a restore's folder and
  // a name the sweep does not know: all stay, however old.
  old(`snapshot-${process.pid}-1700000000000.db`);
  old("dam-sources/p1/abcdefgh~1.jpg");
  mkdirSync(join(tmp, "restore-2026-12-01T00-00-00"));
  old("other.txt");
  return {
    data,
    tmp,
    gone: [
      "upload-old0000000000.part",
      "excel-0123abcd.xlsx",
      "excel-download-0123abcd.xlsx",
      "excel-report-0123abcd.xlsx",
      "dam-out/p1/abcdefgh~1@web.jpg",
      `snapshot-${dead}-1700000000000.db`,
      `pinned-${dead}-1700000000000`,
    ],
    kept: [
      "upload-new0000000000.part",
      `snapshot-${dead}-1700000000001.db`,
      "dam-out/p1/abcdefgh~1@thumb.jpg",
      `snapshot-${process.pid}-1700000000000.db`,
      "dam-sources/p1/abcdefgh~1.jpg",
      "restore-2026-12-01T00-00-00",
      "other.txt",
    ],
  };
}

let srv: TestServer | undefined;
afterAll(async () => {
  await srv?.stop();
});
/** Data folders, removed after the last test (after the server above has stopped). */
const dataFolder = tempFolders("apis-temp-sweep-");

describe("the temp folder's sweep", () => {
  test("a dry run lists what interrupted work left and removes nothing", async () => {
    const t = await leftovers();
    const before = readdirSync(t.tmp).sort();
    const s = sweepTemp(t.tmp, { dryRun: true });
    expect(s.removed.sort()).toEqual([...t.gone].sort());
    expect(s.bytes).toBe(7 * 1000);
    expect(readdirSync(t.tmp).sort()).toEqual(before);
  });

  test("apis jobs run temp removes stale uploads, Excel files, renders and ended backups' snapshots, and keeps the rest", async () => {
    const t = await leftovers();
    const r = apisCli(["jobs", "run", "temp", "--data", t.data]);
    expect(r.code).toBe(0);
    expect(r.out).toContain(`temp: ok: removed ${t.gone.length} stale temp entries`);
    for (const f of t.gone) expect(existsSync(join(t.tmp, f))).toBe(false);
    for (const f of t.kept) expect(existsSync(join(t.tmp, f))).toBe(true);
  });

  test("a server started over a data folder a crash left sweeps its temp folder without waiting for the schedule", async () => {
    const t = await leftovers();
    srv = await TestServer.start({}, t.data);
    expect((await srv.call("/api/ping")).status).toBe(200);
    await until(() => t.gone.every((f) => !existsSync(join(t.tmp, f))), undefined, "the stale temp entries removed");
    for (const f of t.kept) expect(existsSync(join(t.tmp, f))).toBe(true);
  });
});
