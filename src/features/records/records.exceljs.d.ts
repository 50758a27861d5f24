/** unzipper (exceljs' zip reader), driven by the Excel import's own zip loop (records.xlsx-reader.ts). */
declare module "unzipper" {
  import type { Duplex } from "node:stream";
  const unzipper: { Parse(options: { forceStream: true }): Duplex };
  export default unzipper;
}
