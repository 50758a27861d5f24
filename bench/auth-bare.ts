/**
 * The honest ceiling of authenticated calls in the API benchmark: a bare Bun.serve that does the
 * work of `GET /api/p/<project>/init` and `POST /api/users/get` by hand, on a copy of the same
 * database: the HS256 signature checked with the same secret (HMAC-SHA256 of Bun.CryptoHasher, as
 * src/core/crypto.ts does), the same claims checks (alg HS256, exp in the future, `sub` a string,
 * `tv` a number), the token holder read and checked (active, token version, an API user's
 * membership), the project membership checked and its request limit taken from a token bucket,
 * then the same SQLite queries as prepared statements (prepared once), in one read transaction,
 * turned into the same JSON bytes. No framework, no request log, no metrics, no CORS.
 *
 * usage: bun bench/auth-bare.ts <port> <data dir> <rate limit per second (0 = none)>
 */
import { Database } from "bun:sqlite";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { LANGUAGES } from "../src/core/languages";
import { projectOptions } from "../src/features/projects/projects.options";
import { VERSION } from "../src/version";

const [port, dataDir, rate] = process.argv.slice(2);
const secret = readFileSync(join(dataDir!, "jwt.secret"), "utf8").trim();
const defaultLimit = Number(rate ?? 0);
const lifetime = 3600;

const db = new Database(join(dataDir!, "apis.db"), { strict: true });
db.exec("PRAGMA journal_mode = WAL");
db.exec("PRAGMA busy_timeout = 5000");
db.exec("PRAGMA foreign_keys = ON");

// ---- JWT (HS256) ------------------------------------------------------------------------------
type Claims = { sub: string; tv: number; exp: number; iat: number };
const HEADER = Buffer.from(JSON.stringify({ alg: "HS256", typ: "JWT" })).toString("base64url");

function verify(header: string | null): Claims | null {
  if (!header) return null;
  const token = header.replace(/^bearer\s+/i, "");
  const [h, p, s] = token.split(".");
  if (!h || !p || !s || token.split(".").length !== 3) return null;
  const mac = new Bun.CryptoHasher("sha256", secret).update(`${h}.${p}`).digest();
  const sig = Buffer.from(s, "base64url");
  if (sig.length !== mac.length || !crypto.timingSafeEqual(sig, mac)) return null;
  try {
    const head = JSON.parse(Buffer.from(h, "base64url").toString());
    if (head?.alg !== "HS256" || head.crit !== undefined) return null;
    const c = JSON.parse(Buffer.from(p, "base64url").toString());
    if (typeof c !== "object" || c === null || Array.isArray(c)) return null;
    if (
      typeof c.sub !== "string" ||
      typeof c.tv !== "number" ||
      typeof c.exp !== "number" ||
      c.exp <= Math.floor(Date.now() / 1000)
    )
      return null;
    if (c.iat !== undefined && typeof c.iat !== "number") return null;
    if (c.nbf !== undefined && (typeof c.nbf !== "number" || c.nbf > Math.floor(Date.now() / 1000))) return null;
    return c as Claims;
  } catch {
    return null;
  }
}

function sign(sub: string, tv: number): string {
  const iat = Math.floor(Date.now() / 1000);
  const p = Buffer.from(JSON.stringify({ sub, tv, exp: iat + lifetime, iat })).toString("base64url");
  return `${HEADER}.${p}.${new Bun.CryptoHasher("sha256", secret).update(`${HEADER}.${p}`).digest("base64url")}`;
}

