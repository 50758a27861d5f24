import { jobCounts } from "./jobs/queue.service";
import { statSync } from "node:fs";
import type { Counter, Histogram, Registry } from "prom-client";
import { VERSION } from "../version";
import type { Ctx } from "./context";

/** Sizes of a file in bytes, 0 when it does not exist. */
function sizeOf(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

/**
 * The Prometheus metrics of one running instance (prom-client, one registry per instance so that
 * tests with several servers in one process do not mix). Requests are counted by route template
 * (`/api/p/:project/assets/get`), never by raw path, so the number of series stays bounded.
 * Gauges read their values when scraped: sync sockets, jobs by state, transforms running, the
 * SQLite database and WAL file sizes. docs/operations.md lists every metric.
 */
export class Metrics {
  readonly registry: Registry;
  readonly requests: Counter<"method" | "route" | "status">;
  readonly durations: Histogram<"method" | "route">;
  /** Filled in by the parts that know them (the server sets `syncSockets`, dam sets `transforms`). */
  sources: { syncSockets?: () => number; transforms?: () => number } = {};

  constructor(ctx: Ctx) {
    // Loaded here, when metrics are on: without --metrics nobody reads them, and prom-client costs
    // start-up time and memory.
    const { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } = require("prom-client") as typeof import("prom-client");
    this.registry = new Registry();
    const registers = [this.registry];
    this.requests = new Counter({ name: "apis_http_requests_total", help: "HTTP requests answered, by method, route template and status", labelNames: ["method", "route", "status"], registers });
    this.durations = new Histogram({
      name: "apis_http_request_duration_seconds",
      help: "Time from receiving a request to its answer's headers, by method and route template",
      labelNames: ["method", "route"],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    const sources = () => this.sources;
    new Gauge({ name: "apis_info", help: "The running version (value is always 1)", labelNames: ["version"], registers }).set({ version: VERSION }, 1);
    new Gauge({
      name: "apis_sync_sockets",
      help: "Connected /sync/io clients",
      registers,
      collect() {
        this.set(sources().syncSockets?.() ?? 0);
      },
    });
    new Gauge({
      name: "apis_dam_transforms_running",
      help: "Image transforms rendering now (at most --transform-concurrency; more are refused with 503)",
      registers,
      collect() {
        this.set(sources().transforms?.() ?? 0);
      },
    });
    new Gauge({ name: "apis_dam_transforms_limit", help: "--transform-concurrency", registers }).set(ctx.config.transformConcurrency);
    new Gauge({
      name: "apis_jobs",
      help: "Background jobs in the database, by state",
      labelNames: ["state"],
      registers,
      collect() {
        for (const [state, n] of jobCounts(ctx.db)) this.set({ state }, n);
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
      collectDefaultMetrics({ register: this.registry, prefix: "apis_" });
    } catch {
      // A runtime without some of Node's process probes: the metrics above still work.
    }
  }

  /** Records one answered request. */
  observe(method: string, route: string, status: number, seconds: number) {
    this.requests.inc({ method, route, status: String(status) });
    this.durations.observe({ method, route }, seconds);
  }
}

/** What the request path and the gauges' owners see: counting, or nothing when metrics are off. */
export type RequestMetrics = Pick<Metrics, "sources" | "observe">;

/** Without `--metrics` or `--metrics-token`: nothing is served, so nothing is counted. */
class Uncounted implements RequestMetrics {
  sources: Metrics["sources"] = {};
  observe(): void {}
}

const instances = new WeakMap<object, RequestMetrics>();

/** Whether this instance serves `/metrics` (`--metrics`, or `--metrics-token`). */
export function metricsOn(ctx: Pick<Ctx, "config">): boolean {
  return ctx.config.metrics || ctx.config.metricsToken !== "";
}

/** The metrics of one running instance (pass `ctx`): created on first use; counting only when they are served. */
export function metricsOf(ctx: Ctx): RequestMetrics {
  let m = instances.get(ctx);
  if (!m) instances.set(ctx, (m = metricsOn(ctx) ? new Metrics(ctx) : new Uncounted()));
  return m;
}

/** The Prometheus registry of an instance that serves `/metrics`. */
export function registryOf(ctx: Ctx): Registry {
  const m = metricsOf(ctx);
  if (!(m instanceof Metrics)) throw new Error("metrics are off (--metrics or --metrics-token turns them on)");
  return m.registry;
}
