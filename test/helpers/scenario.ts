import { expect, test } from "bun:test";
import type { Answer, TestServer } from "./server";

/**
 * Endpoint tests as tables, in the spirit of PocketBase's ApiScenario: each row names the caller,
 * the request and what must come back (status, members of the envelope, sync items), and
 * `scenarios(...)` makes one test per row. Values that exist only once the server runs (tokens,
 * gids made in `beforeAll`) are given as functions, read when the row runs. Rows run in order, so
 * a table may be a short story (create, then delete, then delete again).
 *
 * `call` below is THE call helper of the tests: `call(srv, path, caller, body?)`, one argument order.
 */

/** A value, or a function giving it when the row runs. */
export type Lazy<T> = T | (() => T);
/** Who calls: a user (its JWT), a bare token, or null for a request without a JWT. */
export type Caller = { token: string } | string | null;

const valueOf = <T>(v: Lazy<T>): T => (typeof v === "function" ? (v as () => T)() : v);
const tokenOf = (c: Caller): string | null => (c === null ? null : typeof c === "string" ? c : c.token);

/**
 * THE call helper of the tests, one argument order: `call(srv, path, caller, body?)` POSTs `body`
 * (JSON; FormData as a form; `{}` when not given) to `path` as `caller`. `get(srv, path, caller)`
 * is its GET.
 */
export function call(srv: TestServer, path: string, caller: Caller, body: unknown = {}): Promise<Answer> {
  return srv.call(path, { token: tokenOf(caller), body });
}

/** A GET of `path` as `caller`. */
export function get(srv: TestServer, path: string, caller: Caller): Promise<Answer> {
  return srv.call(path, { token: tokenOf(caller) });
}

/** What one observer must see in sync after the call: the `cc` items, or a project's items with `project`. */
export type SyncExpectation = {
  observer: Lazy<Caller>;
  /** A project's own items (`/sync/get` with `project`); without it the observer's `cc` items. */
  project?: Lazy<string>;
  /** The items after the call, each "ACTION data_type data_key", in order. */
  items: Lazy<string[]>;
};

export type Scenario = {
  name: string;
  caller: Lazy<Caller>;
  path: Lazy<string>;
  /** The body (POST); undefined for a GET. */
  body?: Lazy<unknown>;
  /** The expected HTTP status. */
  status: number;
  /** Members the answer's envelope must have (matched with toMatchObject: others may be there too). */
  members?: Lazy<Record<string, unknown>>;
  /** Response headers that must match. */
  headers?: Record<string, RegExp>;
  /** Sync items each observer must see after the call (and nothing else). */
  sync?: SyncExpectation[];
  /** Runs before the call (e.g. makes what the row needs). */
  before?: () => unknown;
  /** Gets the answer once its status is checked, before the other checks (e.g. keeps a gid they or a later row use). */
  after?: (answer: Answer) => void;
};

async function cursorOf(srv: TestServer, who: Caller, project?: string): Promise<number> {
  const r = await call(srv, "/sync/cursors", who, project ? { project } : {});
  return project ? r.body.result.cursor : r.body.result["cc.cursor"];
}

async function itemsSince(srv: TestServer, who: Caller, since: number, project?: string): Promise<string[]> {
  const r = await call(srv, "/sync/get", who, project ? { project, cursor: since } : { cc_cursor: since });
  return (r.body.result.sync as { action: string; data_type: string; data_key: string }[]).map(
    (i) => `${i.action} ${i.data_type} ${i.data_key}`,
  );
}

/** Runs one row: the call, then its checks. Returns the answer. */
export async function runScenario(srv: TestServer, s: Scenario): Promise<Answer> {
  await s.before?.();
  const watched = await Promise.all(
    (s.sync ?? []).map(async (w) => {
      const observer = valueOf(w.observer);
      const project = w.project === undefined ? undefined : valueOf(w.project);
      return { observer, project, since: await cursorOf(srv, observer, project), items: w.items };
    }),
  );
  const body = valueOf(s.body);
  const r =
    body === undefined
      ? await get(srv, valueOf(s.path), valueOf(s.caller))
      : await call(srv, valueOf(s.path), valueOf(s.caller), body);
  // The row's name with the status, so a failing row says which it is and what it got.
  expect({ row: s.name, status: r.status, ...(r.status !== s.status ? { body: r.body } : {}) }).toEqual({
    row: s.name,
    status: s.status,
  });
  s.after?.(r);
  if (s.members) expect(r.body).toMatchObject(valueOf(s.members));
  for (const [name, re] of Object.entries(s.headers ?? {})) expect(r.headers.get(name) ?? "").toMatch(re);
  for (const w of watched) expect(await itemsSince(srv, w.observer, w.since, w.project)).toEqual(valueOf(w.items));
  s.after?.(r);
  return r;
}

/** One test per row, in order (`srv` is read when a row runs). */
export function scenarios(srv: () => TestServer, rows: readonly Scenario[]): void {
  for (const s of rows) test(s.name, async () => void (await runScenario(srv(), s)));
}

/** The envelope of a 400 for a missing member (only the first is named). */
export const missingParameter = (name: string) => ({
  success: false,
  result: { code: 400, message: "Missing parameter", info: { "Missing parameter": name } },
  data: {},
});

/** The envelope members of a 400 for a member of the wrong shape. */
export const invalidParameter = (name: string) => ({ result: { code: 400, info: { "Invalid parameter": name } } });
