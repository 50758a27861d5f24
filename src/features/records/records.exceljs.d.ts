/** exceljs' cache of cell addresses (untyped), patched by the Excel import's reader thread (records.worker.ts). */
declare module "exceljs/lib/utils/col-cache.js" {
  type Address = { address: string; col: number; row: number; $col$row: string };
  const colCache: { decodeAddress(value: string): Address };
  export default colCache;
}

/** unzipper (exceljs' zip reader), driven by the Excel import's own zip loop (records.xlsx-reader.ts). */
declare module "unzipper" {
  import type { Duplex } from "node:stream";
  const unzipper: { Parse(options: { forceStream: true }): Duplex };
  export default unzipper;
}
