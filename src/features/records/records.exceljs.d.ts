/** exceljs' cache of cell addresses (untyped), patched by the Excel import's reader thread (records.worker.ts). */
declare module "exceljs/lib/utils/col-cache.js" {
  type Address = { address: string; col: number; row: number; $col$row: string };
  const colCache: { decodeAddress(value: string): Address };
  export default colCache;
}
