import { createHash } from "../../core/crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { sharp } from "../../platform/images/sharp";
import type { Actor } from "../../core/actor";
import type { Answer } from "../../core/answer";
import { invalidParameter, missing, unprocessable } from "../../core/errors";
import type { Ctx } from "../../platform/context";
import { mustRecord, recordsRead } from "./records.service";
import { storedValue } from "./values.service";

/**
 * `records/fields/preview`: a high-resolution PNG of a barcode field's value (stored, or `value`),
 * written under the project's files as `preview/<record>/<field>.<hash>.png`; the answer names
 * that path for the DAM transforms. EAN-13, UPC-A, EAN-8 and ITF-14 (GTIN-14) are drawn; any other
 * value is a 422 (no preview possible).
 */

const L = [
  "0001101",
  "0011001",
  "0010011",
  "0111101",
  "0100011",
  "0110001",
  "0101111",
  "0111011",
  "0110111",
  "0001011",
];
const G = L.map((p) =>
  [...p]
    .reverse()
    .map((b) => (b === "0" ? "1" : "0"))
    .join(""),
);
const R = L.map((p) => [...p].map((b) => (b === "0" ? "1" : "0")).join(""));
const PARITY = ["LLLLLL", "LLGLGG", "LLGGLG", "LLGGGL", "LGLLGG", "LGGLLG", "LGGGLL", "LGLGLG", "LGLGGL", "LGGLGL"];

function checkDigitOk(code: string): boolean {
  const d = [...code].map(Number);
  const check = d.pop()!;
  let sum = 0;
  d.reverse().forEach((x, i) => (sum += x * (i % 2 === 0 ? 3 : 1)));
  return (10 - (sum % 10)) % 10 === check;
}

/** Modules (1 = bar) of a code, or undefined when it cannot be drawn. */
function barcodeModules(value: string): string | undefined {
  if (!/^\d+$/.test(value) || !checkDigitOk(value)) return undefined;
  if (value.length === 12) value = `0${value}`;
  if (value.length === 13) {
    const p = PARITY[Number(value[0])]!;
    let m = "101";
    for (let i = 1; i <= 6; i++) m += (p[i - 1] === "L" ? L : G)[Number(value[i])];
    m += "01010";
    for (let i = 7; i <= 12; i++) m += R[Number(value[i])];
    return m + "101";
  }
  if (value.length === 8) {
    let m = "101";
    for (let i = 0; i < 4; i++) m += L[Number(value[i])];
    m += "01010";
    for (let i = 4; i < 8; i++) m += R[Number(value[i])];
    return m + "101";
  }
  if (value.length === 14) {
    // Interleaved 2 of 5: pairs of digits, the first drawn in bars, the second in spaces; wide = 3 modules.
    const W = ["nnwwn", "wnnnw", "nwnnw", "wwnnn", "nnwnw", "wnwnn", "nwwnn", "nnnww", "wnnwn", "nwnwn"];
    let m = "1010";
    for (let i = 0; i < 14; i += 2) {
      const a = W[Number(value[i])]!;
      const b = W[Number(value[i + 1])]!;
      for (let k = 0; k < 5; k++) m += (a[k] === "w" ? "111" : "1") + (b[k] === "w" ? "000" : "0");
    }
    return m + "11101";
  }
  return undefined;
}

async function png(modules: string, text: string): Promise<Buffer> {
  const unit = 8;
  const quiet = 12 * unit;
  const width = modules.length * unit + 2 * quiet;
  const height = 70 * unit;
  let bars = "";
  for (let i = 0; i < modules.length; ) {
    if (modules[i] !== "1") {
      i++;
      continue;
    }
    let j = i;
    while (modules[j] === "1") j++;
    bars += `<rect x="${quiet + i * unit}" y="${4 * unit}" width="${(j - i) * unit}" height="${54 * unit}"/>`;
    i = j;
  }
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}"><rect width="100%" height="100%" fill="#fff"/><g fill="#000">${bars}</g><text x="${width / 2}" y="${66 * unit}" font-family="monospace" font-size="${8 * unit}" text-anchor="middle">${text}</text></svg>`;
  return sharp(Buffer.from(svg)).png().toBuffer();
}

export async function previewField(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { record: string; field?: unknown; language?: unknown; value?: unknown },
): Promise<Answer> {
  const { value, record, field } = await recordsRead(ctx, actor, projectGid, async (tx, view) => {
    const rec = await mustRecord(tx, projectGid, input.record);
    if (typeof input.field !== "string" || !input.field) throw missing("field");
    const f =
      (await view.def(rec.definition)).byGid.get(input.field) ??
      (await view.def(rec.definition)).byName.get(input.field);
    if (!f) throw unprocessable("Field doesn't exist", { field: input.field });
    if (f.type !== "barcode")
      throw unprocessable("No preview possible", {
        reason: `previews exist for barcode fields; ${f.name} is ${f.type}`,
      });
    if (input.value !== undefined && input.value !== null) {
      if (typeof input.value !== "string") throw invalidParameter("value", { expected: "a string" });
      return { value: input.value, record: rec.gid, field: f.gid };
    }
    const lang = f.localized ? view.languagesOf({ language: input.language ?? null })[0] : view.languages[0]!;
    if (f.localized && (input.language === undefined || input.language === null)) throw missing("language");
    return { value: String(storedValue(rec.vals, f, lang!) ?? ""), record: rec.gid, field: f.gid };
  });
  const modules = barcodeModules(value);
  if (!modules)
    throw unprocessable("No preview possible", {
      reason: "the value is not an EAN-13, UPC-A, EAN-8 or GTIN-14 code with a valid check digit",
      value: value.slice(0, 100),
    });
  const started = performance.now();
  const image = await png(modules, value);
  const hash = createHash("sha256").update(value).digest("hex").slice(0, 8);
  const rel = `preview/${record}/${field}.${hash}.png`;
  const file = join(ctx.storage.projectDir(projectGid), rel);
  mkdirSync(join(file, ".."), { recursive: true });
  writeFileSync(file, image);
  return {
    result: { preview_pathname: `/${rel}`, timing_ms: { generate: Math.round(performance.now() - started) } },
    data: {},
  };
}