// ---- the queries, prepared once (the SQL text drizzle builds for the same reads; like Apis, the
// lists are sorted here rather than by an ORDER BY that would need a temporary b-tree) ----------
const USER = `"gid", "kind", "username", "email", "name", "password_hash", "avatar", "status", "language", "timezone", "token_version", "admin", "created_on", "updated_on"`;
const PROJECT = `"gid", "name", "icon", "owner", "status", "options", "last_backed_up", "next_backup_version", "created_on", "updated_on", "deleted_on"`;
const ITEM = `"id", "gid", "project_gid", "original", "is_new", "name", "label", "metadata", "spec", "created_on", "updated_on"`;
const q = {
  user: db.prepare<any, [string]>(`select ${USER} from "users" where "users"."gid" = ?`),
  anyActiveMembership: db.prepare<any, [string]>(
    `select 1 from "memberships" where "user_gid" = ? and "status" = 'active' limit 1`,
  ),
  membership: db.prepare<any, [string, string]>(
    `select "project_gid", "user_gid", "status", "roles", "options", "created_on", "updated_on" from "memberships" where ("memberships"."project_gid" = ? and "memberships"."user_gid" = ?)`,
  ),
  project: db.prepare<any, [string]>(`select ${PROJECT} from "projects" where "projects"."gid" = ?`),
  owned: db.prepare<any, [string]>(`select ${PROJECT} from "projects" where "projects"."owner" = ?`),
  // Like Apis: no ORDER BY (sorted here), and each member's user read by its key instead of a join
  // (SQLite ran the join of one row each at 10-30 times the cost of the two lookups).
  backups: db.prepare<any, [string, string]>(
    `select "version", "name", "created_by", "created_on" from "backups" where ("backups"."project_gid" = ? and "backups"."status" = ?)`,
  ),
  members: db.prepare<any, [string]>(
    `select "project_gid", "user_gid", "status", "roles", "options", "created_on", "updated_on" from "memberships" where "memberships"."project_gid" = ?`,
  ),
  definitions: db.prepare<any, [string]>(`select ${ITEM} from "definitions" where "definitions"."project_gid" = ?`),
  classes: db.prepare<any, [string]>(`select ${ITEM} from "classes" where "classes"."project_gid" = ?`),
  fields: db.prepare<any, [string]>(`select ${ITEM} from "fields" where "fields"."project_gid" = ?`),
  layouts: db.prepare<any, [string]>(`select ${ITEM} from "layouts" where "layouts"."project_gid" = ?`),
  queries: db.prepare<any, [string]>(
    `select "id", "gid", "project_gid", "type", "name", "q", "filter", "created_by", "created_on", "updated_on" from "queries" where "queries"."project_gid" = ?`,
  ),
  cursor: db.prepare<{ c: number | null }, []>(`select max("cursor") as c from "changes"`),
  floor: db.prepare<{ value: string }, [string]>(`select "key", "value" from "meta" where "meta"."key" = ?`),
  coMember: db.prepare<any, [string, string]>(
    `select 1 from "memberships" mine join "memberships" theirs on theirs.project_gid = mine.project_gid where mine.user_gid = ? and mine.status = 'active' and theirs.user_gid = ? and theirs.status != 'declined' limit 1`,
  ),
};

// ---- the forms ------------------------------------------------------------------------------
const shownUsername = (u: any) => (u.kind === "api" ? null : (u.username ?? ""));
const userFull = (u: any) => ({
  gid: u.gid,
  username: shownUsername(u),
  email: u.email,
  name: u.name,
  avatar: u.avatar,
  status: u.status,
  options: { language: u.language, timezone: u.timezone },
});
const userShort = (u: any) => ({
  gid: u.gid,
  username: shownUsername(u),
  name: u.name,
  avatar: u.avatar,
  status: u.status,
});
const projectShort = (p: any) => ({ gid: p.gid, name: p.name, icon: p.icon, owner: p.owner, status: p.status });
/** Schema items and saved queries: the benchmark's project has none, so any row is a surprise. */
function dictionary(rows: any[]): Record<string, unknown> {
  if (rows.length) throw new Error("auth-bare: the benchmark project must have an empty schema");
  return {};
}

// ---- auth -----------------------------------------------------------------------------------
const JSON_TYPE = "application/json; charset=utf-8";
const refusal = (status: number, code: number, message: string) =>
  new Response(JSON.stringify({ success: false, result: { code, message, info: {} }, data: {} }), {
    status,
    headers: { "content-type": JSON_TYPE },
  });

type Holder = { user: any; token: string };
function holder(req: Request): Holder | null {
  const header = req.headers.get("authorization");
  const claims = verify(header);
  if (!claims) return null;
  const user = q.user.get(claims.sub);
  if (!user || user.status !== "active" || user.token_version !== claims.tv) return null;
  if (user.kind === "api" && !q.anyActiveMembership.get(user.gid)) return null;
  const renew = claims.exp - Date.now() / 1000 <= lifetime / 2;
  return { user, token: renew ? sign(user.gid, user.token_version) : header!.replace(/^bearer\s+/i, "") };
}

const buckets = new Map<string, { tokens: number; at: number }>();
function allowed(key: string, limit: number): boolean {
  if (!(limit > 0)) return true;
  const now = Date.now();
  let b = buckets.get(key);
  if (!b) buckets.set(key, (b = { tokens: limit, at: now }));
  b.tokens = Math.min(limit, b.tokens + ((now - b.at) * limit) / 1000);
  b.at = now;
  if (b.tokens < 1) return false;
  b.tokens -= 1;
  return true;
}

const answer = (body: unknown, token: string) =>
  new Response(JSON.stringify(body), { headers: { "content-type": JSON_TYPE, authorization: `Bearer ${token}` } });

