import { accessSync, constants, mkdirSync } from "node:fs";
import type { Config } from "../config";
import { sqliteInfo } from "../db/connection";
import { VERSION } from "../version";

/** `apis doctor`: versions, data folder, one small in-memory resize. Exit code 1 if anything fails. */
export async function doctor(config: Config): Promise<number> {
  let failed = 0;
  const check = async (name: string, fn: () => Promise<string> | string) => {
    try {
      console.log(`ok    ${name}: ${await fn()}`);
    } catch (err) {
      failed++;
      console.log(`FAIL  ${name}: ${(err as Error)?.message ?? err}`);
    }
  };
  await check("apis", () => VERSION);
  await check("bun", () => Bun.version);
  await check("sqlite", () => {
    const { version, fts5 } = sqliteInfo();
    return `${version}${fts5 ? " (FTS5)" : ""}`;
  });
  let sharpMod: any;
  await check("sharp", async () => {
    sharpMod = (await import("sharp")).default as any;
    return `sharp ${sharpMod!.versions.sharp}, libvips ${sharpMod!.versions.vips}`;
  });
  await check("resize", async () => {
    if (!sharpMod) throw new Error("sharp did not load");
    const png = await sharpMod({ create: { width: 64, height: 48, channels: 4, background: "#336699" } }).png().toBuffer();
    const out = await sharpMod(png).resize(16).jpeg().toBuffer({ resolveWithObject: true });
    if (out.info.width !== 16 || out.info.height !== 12) throw new Error(`unexpected size ${out.info.width}x${out.info.height}`);
    return "64x48 png -> 16x12 jpeg";
  });
  await check("data folder", () => {
    mkdirSync(config.dataDir, { recursive: true });
    accessSync(config.dataDir, constants.R_OK | constants.W_OK);
    return `${config.dataDir} (writable)`;
  });
  console.log(failed ? `${failed} check(s) failed` : "all checks passed");
  return failed ? 1 : 0;
}
