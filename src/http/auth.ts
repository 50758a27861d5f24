import { Elysia } from "elysia";
import { admitsCaller, callerRefusal, type CallerRule } from "../core/access";
import { actorOf, type Actor } from "../core/actor";
import { forbidden, permissionDenied } from "../core/errors";
import type { CallerAccount, CallerMembership, Ctx } from "../platform/context";
import { thenNow } from "../core/settled";
import { bearerToken, type Claims } from "../platform/tokens";
import { earlyLook } from "./membership-limit";
import { authDetail } from "./openapi";
import { noteCaller } from "./requests";

/** `/api/p/<project>/...` and `/dam/p/<project>/...`: the project gid of a request URL. */
const PROJECT_PATH = /^[a-z][a-z0-9+.-]*:\/\/[^/]+\/(?:api|dam)\/p\/([^/?#]+)\//i;

export type Caller = { user: CallerAccount; token: string };
type Authenticated = Caller & { renewed: string | null };

/**
 * Resolves the caller of a request from its JWT: signature (HS256 only), expiry, token version,
 * an active account, and for API users an active membership. Throws 401 otherwise.
 */
export async function authenticate(ctx: Ctx, header: string | null | undefined): Promise<Authenticated> {
  return await authenticateNow(ctx, header);
}

/**
 * `authenticate` without the promise when the token holder is known or kept (most requests: the
 * answer is then ready at once, src/core/settled.ts), and throwing rather than rejecting; `verified`
 * are the claims of this very header's token when already checked, with its holder when that was
 * read too (the request limit reads it on arrival).
 */
function authenticateNow(
  ctx: Ctx,
  header: string | null | undefined,
  verified?: { token: string; claims: Claims; holder?: CallerAccount | undefined },
): Authenticated | Promise<Authenticated> {
  const token = bearerToken(header);
  if (!token) throw permissionDenied(header ? "invalid_token" : "invalid_request");
  const known = verified?.token === token ? verified : undefined;
  const claims = known ? known.claims : ctx.tokens.verify(token);
  if (!claims) throw permissionDenied();
  const holder = known && "holder" in known ? known.holder : ctx.callers.holder(ctx.db, claims.sub, claims.tv);
  return thenNow(holder, (user) => {
    if (!user) throw permissionDenied();
    const renewed = ctx.tokens.needsRenewal(claims) ? ctx.tokens.sign(user.gid, user.tokenVersion) : null;
    return { user, token: renewed ?? token, renewed };
  });
}

/**
 * The auth macros: `{ auth: true }` on a route requires a JWT and sets the `Authorization`
 * response header (renewed past half life); `{ authNoRenew: true }` checks it without renewing
 * (`/dam`, `/sync`). Both hand the handler `actor`: who asks, for the one service call (routes
 * never see the user row).
 */
export function authMacro(ctx: Ctx) {
  // One plugin per instance, shared by every feature's routes: building and applying a plugin
  // per feature cost start-up time (Elysia merges its macros into each feature that uses it).
  let plugin = authPlugins.get(ctx);
  if (!plugin) authPlugins.set(ctx, (plugin = buildAuthMacro(ctx)));
  return plugin;
}

const authPlugins = new WeakMap<Ctx, ReturnType<typeof buildAuthMacro>>();

/**
 * The caller of a request to any path: its JWT checked (authenticate), and on a project path an
 * active membership required before anything else is looked at, so a stranger gets 403 whatever
 * its body (services check the finer rules, e.g. owner only). The request limit
 * (src/http/membership-limit.ts) may have verified the token and read the membership and the
 * token holder on arrival already: they are used rather than read twice. Names the caller for the
 * request's log line. Used by the auth macros and by the operations Bun's router serves
 * (src/http/operations.ts). The answer is ready at once when the facts are kept or known (not a
 * promise), and a refusal is then thrown: callers await it inside a try or a hook of the framework,
 * where both are handled alike.
 */
export function requestCaller(
  ctx: Ctx,
  request: Request,
  header = request.headers.get("authorization") ?? undefined,
): Authenticated | Promise<Authenticated> {
  const early = earlyLook(request);
  return thenNow(authenticateNow(ctx, header, early), (caller) => {
    const project = PROJECT_PATH.exec(request.url)?.[1];
    if (!project) return admitted(request, caller, undefined, undefined);
    if (early?.project === project && early.claims.sub === caller.user.gid)
      return admitted(request, caller, project, early.membership);
    return thenNow(ctx.callers.membership(ctx.db, project, caller.user.gid), (m) =>
      admitted(request, caller, project, m),
    );
  });
}

/** `requestCaller`'s last step: the membership a project path needs, the owner mark, the log's caller. */
function admitted(
  request: Request,
  caller: Authenticated,
  project: string | undefined,
  membership: CallerMembership | undefined,
): Authenticated {
  if (project && membership?.status !== "active") throw forbidden("Not a member of the project");
  if (membership) owners.set(request, membership.roles.includes("owner"));
  noteCaller(request, caller.user.gid);
  return caller;
}

/** Whether the caller of a request (as requestCaller found it) owns the request's project. */
const owners = new WeakMap<Request, boolean>();

/**
 * The caller rule of an endpoint (src/core/access.ts), checked after requestCaller and before the
 * body's schema: 403 when the caller may not call it, whatever the body. `body` is the body as
 * received (its `self` member is read with an own-property check).
 */
export function admitCaller(request: Request, actor: Actor, rule: CallerRule | undefined, body: unknown): void {
  if (rule && !admitsCaller(actor, owners.get(request) === true, rule, body)) throw callerRefusal(rule);
}

function buildAuthMacro(ctx: Ctx) {
  // The JWT is checked in `transform`, which runs before the body is validated, so a request
  // without a valid JWT is a 401 whatever its body (not a 400 that tells strangers the schema);
  // `resolve` then hands the caller to the handler.
  const callers = new WeakMap<Request, Caller>();
  // Not `async`: with the caller's facts kept (most requests) these answer at once. Elysia awaits
  // the hooks below all the same (it reads `return f(` in their source as asynchronous).
  const check = (request: Request, header: string | undefined) =>
    thenNow(requestCaller(ctx, request, header), (caller) => {
      callers.set(request, { user: caller.user, token: caller.token });
      return caller;
    });
  const callerOf = (request: Request, header: string | undefined) => callers.get(request) ?? check(request, header);
  // The header is read from `request` rather than Elysia's parsed `headers`: Elysia decides from
  // each hook's source text whether to parse headers, and in the compiled executable it did not.
  const header = (request: Request) => request.headers.get("authorization") ?? undefined;
  return new Elysia({ name: "apis-auth" }).macro({
    auth: {
      detail: authDetail(true),
      transform({ request, set }) {
        return thenNow(check(request, header(request)), (caller) => {
          set.headers.authorization = `Bearer ${caller.token}`;
        });
      },
      resolve({ request }) {
        return thenNow(callerOf(request, header(request)), (caller) => ({ actor: actorOf(caller.user) as Actor }));
      },
    },
    /**
     * `callers: rule` next to `auth: true`: the endpoint's caller rule (admitCaller), checked in
     * `transform` as the JWT is, so before the body's schema.
     */
    callers: (rule: CallerRule | undefined) =>
      rule
        ? {
            transform({ request, body }: { request: Request; body: unknown }) {
              return thenNow(callerOf(request, header(request)), (caller) => {
                admitCaller(request, actorOf(caller.user), rule, body);
              });
            },
          }
        : {},
    authNoRenew: {
      detail: authDetail(false),
      transform({ request }) {
        return thenNow(check(request, header(request)), () => undefined);
      },
      resolve({ request }) {
        return thenNow(callerOf(request, header(request)), (caller) => ({ actor: actorOf(caller.user) as Actor }));
      },
    },
  });
}
