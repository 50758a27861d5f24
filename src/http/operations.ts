import {
  Elysia,
  getSchemaValidator,
  t,
  type AnyElysia,
  type DocumentDecoration,
  type Static,
  type TSchema,
} from "elysia";
import type { CallerRule } from "../core/access";
import { actorOf, type Actor } from "../core/actor";
import { answerJson, hasJsonText, type Answer } from "../core/answer";
import { ApiError, badRequest, missing } from "../core/errors";
import { ready } from "../core/settled";
import type { Ctx, ProjectOperation, ProjectRead } from "../platform/context";
import { admitCaller, authMacro, requestCaller } from "./auth";
import { answer, encodedAnswer, JSON_TYPE } from "./envelope";
import { failureResponse, invalidBody, jsonBody } from "./handlers";
import { arrivalLimit } from "./membership-limit";
import { limiterOf } from "./ratelimit";
import { requestId } from "./requests";

/**
 * Synchronous project operations, declared once and used twice: as the endpoint
 * `POST /api/p/<project>/<path>` (operationRoutes, mounted by the app for every feature's
 * `operations`) and as a step of `POST /api/p/<project>/batch` (prepareBatch). A feature's route
 * file exports its list:
 *
 *   export const queryOperations = [
 *     operation("queries/create", createBody, createQuery, { summary: "Save a query", tags }),
 *   ];
 *
 * and its descriptor says `operations: queryOperations`. See docs/architecture.md, "How to make
 * an endpoint batchable".
 */

/**
 * One operation: its path below `/api/p/<project>/`, the `t` schema of its body, the service
 * (`fn(ctx, actor, projectGid, input): Answer`, synchronous, checking access itself) and its
 * OpenAPI detail: at least summary and tags, or what `describe(...)` of src/http/openapi.ts makes
 * (an example answer, the error statuses). The service's input is typed by the schema.
 * `options.callers` narrows who may call it (src/core/access.ts, CallerRule: owner only, ...): the
 * endpoint and a batch step check it right after the membership and before the body, so a caller
 * who may not call it gets 403 whatever it sends. `options.keepsShared: true` declares that the
 * operation changes neither memberships, the project, its settings nor its schema, so a batch keeps
 * what its steps share after it (`keepsShared` of ProjectOperation). `options.bodyErrorsWhenRun`:
 * a batch step whose body the schema refuses fails when it runs (see ProjectOperation).
 */
export function operation<S extends TSchema>(
  path: string,
  body: S,
  run: (ctx: Ctx, actor: Actor, projectGid: string, input: Static<S>) => Promise<Answer>,
  detail: DocumentDecoration & { summary: string; tags: string[] },
  options: { keepsShared?: boolean; callers?: CallerRule; bodyErrorsWhenRun?: boolean } = {},
): ProjectOperation {
  if (path.startsWith("/") || path.endsWith("/"))
    throw new Error(`operation path ${path}: no leading or trailing slash`);
  const op: ProjectOperation = {
    path,
    body,
    summary: detail.summary,
    tags: detail.tags,
    detail,
    keepsShared: options.keepsShared ?? false,
    run: run as ProjectOperation["run"],
  };
  if (options.callers) op.callers = options.callers;
  if (options.bodyErrorsWhenRun) op.bodyErrorsWhenRun = true;
  return op;
}

const params = t.Object({ project: t.String() });

/**
 * A read (`ProjectRead` of src/platform/context.ts): `GET /api/p/<project>/<path>` answered from
 * the caller and the project alone, served as an Elysia route (readRoutes: the OpenAPI document,
 * HEAD) and by Bun's own router (operationServeRoutes).
 */
export function read(
  path: string,
  run: ProjectRead["run"],
  detail: DocumentDecoration & { summary: string; tags: string[] },
): ProjectRead {
  if (path.startsWith("/") || path.endsWith("/")) throw new Error(`read path ${path}: no leading or trailing slash`);
  return { path, run, detail };
}

/** The endpoints of a list of reads: one GET each, with the JWT guard. */
export function readRoutes(ctx: Ctx, reads: readonly ProjectRead[]): AnyElysia {
  const app = new Elysia({ prefix: "/api/p/:project" }).use(authMacro(ctx));
  for (const r of reads) {
    app.get(`/${r.path}`, async ({ params, actor, set }) => sentAsText(set, await r.run(ctx, actor, params.project)), {
      auth: true,
      params,
      detail: r.detail as DocumentDecoration,
    });
  }
  return app;
}

/** The endpoints of a list of operations: one POST each, with the JWT guard, params and body checked by Elysia. */
export function operationRoutes(ctx: Ctx, ops: readonly ProjectOperation[]): AnyElysia {
  const app = new Elysia({ prefix: "/api/p/:project" }).use(authMacro(ctx));
  // Elysia adds each route to the instance itself; the chain's growing type is not needed here.
  for (const op of ops) {
    app.post(
      `/${op.path}`,
      async ({ params, body, actor, set }) => sentAsText(set, await op.run(ctx, actor, params.project, body ?? {})),
      {
        auth: true,
        callers: op.callers,
        params,
        body: op.body,
        detail: op.detail as DocumentDecoration,
      },
    );
  }
  return app;
}

