import { afterAll } from "bun:test";
import { stopS3Server } from "./s3";
import { removeMadeFolders } from "./temp";

// Preloaded by bunfig.toml for every `bun test` run: the S3 server of the run (test/helpers/s3.ts),
// started by the first test that needs it, is stopped once every test file has run. (Should the run
// be killed, the server's own watcher stops it: scripts/ceph-s3.sh, CEPH_S3_OWNER.) The data folders of
// test servers left running or kept for a restart are removed then too.
afterAll(stopS3Server);
afterAll(removeMadeFolders);
