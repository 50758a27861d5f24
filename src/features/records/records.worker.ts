import colCache from "exceljs/lib/utils/col-cache.js";
import { parentPort, workerData } from "node:worker_threads";
import { readWorkbook } from "./records.xlsx-reader";

/**
 * The worker thread of an Excel import (started by import.service.ts, `workerEvents`): reads the
 * uploaded workbook with exceljs' streaming reader and posts its events (records.xlsx-reader.ts) to the
 * import, which applies the rows meanwhile. Flow control: at most `window` batches of rows are
 * posted ahead of the import; each `more` message from it allows one more. A read error is posted
 * as `{t: "error", message}`; the import ends the thread when it has what it needs (or gives up).
 * The compiled executable carries this file as an extra entry point (scripts/build.ts).
 */

/**
 * exceljs decodes the address of every cell it reads ("B7" → column 2, row 7) by building
 * strings a character at a time: about a fifth of its time reading a sheet of 40 columns. In this
 * thread only (it reads; nothing else uses exceljs here) plain addresses are decoded directly
 * into the same object; anything else (`$B$7`) goes to exceljs' own code.
 */
const decodeAddress = colCache.decodeAddress;
colCache.decodeAddress = function (value: string) {
  let col = 0;
  let row = 0;
  let i = 0;
  const n = value.length;
  for (; i < n; i++) {
    const c = value.charCodeAt(i);
    if (c < 65 || c > 90) break;
    col = col * 26 + c - 64;
  }
  const letters = i;
  for (; i < n; i++) {
    const c = value.charCodeAt(i);
    if (c < 48 || c > 57) break;
    row = row * 10 + c - 48;
  }
  if (i !== n || letters === 0 || letters === n || col > 16384) return decodeAddress.call(this, value);
  return { address: value, col, row, $col$row: `$${value.slice(0, letters)}$${value.slice(letters)}` };
};

const port = parentPort!;
const { path, window } = workerData as { path: string; window: number };
let credit = window;
let wake: (() => void) | undefined;
port.on("message", (m: { t?: string }) => {
  if (m?.t !== "more") return;
  credit++;
  wake?.();
  wake = undefined;
});

try {
  for await (const ev of readWorkbook(path)) {
    if (ev.t === "rows") {
      while (credit <= 0) await new Promise<void>((ok) => (wake = ok));
      credit--;
    }
    port.postMessage(ev);
  }
} catch (e) {
  port.postMessage({ t: "error", message: String((e as Error)?.message ?? e) });
}