/** An Elysia handler's return for `out`: its envelope as JSON text (`answerText`), typed as JSON. */
export function sentAsText(set: { headers: Record<string, string | number> }, out: Answer): string {
  set.headers["content-type"] = JSON_TYPE;
  return answerText(out);
}

/**
 * The JSON text of an answer's envelope: a lasting answer (a schema snapshot's) as the text
 * encoded when it was first sent, members already serialized (records/children) spliced in
 * without being parsed again.
 */
function answerText(out: Answer): string {
  const text = encodedAnswer(out);
  if (text !== undefined) return text;
  return hasJsonText(out) ? answerJson(answer(out)) : JSON.stringify(answer(out));
}

/** A request Bun's router matched to an operation: the path's project as `params.project`. */
type OperationRequest = Request & { params: Record<string, string | undefined> };

/** An endpoint served by Bun's router: its route template (metrics, logs) and its handler. */
type NativeRoute = { template: string; serve: (req: OperationRequest) => Response | Promise<Response> };

/**
 * The same endpoints as handlers for Bun.serve's own router, by method and path below the project
 * (`POST definitions/get`, `GET init`; src/app/server.ts routes `/api/p/:project/*` to them and
 * every other path there to the app), answered before the Elysia app, for the bodies the JSON
 * parser reads. They do what the app does for these routes, in the same order, with the same code:
 * the request limit on arrival (arrivalLimit), the body read (jsonBody), the JWT and the
 * membership (requestCaller: 401/403 whatever the body), the body checked as the route checks it
 * (checkedBody, as a batch step is), the service, and the answer with the token (renewed past half
 * life) in `Authorization` from the JWT check on, errors included (failureResponse). What they
 * leave out is the framework's per-request work: its router, context, hook chain and answer
 * mapping (definitions/get: 10.7k → 11.7k requests/s in one profile run). A form body
 * (multipart or form-urlencoded, which Elysia's parser reads differently) is handed to
 * `fallback`, the app itself. Logging, metrics, CORS and the size check are the server's
 * (src/app/server.ts), as for the app.
 */
export function operationServeRoutes(
  ctx: Ctx,
  ops: Iterable<ProjectOperation>,
  fallback: (req: OperationRequest) => Response | Promise<Response>,
  reads: Iterable<ProjectRead> = [],
): Map<string, NativeRoute> {
  const limiter = limiterOf(ctx);
  const jsonMax = ctx.config.jsonMaxBytes;
  const routes = new Map<string, NativeRoute>();
  /** The answer to one request: `input` reads and checks its body (none for a read). */
  const answerOf = async (
    req: OperationRequest,
    input: ((req: OperationRequest) => Promise<unknown>) | undefined,
    run: (actor: Actor, project: string, input: unknown) => Promise<Answer>,
    callers?: CallerRule,
  ): Promise<Response> => {
    let authorization: string | undefined;
    try {
      const header = req.headers.get("authorization");
      // Each step awaited only when it has to wait (src/core/settled.ts): with the caller's facts
      // and a read's answer kept, a request never does.
      const limit = ready(arrivalLimit(ctx, limiter, req, header));
      const limited = limit instanceof Promise ? await limit : limit;
      if (limited) return limited;
      const raw = input ? await input(req) : undefined;
      const looked = ready(requestCaller(ctx, req, header ?? undefined));
      const caller = looked instanceof Promise ? await looked : looked;
      authorization = `Bearer ${caller.token}`;
      const actor = actorOf(caller.user);
      admitCaller(req, actor, callers, raw);
      const answered = ready(run(actor, req.params.project ?? "", raw));
      const out = answered instanceof Promise ? await answered : answered;
      return new Response(answerText(out), {
        headers: { "content-type": JSON_TYPE, authorization, "x-request-id": requestId(req) },
      });
    } catch (err) {
      const res = failureResponse(ctx, req, err);
      if (authorization !== undefined) res.headers.set("authorization", authorization);
      return res;
    }
  };
  for (const op of ops) {
    const body = (req: OperationRequest) => jsonBody(req, req.headers.get("content-type") ?? undefined, jsonMax);
    const run = (actor: Actor, project: string, raw: unknown) => op.run(ctx, actor, project, checkedBody(op, raw));
    routes.set(`POST ${op.path}`, {
      template: `/api/p/:project/${op.path}`,
      serve: async (req) => {
        const type = req.headers.get("content-type");
        if (type !== null && /^\s*(multipart\/|application\/x-www-form-urlencoded)/i.test(type)) return fallback(req);
        return await answerOf(req, body, run, op.callers);
      },
    });
  }
  for (const r of reads) {
    // Promises handed on without `async` frames (answerOf awaits inside its try).
    const run = (actor: Actor, project: string) => r.run(ctx, actor, project);
    routes.set(`GET ${r.path}`, {
      template: `/api/p/:project/${r.path}`,
      serve: (req) => answerOf(req, undefined, run),
    });
  }
  return routes;
}

