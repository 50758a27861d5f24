import type { Registry } from "prom-client";
import type { Ctx } from "./context";

/**
 * The Prometheus metrics of one running instance (prom-client, one registry per instance so that
 * tests with several servers in one process do not mix). Requests are counted by route template
 * (`/api/p/:project/assets/get`), never by raw path, so the number of series stays bounded.
 * Gauges read their values when scraped: sync sockets, jobs by state, transforms running, the
 * SQLite database and WAL file sizes (src/platform/prometheus.ts, loaded by the first scrape).
 * docs/operations.md lists every metric.
 */
/** One exposition line of a metric, as prom-client's registry writes it. */
type Sample = {
  labels: Record<string, string | number>;
  sharedLabels?: Record<string, string>;
  value: number;
  metricName?: string;
};

/**
 * A counter or histogram of HTTP requests kept in plain arrays, written by prom-client's registry
 * like its own metrics. Counting a request in prom-client's Counter and Histogram hashed and
 * validated the labels twice on every request, as much work as answering a small file; here a
 * request costs one map lookup per metric. The registry reads `getForPromString` (text format) or
 * `get` (JSON).
 */
export class RequestSeries<L extends string> {
  readonly aggregator = "sum";
  private readonly series = new Map<
    string,
    { labels: Record<L, string>; count: number; sum: number; buckets: number[] }
  >();
  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: "counter" | "histogram",
    private readonly bounds: readonly number[] = [],
  ) {}

  /** Adds one event (a histogram also records `value` in its bucket and sum). */
  add(key: string, labels: () => Record<L, string>, value = 0): void {
    let s = this.series.get(key);
    if (!s)
      this.series.set(
        key,
        (s = { labels: labels(), count: 0, sum: 0, buckets: new Array(this.bounds.length).fill(0) }),
      );
    s.count++;
    if (this.type === "counter") return;
    s.sum += value;
    const b = this.bounds;
    for (let i = 0; i < b.length; i++) {
      if (value <= b[i]!) {
        s.buckets[i]!++;
        break;
      }
    }
  }

  reset(): void {
    this.series.clear();
  }

  getForPromString() {
    const values: Sample[] = [];
    for (const s of this.series.values()) {
      if (this.type === "counter") {
        values.push({ labels: s.labels, value: s.count });
        continue;
      }
      let acc = 0;
      for (let i = 0; i < this.bounds.length; i++) {
        acc += s.buckets[i]!;
        values.push({
          labels: { le: this.bounds[i]! },
          sharedLabels: s.labels,
          value: acc,
          metricName: `${this.name}_bucket`,
        });
      }
      values.push({
        labels: { le: "+Inf" },
        sharedLabels: s.labels,
        value: s.count,
        metricName: `${this.name}_bucket`,
      });
      values.push({ labels: {}, sharedLabels: s.labels, value: s.sum, metricName: `${this.name}_sum` });
      values.push({ labels: {}, sharedLabels: s.labels, value: s.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  get() {
    const data = this.getForPromString();
    return {
      ...data,
      values: data.values.map(({ sharedLabels, ...v }) => ({ ...v, labels: { ...v.labels, ...sharedLabels } })),
    };
  }
}

export class Metrics {
  /** Requests are counted (see `Uncounted`). */
  readonly counting = true;
  /** The Prometheus registry, made by the first scrape (src/platform/prometheus.ts `registryOf`). */
  registry: Registry | undefined;
  readonly requests: RequestSeries<"method" | "route" | "status">;
  readonly durations: RequestSeries<"method" | "route">;
  /**
   * Filled in by the parts that know them (the server sets `syncSockets`, dam sets `transforms`
   * and `sourceCopies`).
   */
  sources: { syncSockets?: () => number; transforms?: () => number; sourceCopies?: () => number } = {};

  constructor() {
    // Requests are counted here from the start; prom-client (the registry, the gauges and Node's
    // process metrics) is loaded by the first scrape: it costs start-up time and memory.
    this.requests = new RequestSeries(
      "apis_http_requests_total",
      "HTTP requests answered, by method, route template and status",
      "counter",
    );
    this.durations = new RequestSeries(
      "apis_http_request_duration_seconds",
      "Time from receiving a request to its answer's headers, by method and route template",
      "histogram",
      [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    );
  }

  /** Records one answered request. */
  observe(method: string, route: string, status: number, seconds: number) {
    const key = `${method} ${route}`;
    this.requests.add(`${key} ${status}`, () => ({ method, route, status: String(status) }));
    this.durations.add(key, () => ({ method, route }), seconds);
  }
}

/** What the request path and the gauges' owners see: counting, or nothing when metrics are off. */
type RequestMetrics = Pick<Metrics, "sources" | "observe"> & { readonly counting: boolean };

/** Without `--metrics` or `--metrics-token`: nothing is served, so nothing is counted. */
class Uncounted implements RequestMetrics {
  readonly counting = false;
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
  if (!m) instances.set(ctx, (m = metricsOn(ctx) ? new Metrics() : new Uncounted()));
  return m;
}
