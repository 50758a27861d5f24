// The part of autocannon's programmatic API the benchmarks use (the package ships no types).
declare module "autocannon" {
  type Histogram = { average: number; mean: number; total: number; p50: number; p90: number; p99: number; max: number };
  export type Result = {
    requests: Histogram;
    latency: Histogram;
    throughput: Histogram;
    errors: number;
    timeouts: number;
    non2xx: number;
  };
  export type Options = {
    url: string;
    method?: "GET" | "POST" | "PUT" | "DELETE" | "PATCH";
    headers?: Record<string, string>;
    body?: string;
    connections?: number;
    duration?: number;
    pipelining?: number;
    /** Requests each connection sends in turn; `setupRequest` may change one before it goes out. */
    requests?: {
      setupRequest?: (req: { path: string; method: string; headers?: Record<string, string> }) => {
        path: string;
        method: string;
        headers?: Record<string, string>;
      };
    }[];
  };
  export default function autocannon(opts: Options): Promise<Result>;
}