/** The checker of an operation's body, built once: Elysia's own (TypeBox, compiled), as its route uses. */
type Checker = ReturnType<typeof getSchemaValidator<TSchema>>;
const checkers = new WeakMap<ProjectOperation, Checker>();
function checkerOf(op: ProjectOperation): Checker {
  let c = checkers.get(op);
  if (!c) {
    c = getSchemaValidator(op.body, { normalize: true });
    checkers.set(op, c);
  }
  return c;
}

/**
 * A step's body checked as its route checks it: unknown members dropped, then the schema; an
 * optional body may be empty. Throws the route's own 400 (the first missing member, or the wrong one).
 */
function checkedBody(op: ProjectOperation, raw: unknown): unknown {
  const checker = checkerOf(op);
  let body: unknown = raw ?? {};
  if (typeof body !== "object" || body === null || Array.isArray(body))
    throw badRequest("Malformed request body", { reason: "The body must be a JSON object" });
  try {
    body = checker.Clean?.(body) ?? body;
  } catch {
    // Like the route: cleaning is best effort, the check below decides.
  }
  const empty = Object.keys(body as object).length === 0;
  if (checker.isOptional && empty) return {};
  // Its first problem only: Elysia's ValidationError would also work out every problem and a
  // message naming the wrong values, which is wasted here (and a body made to trip it cost a 500).
  if (!checker.Check(body)) throw invalidBody(checker.schema, body, checker.Errors(body).First());
  return body;
}

/** A step ready to run: the operation and its checked body. */
type PreparedStep = { op: ProjectOperation; input: unknown };

/** The error of step `index`: the step's own error, with `index` and `path` added to its info. */
function stepError(err: ApiError, index: number, path: unknown, extra: Record<string, unknown> = {}): ApiError {
  return new ApiError(err.code, err.message, { ...err.info, index, path, ...extra }, err.headers);
}

/**
 * Resolves and checks every sub-request of a batch before anything runs: at most `max` of them,
 * each an object with a `path` naming a batchable operation and a `body` its schema accepts.
 * The first problem is a 400 naming the sub-request's `index` (and `path`); nothing has run. A
 * body refused for an operation with `bodyErrorsWhenRun` makes a step that fails when it runs.
 * `admit` checks a step's caller rule before its body, as the endpoint does (admitCaller with the
 * batch's request and caller): a step the caller may not call is a 403, whatever its body.
 */
export function prepareBatch(
  ctx: Ctx,
  requests: readonly unknown[],
  max: number,
  admit: (rule: CallerRule | undefined, body: unknown) => void,
): PreparedStep[] {
  if (requests.length > max) throw badRequest("Too many sub-requests", { count: requests.length, max });
  return requests.map((req, index) => {
    if (typeof req !== "object" || req === null || Array.isArray(req)) {
      throw stepError(
        badRequest("Malformed sub-request", { reason: "Each sub-request is an object {path, body}" }),
        index,
        null,
      );
    }
    const path = Object.hasOwn(req, "path") ? (req as { path: unknown }).path : undefined;
    if (typeof path !== "string" || path === "") throw stepError(missing("path"), index, path ?? null);
    const op = ctx.hooks.operations.get(path);
    if (!op) {
      if (ctx.hooks.projectPaths.has(path)) {
        throw stepError(
          badRequest("Not allowed in a batch", {
            reason: `${path} cannot run inside a batch: only synchronous project operations can (not uploads, mail, jobs that replace data, nor a batch); see docs/batch.md`,
          }),
          index,
          path,
        );
      }
      throw stepError(
        badRequest("Unknown path", { reason: `no batchable operation ${path} below /api/p/<project>/` }),
        index,
        path,
      );
    }
    const body = Object.hasOwn(req, "body") ? (req as { body: unknown }).body : undefined;
    try {
      admit(op.callers, body);
      // (A body that is not an object stays a refusal before the batch starts, as the services never saw it.)
      if (op.bodyErrorsWhenRun && (body == null || (typeof body === "object" && !Array.isArray(body)))) {
        try {
          return { op, input: checkedBody(op, body) };
        } catch (err) {
          if (!(err instanceof ApiError)) throw err;
          // Refused when the step runs (bodyErrorsWhenRun of ProjectOperation).
          const refused: ProjectOperation = {
            ...op,
            run: () => {
              throw err;
            },
          };
          return { op: refused, input: undefined };
        }
      }
      return { op, input: checkedBody(op, body) };
    } catch (err) {
      if (err instanceof ApiError) throw stepError(err, index, path);
      throw err;
    }
  });
}
