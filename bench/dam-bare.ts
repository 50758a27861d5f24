/**
 * The ceilings of the DAM benchmark: a bare Bun.serve, no framework, no database, no checks.
 * GET <any path> answers the file named for that path with `new Response(Bun.file(path))` and the
 * headers given for it (its Content-Type alone, or every header Apis sends with that file); POST
 * streams the request body to a file in `<upload dir>` and answers 200.
 * POST /upload-durable does the same and then syncs the file and its folder entry before
 * answering: what a durable store must wait for at least, the uploads' ceiling (issue 41). Files
 * are removed just after the answer (not before it: Apis keeps its files and removes none).
 * POST /upload-dam does what a DAM must do at least beyond that, for information (bench/dam-floor.ts:
 * hash, image header, a durable row), its row committed after the file and its folder entry are synced.
 * usage: bun bench/dam-bare.ts <port> <files.json> <upload dir>   (files: {path: {file, headers}})
 */
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { syncPathLater } from "../src/platform/storage/file-store";
import { FloorFile, floorDatabase } from "./dam-floor";

const [port, filesJson, uploadDir] = process.argv.slice(2);
const files: Record<string, { file: string; headers: Record<string, string> }> = JSON.parse(
  readFileSync(filesJson!, "utf8"),
);
let n = 0;

const floor = floorDatabase(uploadDir!);

Bun.serve({
  port: Number(port),
  hostname: "127.0.0.1",
  maxRequestBodySize: 2 ** 31,
  async fetch(req) {
    const url = req.url;
    const path = url.slice(url.indexOf("/", 8));
    if (req.method === "POST") {
      const target = join(uploadDir!, `upload-${n++}`);
      const writer = Bun.file(target).writer();
      if (path === "/upload-dam") {
        const file = new FloorFile();
        for await (const chunk of req.body!) {
          file.add(chunk);
          void writer.write(chunk);
        }
        const facts = file.header(true);
        await writer.end();
        const [got] = await Promise.all([facts, syncPathLater(target), syncPathLater(uploadDir!)]);
        await floor.record(target, file, got);
        setImmediate(() => rmSync(target, { force: true }));
        return new Response("ok");
      }
      for await (const chunk of req.body!) void writer.write(chunk);
      await writer.end();
      // The file and its folder entry synced at once, as Apis does.
      if (path === "/upload-durable") await Promise.all([syncPathLater(target), syncPathLater(uploadDir!)]);
      setImmediate(() => rmSync(target, { force: true }));
      return new Response("ok");
    }
    if (path === "/ping") return new Response("pong");
    const f = files[path];
    return f ? new Response(Bun.file(f.file), { headers: f.headers }) : new Response("not found", { status: 404 });
  },
});
