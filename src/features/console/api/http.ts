// The console's requests: the token, errors, one JSON call and one upload with progress.
// Every address the pages reach is built in this folder (api/); see index.ts.

// ---------------------------------------------------------------------------------------------
// Token: the JWT is the only thing the console keeps in localStorage.

const TOKEN_KEY = "apis.jwt";
const tokenListeners = new Set<(token: string | null) => void>();
let token: string | null = readToken();

function readToken(): string | null {
  try {
    return localStorage.getItem(TOKEN_KEY);
  } catch {
    return null;
  }
}

export const auth = {
  get token() {
    return token;
  },
  /** Keeps a new JWT (from a login answer, a renewed `Authorization` header or the socket). */
  set(next: string | null) {
    if (next === token) return;
    token = next;
    try {
      if (next) localStorage.setItem(TOKEN_KEY, next);
      else localStorage.removeItem(TOKEN_KEY);
    } catch {
      // Private mode without storage: the session lasts as long as the page.
    }
    for (const l of tokenListeners) l(next);
  },
  onChange(listener: (token: string | null) => void): () => void {
    tokenListeners.add(listener);
    return () => tokenListeners.delete(listener);
  },
};

// Another tab signing in or out changes the stored token: follow it.
if (typeof window !== "undefined") {
  window.addEventListener("storage", (e) => {
    if (e.key === TOKEN_KEY && e.newValue !== token) auth.set(e.newValue);
  });
}

// ---------------------------------------------------------------------------------------------
// Errors

export type Issue = { field: string; rule: string; message: string };

/** An answer that was not a success, or no answer at all (code 0). */
export class ApiError extends Error {
  constructor(
    readonly code: number,
    readonly status: number,
    readonly title: string,
    readonly info: Record<string, unknown>,
    readonly issues: Issue[] = [],
  ) {
    super(describeError(code, title, info, issues));
  }
  /** The validation message for one request member, if the server named it. */
  issue(field: string): string | undefined {
    return this.issues.find((i) => i.field === field)?.message;
  }
}

function describeError(code: number, title: string, info: Record<string, unknown>, issues: Issue[]): string {
  if (issues.length) return issues.map((i) => i.message).join(". ");
  if (code === 429 && typeof info.retry_after === "number")
    return `Too many requests: try again in ${info.retry_after} s`;
  if (code === 400 && typeof info["Missing parameter"] === "string") return `Missing ${info["Missing parameter"]}`;
  // The member named, with what was expected or why (not the bare title "Invalid parameter").
  if (code === 400 && typeof info["Invalid parameter"] === "string") {
    const why =
      typeof info.reason === "string"
        ? info.reason
        : typeof info.expected === "string"
          ? `expected ${info.expected}`
          : "";
    return `Invalid ${info["Invalid parameter"]}${why ? `: ${why}` : ""}`;
  }
  if (typeof info.reason === "string") return `${title}: ${info.reason}`;
  if (code === 413 && typeof info.limit_bytes === "number")
    return `Too large: the limit is ${formatBytes(info.limit_bytes)}`;
  return title || "Request failed";
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let v = n;
  let u = -1;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[u]}`;
}

export type Envelope = { success: boolean; result: any; data: any };

/**
 * An answer without Apis's envelope: a proxy's or gateway's error page (502, 503, 504 while the
 * server restarts or is down), or a server error that could not write one. Said in words, with the
 * status for whoever is asked about it.
 */
function withoutEnvelope(status: number): string {
  if (status >= 500) return `The server is not answering properly (HTTP ${status}): try again in a moment`;
  return `The request failed (HTTP ${status})`;
}

export function errorOf(status: number, body: Envelope | null): ApiError {
  const r = body?.result ?? {};
  const info = (r.info && typeof r.info === "object" ? r.info : {}) as Record<string, unknown>;
  const issues = (
    Array.isArray(r.validation) ? r.validation : Array.isArray(info.validation) ? info.validation : []
  ) as Issue[];
  return new ApiError(
    typeof r.code === "number" ? r.code : status,
    status,
    typeof r.message === "string" ? r.message : withoutEnvelope(status),
    info,
    issues,
  );
}

const unauthorizedListeners = new Set<() => void>();
/** Called when the server refuses the token (expired, revoked, account gone). */
export function onUnauthorized(listener: () => void): () => void {
  unauthorizedListeners.add(listener);
  return () => unauthorizedListeners.delete(listener);
}

function takeToken(headers: { get(name: string): string | null }) {
  const h = headers.get("authorization");
  if (h) auth.set(h.replace(/^Bearer\s+/i, ""));
}

function handleAnswer(status: number, body: Envelope | null, withToken: boolean): Envelope {
  if (body && body.success) return body;
  const err = errorOf(status, body);
  if (err.code === 401 && withToken) {
    auth.set(null);
    for (const l of unauthorizedListeners) l();
  }
  throw err;
}

/** One request. A plain object body is JSON (POST); FormData is multipart. */
export async function call(
  path: string,
  body?: unknown,
  opts: { method?: string; anonymous?: boolean } = {},
): Promise<Envelope> {
  const headers: Record<string, string> = {};
  const withToken = !opts.anonymous && !!token;
  if (withToken) headers.authorization = `Bearer ${token}`;
  let payload: BodyInit | undefined;
  if (body instanceof FormData) payload = body;
  else if (body !== undefined) {
    payload = JSON.stringify(body);
    headers["content-type"] = "application/json";
  }
  let res: Response;
  try {
    res = await fetch(path, { method: opts.method ?? (body === undefined ? "GET" : "POST"), headers, body: payload });
  } catch {
    throw new ApiError(0, 0, "The server cannot be reached", {});
  }
  if (!opts.anonymous) takeToken(res.headers);
  let parsed: Envelope | null = null;
  try {
    parsed = (await res.json()) as Envelope;
  } catch {
    parsed = null;
  }
  return handleAnswer(res.status, parsed, withToken);
}

/** A multipart upload with progress (fetch cannot report upload progress; XMLHttpRequest can). */
export function upload(
  path: string,
  form: FormData,
  onProgress?: (sent: number, total: number) => void,
  signal?: AbortSignal,
): Promise<Envelope> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", path);
    const withToken = !!token;
    if (token) xhr.setRequestHeader("authorization", `Bearer ${token}`);
    xhr.responseType = "json";
    if (onProgress) xhr.upload.onprogress = (e) => onProgress(e.loaded, e.lengthComputable ? e.total : 0);
    xhr.onload = () => {
      takeToken({ get: (n) => xhr.getResponseHeader(n) });
      try {
        resolve(handleAnswer(xhr.status, xhr.response as Envelope | null, withToken));
      } catch (e) {
        reject(e);
      }
    };
    xhr.onerror = () => reject(new ApiError(0, 0, "The upload was cut off", {}));
    xhr.onabort = () => reject(new ApiError(0, 0, "Upload cancelled", {}));
    signal?.addEventListener("abort", () => xhr.abort());
    xhr.send(form);
  });
}

export const j = (o: Record<string, unknown>) => o;
export const p = (project: string, path: string) => `/api/p/${project}/${path}`;
