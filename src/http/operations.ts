import { Elysia, getSchemaValidator, t, ValidationError, type AnyElysia, type DocumentDecoration, type Static, type TSchema } from "elysia";
import type { Actor } from "../core/actor";
import { answerJson, hasJsonText, type Answer } from "../core/answer";
import { ApiError, badRequest, missing } from "../core/errors";
import type { Ctx, ProjectOperation } from "../platform/context";
import { authMacro } from "./auth";
import { answer, encodedAnswer, JSON_TYPE } from "./envelope";
import { validationToApiError } from "./handlers";

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
 */
export function operation<S extends TSchema>(
  path: string,
  body: S,
  run: (ctx: Ctx, actor: Actor, projectGid: string, input: Static<S>) => Answer,
  detail: DocumentDecoration & { summary: string; tags: string[] },
): ProjectOperation {
  if (path.startsWith("/") || path.endsWith("/")) throw new Error(`operation path ${path}: no leading or trailing slash`);
  return { path, body, summary: detail.summary, tags: detail.tags, detail, run: run as ProjectOperation["run"] };
}

const params = t.Object({ project: t.String() });

/** The endpoints of a list of operations: one POST each, with the JWT guard, params and body checked by Elysia. */
export function operationRoutes(ctx: Ctx, ops: readonly ProjectOperation[]): AnyElysia {
  const app = new Elysia({ prefix: "/api/p/:project" }).use(authMacro(ctx));
  // Elysia adds each route to the instance itself; the chain's growing type is not needed here.
  for (const op of ops) {
    app.post(`/${op.path}`, ({ params, body, actor, set }) => {
      const out = op.run(ctx, actor, params.project, body ?? {});
      // A lasting answer (a schema snapshot's) goes out as the text encoded when it was first sent.
      const text = encodedAnswer(out);
      if (text !== undefined) {
        set.headers["content-type"] = JSON_TYPE;
        return text;
      }
      if (!hasJsonText(out)) return answer(out);
      // Members already serialized (records/children) are spliced into the JSON, not parsed again.
      set.headers["content-type"] = JSON_TYPE;
      return answerJson(answer(out));
    }, {
      auth: true,
      params,
      body: op.body,
      detail: op.detail as DocumentDecoration,
    });
  }
  return app;
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
  if (typeof body !== "object" || body === null || Array.isArray(body)) throw badRequest("Malformed request body", { reason: "The body must be a JSON object" });
  try {
    body = checker.Clean?.(body) ?? body;
  } catch {
    // Like the route: cleaning is best effort, the check below decides.
  }
  const empty = Object.keys(body as object).length === 0;
  if (checker.isOptional && empty) return {};
  if (!checker.Check(body)) throw validationToApiError(new ValidationError("body", checker, body));
  return body;
}

/** A step ready to run: the operation and its checked body. */
export type PreparedStep = { op: ProjectOperation; input: unknown };

/** The error of step `index`: the step's own error, with `index` and `path` added to its info. */
export function stepError(err: ApiError, index: number, path: unknown, extra: Record<string, unknown> = {}): ApiError {
  return new ApiError(err.code, err.message, { ...err.info, index, path, ...extra }, err.headers);
}

/**
 * Resolves and checks every sub-request of a batch before anything runs: at most `max` of them,
 * each an object with a `path` naming a batchable operation and a `body` its schema accepts.
 * The first problem is a 400 naming the sub-request's `index` (and `path`); nothing has run.
 */
export function prepareBatch(ctx: Ctx, requests: readonly unknown[], max: number): PreparedStep[] {
  if (requests.length > max) throw badRequest("Too many sub-requests", { count: requests.length, max });
  return requests.map((req, index) => {
    if (typeof req !== "object" || req === null || Array.isArray(req)) {
      throw stepError(badRequest("Malformed sub-request", { reason: "Each sub-request is an object {path, body}" }), index, null);
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
      throw stepError(badRequest("Unknown path", { reason: `no batchable operation ${path} below /api/p/<project>/` }), index, path);
    }
    const body = Object.hasOwn(req, "body") ? (req as { body: unknown }).body : undefined;
    try {
      return { op, input: checkedBody(op, body) };
    } catch (err) {
      if (err instanceof ApiError) throw stepError(err, index, path);
      throw err;
    }
  });
}
