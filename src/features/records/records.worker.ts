import { parentPort, workerData } from "node:worker_threads";
import { readWorkbook } from "./records.xlsx-reader";

/**
 * The worker thread of an Excel import (started by import.service.ts, `workerEvents`): reads the
 * uploaded workbook (records.xlsx-reader.ts: exceljs for the zip's parts, the sheets' XML read
 * directly) and posts its events to the import, which applies the rows meanwhile. Flow control:
 * at most `window` batches of rows are posted ahead of the import; each `more` message from it
 * allows one more. A read error is posted as `{t: "error", message}`; the import ends the thread
 * when it has what it needs (or gives up). The compiled executable carries this file as an extra
 * entry point (scripts/build.ts).
 */

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
