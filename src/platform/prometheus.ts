import { collectDefaultMetrics, Gauge, Registry } from "prom-client";
import { statSync } from "node:fs";
import { VERSION } from "../version";
import type { Ctx } from "./context";
import { jobCounts } from "./jobs/queue.service";
import { Metrics, metricsOf } from "./metrics";

/** Sizes of a file in bytes, 0 when it does not exist. */
function sizeOf(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

/**
 * The Prometheus registry of an instance that serves `/metrics` (prom-client, one registry per
 * instance so that tests with several servers in one process do not mix): the request series its
 * metrics count (src/platform/metrics.ts), gauges read when scraped, and Node's process metrics.
 * Made by the first scrape: prom-client is loaded only then (it cost start-up time and memory).
 */
export function registryOf(ctx: Ctx): Registry {
  const m = metricsOf(ctx);
  if (!(m instanceof Metrics)) throw new Error("metrics are off (--metrics or --metrics-token turns them on)");
  return (m.registry ??= registryFor(ctx, m));
}

function registryFor(ctx: Ctx, m: Metrics): Registry {
  const registry = new Registry();
  const registers = [registry];
  for (const series of [m.requests, m.durations]) registry.registerMetric(series as never);
  const sources = () => m.sources;
  new Gauge({
    name: "apis_info",
    help: "The running version (value is always 1)",
    labelNames: ["version"],
    registers,
  }).set({ version: VERSION }, 1);
  /** A gauge read from one of the counts the features hand the metrics (`Metrics.sources`), 0 without it. */
  const counted = (name: string, help: string, source: keyof Metrics["sources"]) =>
    new Gauge({
      name,
      help,
      registers,
      collect() {
        this.set(sources()[source]?.() ?? 0);
      },
    });
  counted("apis_sync_sockets", "Connected /sync/io clients", "syncSockets");
  counted(
    "apis_dam_transforms_running",
    "Image transforms rendering now (at most --transform-concurrency; more are refused with 503)",
    "transforms",
  );
  new Gauge({ name: "apis_dam_transforms_limit", help: "--transform-concurrency", registers }).set(
    ctx.config.transformConcurrency,
  );
  counted(
    "apis_dam_source_copies_bytes",
    "Disk taken by local copies of S3 originals that /dam reads (at most --dam-source-cache while none is being read)",
    "sourceCopies",
  );
  new Gauge({ name: "apis_dam_source_copies_limit", help: "--dam-source-cache", registers }).set(
    ctx.config.damSourceCache,
  );
  new Gauge({
    name: "apis_jobs",
    help: "Background jobs in the database, by state",
    labelNames: ["state"],
    registers,
    async collect() {
      for (const [state, n] of await jobCounts(ctx.db)) this.set({ state }, n);
    },
  });
  new Gauge({
    name: "apis_sqlite_file_bytes",
    help: "Size of the SQLite database file",
    registers,
    collect() {
      this.set(sizeOf(ctx.storage.database));
    },
  });
  new Gauge({
    name: "apis_sqlite_wal_bytes",
    help: "Size of the SQLite write-ahead log (shrinks at each checkpoint)",
    registers,
    collect() {
      this.set(sizeOf(`${ctx.storage.database}-wal`));
    },
  });
  try {
    collectDefaultMetrics({ register: registry, prefix: "apis_" });
  } catch {
    // A runtime without some of Node's process probes: the metrics above still work.
  }
  return registry;
}