// ---- the two endpoints ----------------------------------------------------------------------
const projectInit = db.transaction((me: any, projectGid: string) => {
  const owned = me.kind === "api" ? [] : q.owned.all(me.gid);
  const userProjects: Record<string, string[]> = {};
  const ccProjects: Record<string, unknown> = {};
  for (const p of owned) {
    userProjects[p.gid] = ["owner"];
    if (p.gid !== projectGid) ccProjects[p.gid] = projectShort(p);
  }
  const ccUsers: Record<string, unknown> = { [me.gid]: userFull(me) };
  const ccMembers: unknown[] = [];
  const project = q.project.get(projectGid)!;
  project.options = JSON.parse(project.options);
  const versions = q.backups
    .all(projectGid, "ready")
    .sort((a, b) => b.version - a.version)
    .map((b) => ({ version: b.version, name: b.name, created_by: b.created_by ?? "", timestamp: b.created_on }));
  ccProjects[project.gid] = {
    ...projectShort(project),
    options: projectOptions(project),
    backups: { versions, next_version: project.next_backup_version },
    build: 1,
  };
  const isOwner = project.owner === me.gid;
  const projectMembers: string[] = [];
  const rows = q.members
    .all(projectGid)
    .flatMap((m) => {
      const u = q.user.get(m.user_gid);
      return u
        ? [
            {
              ...u,
              m_status: m.status,
              created_on: m.created_on,
              roles: m.roles,
              options: m.options,
              user_gid: m.user_gid,
            },
          ]
        : [];
    })
    .sort((a, b) => a.created_on - b.created_on)
    .filter((r) => isOwner || r.m_status !== "declined");
  rows.sort((a, b) => Number(b.roles.includes('"owner"')) - Number(a.roles.includes('"owner"')));
  for (const r of rows) {
    const full = isOwner || r.user_gid === me.gid;
    if (r.user_gid !== me.gid) ccUsers[r.user_gid] = userShort({ ...r, gid: r.user_gid });
    const m = { project_gid: projectGid, user_gid: r.user_gid, status: r.m_status, roles: JSON.parse(r.roles) };
    ccMembers.push(full ? { ...m, options: JSON.parse(r.options) } : m);
    if (r.m_status === "active") projectMembers.push(r.user_gid);
  }
  const dictionaries = {
    definitions: dictionary(q.definitions.all(projectGid)),
    classes: dictionary(q.classes.all(projectGid)),
    fields: dictionary(q.fields.all(projectGid)),
    layouts: dictionary(q.layouts.all(projectGid)),
    queries: dictionary(q.queries.all(projectGid)),
  };
  const cursor = Math.max(q.cursor.get()?.c ?? 0, Number(q.floor.get("changes.floor")?.value ?? 0));
  return {
    success: true,
    result: {
      user: me.gid,
      user_projects: userProjects,
      project: project.gid,
      project_members: projectMembers,
      last_backed_up: project.last_backed_up ?? null,
      "cc.version": VERSION,
      "cc.cursor": cursor,
      cursor,
    },
    data: {
      "cc.users": ccUsers,
      "cc.projects": ccProjects,
      "cc.projects_members": ccMembers,
      "cc.languages": LANGUAGES,
      ...dictionaries,
    },
  };
});

const userInfo = db.transaction((me: any, gid: string) => {
  const target = q.user.get(gid);
  if (!target || (target.gid !== me.gid && !q.coMember.get(me.gid, target.gid))) return null;
  return {
    success: true,
    result: { user: target.gid },
    data: { "cc.users": { [target.gid]: target.gid === me.gid ? userFull(target) : userShort(target) } },
  };
});

const PROJECT_INIT = /^\/api\/p\/([^/]+)\/init$/;

Bun.serve({
  port: Number(port),
  hostname: "127.0.0.1",
  async fetch(req) {
    const url = req.url;
    const path = url.slice(url.indexOf("/", 8));
    if (path === "/api/ping")
      return new Response(JSON.stringify({ success: true, result: {}, data: {} }), {
        headers: { "content-type": JSON_TYPE },
      });
    const init = req.method === "GET" ? PROJECT_INIT.exec(path) : null;
    if (init) {
      const who = holder(req);
      if (!who) return refusal(401, 401, "Permission denied");
      const projectGid = init[1]!;
      const m = q.membership.get(projectGid, who.user.gid);
      if (!m || m.status !== "active") return refusal(403, 403, "Not a member of the project");
      const limit = JSON.parse(m.options).rate_limit_per_second;
      if (!allowed(`rps:${who.user.gid}:${projectGid}`, typeof limit === "number" ? limit : defaultLimit))
        return refusal(429, 429, "Too many requests");
      return answer(projectInit(who.user, projectGid), who.token);
    }
    if (req.method === "POST" && path === "/api/users/get") {
      const who = holder(req);
      if (!who) return refusal(401, 401, "Permission denied");
      let body: any;
      try {
        body = JSON.parse(await req.text());
      } catch {
        return refusal(400, 400, "Malformed request body");
      }
      if (typeof body?.user !== "string" || !body.user) return refusal(400, 400, "Missing parameter");
      const out = userInfo(who.user, body.user);
      return out ? answer(out, who.token) : refusal(422, 422, "No info for this user");
    }
    return refusal(404, 404, "Not found");
  },
});

// A clean exit on SIGTERM (the harness stops servers so), so `bun --cpu-prof` writes its profile.
process.on("SIGTERM", () => process.exit(0));
