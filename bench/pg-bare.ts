/**
 * The ceiling of the PostgreSQL endpoint rows (bench/pg-api.bench.ts, issue 39 item 9): a bare
 * Bun.serve on Bun's SQL doing by hand what Apis does for `GET /api/p/<project>/init` (kept),
 * `POST /api/users/get`, `records/children`, `records/update` and a `batch` of record updates, on
 * the same PostgreSQL database: the same JWT check (src/platform/tokens.ts with the same secret),
 * the statements Apis sends for each (read from PostgreSQL's statement log: the benchmark counts
 * both servers' statements per request), the same transactions, and the same JSON answer (the
 * benchmark compares one answer of each endpoint with Apis' before it measures). No framework,
 * no validation, no request log, no metrics, no sync hub.
 *
 * Where Apis sends a statement a hand-made server might not (the access check's own read
 * transaction before a records call, the change-log sequence read that checks kept facts), this
 * server sends it too; where Apis keeps something in memory (the token holder, the project's kept
 * init, the schema), so does this server.
 *
 * usage: bun bench/pg-bare.ts <port> <database url> <jwt secret>
 */
import { SQL } from "bun";
import { sql } from "drizzle-orm";
import { PgDialect } from "drizzle-orm/pg-core";
import { recordMatchesPg, recordSearchPagePg } from "../src/db/pg/search";
import { writeChangesLast, type PendingChange } from "../src/db/pg/changelog";
import { LANGUAGES } from "../src/core/languages";
import { projectOptions } from "../src/features/projects/projects.options";
import { bearerToken, Tokens } from "../src/platform/tokens";
import { VERSION } from "../src/version";

const [port, url, secret] = process.argv.slice(2);
const tokens = new Tokens(secret!, 3600);
const db = new SQL({ url: url!, max: Number(process.env.PG_BARE_POOL ?? 10) });

const USER = `"gid", "kind", "username", "email", "name", "password_hash", "avatar", "status", "language", "timezone", "token_version", "admin", "created_on", "updated_on"`;
const PROJECT = `"gid", "name", "icon", "owner", "status", "options", "last_backed_up", "next_backup_version", "created_on", "updated_on", "deleted_on"`;
const MEMBERSHIP = `"project_gid", "user_gid", "status", "roles", "options", "created_on", "updated_on"`;
const ITEM = `id, gid, project_gid, original, is_new, name, label, metadata, spec, created_on, updated_on`;
const RECORD = `id, gid, project_gid, parent, canonical, is_link, definition, treelevel, path, childcount, status, channels, vals, checks, created_on, updated_on`;
const Q = {
  user: `select ${USER} from "users" where "users"."gid" = $1`,
  membership: `select ${MEMBERSHIP} from "memberships" where ("memberships"."project_gid" = $1 and "memberships"."user_gid" = $2)`,
  project: `select ${PROJECT} from "projects" where "projects"."gid" = $1`,
  owned: `select "gid", "name", "icon", "owner", "status" from "projects" where "projects"."owner" = $1`,
  backups: `select "version", "name", "created_by", "created_on" from "backups" where ("backups"."project_gid" = $1 and "backups"."status" = $2)`,
  members: `select ${MEMBERSHIP} from "memberships" where "memberships"."project_gid" = $1`,
  items: (table: string) => `SELECT ${ITEM} FROM "${table}" WHERE project_gid = $1`,
  queries: `select "id", "gid", "project_gid", "type", "name", "q", "filter", "created_by", "created_on", "updated_on" from "queries" where "queries"."project_gid" = $1`,
  cursor: `select max("changes"."cursor") AS c from "changes"`,
  floor: `select "key", "value" from "meta" where "meta"."key" = $1`,
  sequence: `SELECT last_value, is_called FROM changes_cursor_seq`,
  coMember: `select 1 from "memberships" mine join "memberships" theirs on theirs.project_gid = mine.project_gid where mine.user_gid = $1 and mine.status = 'active' and theirs.user_gid = $2 and theirs.status != 'declined' limit 1`,
  record: `SELECT ${RECORD} FROM records WHERE gid = $1 AND project_gid = $2`,
  pageIds: `SELECT o.record_id AS id, NULL AS gid FROM record_orderings o WHERE o.parent = $1 AND o.ordering = $2 ORDER BY o.pos LIMIT $3 OFFSET $4`,
  rowsByIds: `SELECT ${RECORD} FROM records WHERE id = ANY($1::bigint[]) AND project_gid = $2`,
  placesOf: `SELECT record_id AS id, ordering, pos FROM record_orderings WHERE record_id = ANY($1::bigint[])`,
  placesOne: `SELECT record_id AS id, ordering, pos FROM record_orderings WHERE record_id = $1`,
  linksOf: `SELECT id, canonical, gid FROM records WHERE is_link = TRUE AND status != 'deleted' AND canonical = ANY($1::text[])`,
  linksOne: `SELECT id, canonical, gid FROM records WHERE canonical = $1 AND is_link = TRUE AND status != 'deleted'`,
  definition: `SELECT ${ITEM} FROM "definitions" WHERE gid = $1 AND project_gid = $2`,
  fieldsOf: `SELECT ${ITEM} FROM "fields" WHERE gid = ANY($1::text[]) AND project_gid = $2 ORDER BY id`,
  canonicals: `SELECT count(*) AS n FROM (SELECT 1 FROM records WHERE canonical = $1 LIMIT 2) AS c`,
  update: `UPDATE records SET vals = $1::text::jsonb, checks = $2::text::jsonb, definition = $3, updated_on = $4 WHERE id = $5`,
};

const JSON_TYPE = "application/json; charset=utf-8";
const refusal = (status: number, message: string) =>
  new Response(JSON.stringify({ success: false, result: { code: status, message, info: {} }, data: {} }), {
    status,
    headers: { "content-type": JSON_TYPE },
  });
const answer = (text: string, token: string) =>
  new Response(text, { headers: { "content-type": JSON_TYPE, authorization: `Bearer ${token}` } });

type Tx = SQL;
/** A transaction by hand on a reserved connection (as Apis' PostgreSQL port does). */
async function inTx<T>(begin: string, fn: (tx: Tx) => Promise<T>): Promise<T> {
  const conn = await db.reserve();
  try {
    await conn.unsafe(begin);
    try {
      const r = await fn(conn);
      await conn.unsafe("COMMIT");
      return r;
    } catch (err) {
      await conn.unsafe("ROLLBACK");
      throw err;
    }
  } finally {
    await conn.release();
  }
}
const READ = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY";
const one = async (tx: Tx, q: string, args: unknown[]) => ((await tx.unsafe(q, args)) as any[])[0];

// ---- the token holder, kept per token like Apis' checked tokens --------------------------------
const holders = new Map<string, any>();
async function holder(req: Request): Promise<{ user: any; token: string } | null> {
  const token = bearerToken(req.headers.get("authorization"));
  if (!token) return null;
  const claims = tokens.verify(token);
  if (!claims) return null;
  let user = holders.get(token);
  if (!user) {
    user = await inTx(READ, (tx) => one(tx, Q.user, [claims.sub]));
    if (!user || user.status !== "active" || user.token_version !== claims.tv) return null;
    holders.set(token, user);
  }
  return { user, token };
}

/** The change-log sequence: what Apis' kept facts (access, init payloads) are checked against. */
async function sequence(): Promise<string> {
  const s = await one(db, Q.sequence, []);
  return `${s.last_value}:${s.is_called}`;
}

/**
 * The project-scoped access check: the membership and the holder's row read in their own read
 * transaction, as Apis does for records calls; for the kept init (`keep`), kept until the
 * change-log sequence moves, as Apis keeps it.
 */
const access = new Map<string, { seq: string; ok: boolean }>();
async function member(project: string, me: any, seq: string, keep: boolean): Promise<boolean> {
  const key = `${me.gid} ${project}`;
  const k = access.get(key);
  if (keep && k && k.seq === seq) return k.ok;
  const ok = await inTx(READ, async (tx) => {
    const m = await one(tx, Q.membership, [project, me.gid]);
    await one(tx, Q.user, [me.gid]);
    return !!m && m.status === "active";
  });
  access.set(key, { seq, ok });
  return ok;
}

// ---- forms ------------------------------------------------------------------------------------
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
const parsed = (v: unknown) => (typeof v === "string" ? JSON.parse(v) : v);

function dictionary(kind: "definition" | "class" | "field" | "layout", raw: any[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const r of raw.sort((a, b) => Number(a.id) - Number(b.id))) {
    const s = parsed(r.spec);
    const label = parsed(r.label);
    const metadata = parsed(r.metadata);
    const common = { gid: r.gid, original: r.original ?? null };
    const tail = {
      is_new: !!r.is_new,
      is_working_copy: !!r.original,
      created_on: r.created_on,
      updated_on: r.updated_on,
    };
    if (kind === "field")
      out[r.gid] = {
        ...common,
        name: r.name,
        label,
        type: s.type,
        options: s.options ?? {},
        is_localized: !!s.is_localized,
        is_required: !!s.is_required,
        initial: s.initial ?? {},
        unit: s.unit ?? null,
        metadata,
        ...tail,
      };
    else if (kind === "class")
      out[r.gid] = {
        ...common,
        name: r.name,
        label,
        fields: s.fields ?? [],
        layout: s.layout ?? null,
        metadata,
        ...tail,
      };
    else if (kind === "definition") {
      const extended = typeof s.extends === "string";
      out[r.gid] = {
        ...common,
        ...(extended ? { original: s.extends } : {}),
        name: r.name,
        label,
        classes: s.classes ?? [],
        fields: s.fields ?? [],
        titlefield: s.titlefield ?? null,
        layout: s.layout ?? null,
        childdefinitions: s.childdefinitions ?? [],
        fieldlists: s.fieldlists ?? {},
        metadata,
        is_extended: extended,
        ...tail,
        ...(extended ? { is_new: false, is_working_copy: false } : {}),
      };
    } else out[r.gid] = { ...common, name: r.name, root: s.root ?? null, components: s.components ?? {}, ...tail };
  }
  return out;
}

/** The project init payload, built by hand (bench/auth-bare.ts's, on PostgreSQL). */
async function buildInit(me: any, projectGid: string): Promise<string> {
  return await inTx(READ, async (tx) => {
    const owned = me.kind === "api" ? [] : ((await tx.unsafe(Q.owned, [me.gid])) as any[]);
    const userProjects: Record<string, string[]> = {};
    const ccProjects: Record<string, unknown> = {};
    for (const p of owned) {
      userProjects[p.gid] = ["owner"];
      if (p.gid !== projectGid) ccProjects[p.gid] = projectShort(p);
    }
    const ccUsers: Record<string, unknown> = { [me.gid]: userFull(me) };
    const ccMembers: unknown[] = [];
    const project = await one(tx, Q.project, [projectGid]);
    project.options = parsed(project.options);
    const versions = ((await tx.unsafe(Q.backups, [projectGid, "ready"])) as any[])
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
    const rows: any[] = [];
    for (const m of (await tx.unsafe(Q.members, [projectGid])) as any[]) {
      const u = await one(tx, Q.user, [m.user_gid]);
      if (u)
        rows.push({
          ...u,
          m_status: m.status,
          created_on: m.created_on,
          roles: parsed(m.roles),
          options: parsed(m.options),
          user_gid: m.user_gid,
        });
    }
    rows.sort((a, b) => a.created_on - b.created_on);
    const shown = rows.filter((r) => isOwner || r.m_status !== "declined");
    shown.sort((a, b) => Number(b.roles.includes("owner")) - Number(a.roles.includes("owner")));
    for (const r of shown) {
      const full = isOwner || r.user_gid === me.gid;
      if (r.user_gid !== me.gid) ccUsers[r.user_gid] = userShort({ ...r, gid: r.user_gid });
      const m = { project_gid: projectGid, user_gid: r.user_gid, status: r.m_status, roles: r.roles };
      ccMembers.push(full ? { ...m, options: r.options } : m);
      if (r.m_status === "active") projectMembers.push(r.user_gid);
    }
    const dictionaries = {
      definitions: dictionary("definition", await tx.unsafe(Q.items("definitions"), [projectGid])),
      classes: dictionary("class", await tx.unsafe(Q.items("classes"), [projectGid])),
      fields: dictionary("field", await tx.unsafe(Q.items("fields"), [projectGid])),
      layouts: dictionary("layout", await tx.unsafe(Q.items("layouts"), [projectGid])),
      queries: {},
    };
    if (((await tx.unsafe(Q.queries, [projectGid])) as any[]).length)
      throw new Error("pg-bare: the benchmark project must have no saved queries");
    const max = (await one(tx, Q.cursor, []))?.c;
    const floor = (await one(tx, Q.floor, ["changes.floor"]))?.value;
    const cursor = Math.max(Number(max ?? 0), Number(floor ?? 0));
    return JSON.stringify({
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
    });
  });
}

/** Kept init payloads by user and project, valid while the change-log sequence stands still. */
const kept = new Map<string, { seq: string; text: string }>();
async function init(me: any, project: string, seq: string): Promise<string> {
  const key = `${me.gid} ${project}`;
  const k = kept.get(key);
  if (k && k.seq === seq) return k.text;
  const text = await buildInit(me, project);
  kept.set(key, { seq, text });
  return text;
}

// ---- records ----------------------------------------------------------------------------------
type Field = { gid: string; name: string; localized: boolean };
type Def = { fields: Field[]; titlefield: string | null };
/** The schema for updates, read once (Apis keeps its schema view between writes too). */
let schema: { defs: Map<string, Def>; byName: Map<string, Field>; languages: string[] } | undefined;
async function schemaOf(project: string) {
  if (schema) return schema;
  const fields = new Map<string, Field>();
  for (const f of (await db.unsafe(Q.items("fields"), [project])) as any[])
    fields.set(f.gid, { gid: f.gid, name: f.name, localized: !!parsed(f.spec).is_localized });
  const defs = new Map<string, Def>();
  for (const d of (await db.unsafe(Q.items("definitions"), [project])) as any[]) {
    const s = parsed(d.spec);
    defs.set(d.gid, {
      fields: (s.fields ?? []).map((g: string) => fields.get(g)!).filter(Boolean),
      titlefield: s.titlefield ?? null,
    });
  }
  const p = await one(db, Q.project, [project]);
  const languages = parsed(p.options).languages as string[];
  schema = { defs, byName: new Map([...fields.values()].map((f) => [f.name, f])), languages };
  return schema;
}

const valueOf = (vals: any, f: Field, l: string) => (f.localized ? vals?.[l] : vals?.["*"])?.[f.gid] ?? null;
function form(
  r: any,
  def: Def,
  langs: string[],
  places: Map<number, Record<string, number>>,
  links: Map<string, string[]>,
) {
  const vals = r.vals;
  const title: Record<string, string> = {};
  const fields: Record<string, Record<string, unknown>> = {};
  const tf = def.fields.find((f) => f.gid === def.titlefield);
  for (const l of langs) {
    title[l] = tf ? String(valueOf(vals, tf, l) ?? "") : "";
    const out: Record<string, unknown> = {};
    for (const f of def.fields) out[f.name] = valueOf(vals, f, l);
    fields[l] = out;
  }
  return {
    gid: r.gid,
    parent: r.parent,
    canonical: r.canonical,
    backlinks: links.get(r.gid) ?? [],
    treelevel: r.treelevel,
    path: r.path,
    childcount: r.childcount,
    definition: r.definition,
    title,
    status: r.status,
    channels: r.channels,
    orderings: places.get(Number(r.id)) ?? {},
    is_link: r.is_link,
    fields,
    created_on: r.created_on,
    updated_on: r.updated_on,
  };
}

function placesMap(rows: any[]) {
  const m = new Map<number, Record<string, number>>();
  for (const p of rows) {
    const id = Number(p.id);
    (m.get(id) ?? m.set(id, {}).get(id)!)[p.ordering] = Number(p.pos);
  }
  return m;
}
function linksMap(rows: any[]) {
  const m = new Map<string, string[]>();
  for (const l of rows.sort((a, b) => Number(a.id) - Number(b.id)))
    (m.get(l.canonical) ?? m.set(l.canonical, []).get(l.canonical)!).push(l.gid);
  return m;
}

/** `records/children` with an ordering: the statements of Apis' getChildren, in one transaction. */
async function children(project: string, me: any, body: any): Promise<string> {
  return await inTx("BEGIN", async (tx) => {
    const p = await one(tx, Q.project, [project]);
    await one(tx, Q.membership, [project, me.gid]);
    const langs = typeof body.language === "string" ? [body.language] : parsed(p.options).languages;
    const parent = await one(tx, Q.record, [body.record, project]);
    const ids = (
      (await tx.unsafe(Q.pageIds, [parent.gid, body.ordering, body["page.size"], body["page.top"]])) as any[]
    ).map((r) => Number(r.id));
    const byId = new Map(((await tx.unsafe(Q.rowsByIds, [ids, project])) as any[]).map((r) => [Number(r.id), r]));
    const rows = ids.map((i) => byId.get(i)).filter(Boolean);
    const places = placesMap(await tx.unsafe(Q.placesOf, [ids]));
    const links = linksMap(await tx.unsafe(Q.linksOf, [rows.filter((r) => !r.is_link).map((r) => r.gid)]));
    // The schema as Apis holds it between requests (its schema view: no schema row read per page).
    const { defs } = await schemaOf(project);
    const data: Record<string, unknown> = {};
    for (const r of rows) data[r.gid] = form(r, defs.get(r.definition)!, langs, places, links);
    return JSON.stringify({
      success: true,
      result: { children: rows.map((r) => r.gid), "children.size": Number(parent.childcount) },
      data: { records: data },
    });
  });
}

const pgText = new PgDialect();

/**
 * `records/search` with a `+word word` query and one number filter (`[field, "<", n]`): the full-text
 * match, rank and page statement Apis sends (its text made by the same statement builder,
 * src/db/pg/search.ts; the field condition written here by hand), then the page's rows, places and
 * links as for children, in one transaction.
 */
async function search(project: string, me: any, body: any): Promise<string> {
  return await inTx("BEGIN", async (tx) => {
    await one(tx, Q.project, [project]);
    await one(tx, Q.membership, [project, me.gid]);
    const s = await schemaOf(project);
    const langs = [body.language as string];
    const [name, , limit] = body.filter as [string, string, number];
    const f = s.byName.get(name)!;
    const value = sql`(r.vals -> ${f.localized ? body.language : "*"}::text ->> ${f.gid}::text)`;
    const where = sql`r.project_gid = ${project}::text AND jsonb_typeof(${sql`r.vals -> ${f.localized ? body.language : "*"}::text -> ${f.gid}::text`}) = 'number' AND ${value}::float8 < ${limit}::float8 AND r.status != 'deleted'`;
    const m = recordMatchesPg(String(body.q), body.language, where);
    const page = pgText.sqlToQuery(recordSearchPagePg(m!, { top: 0, size: Number(body["page.size"]) }));
    const found = (await tx.unsafe(page.sql, page.params as any[])) as any[];
    const ids = found.map((r) => Number(r.id));
    const byId = new Map(((await tx.unsafe(Q.rowsByIds, [ids, project])) as any[]).map((r) => [Number(r.id), r]));
    const rows = ids.map((i) => byId.get(i)).filter(Boolean);
    const places = placesMap(await tx.unsafe(Q.placesOf, [ids]));
    const links = linksMap(await tx.unsafe(Q.linksOf, [rows.filter((r) => !r.is_link).map((r) => r.gid)]));
    const data: Record<string, unknown> = {};
    for (const r of rows) data[r.gid] = form(r, s.defs.get(r.definition)!, langs, places, links);
    return JSON.stringify({
      success: true,
      result: { records: rows.map((r) => r.gid), "records.size": found.length ? Number(found[0].total) : 0 },
      data: { records: data },
    });
  });
}

/** One record update inside `tx` (Apis' statements): the answer's body, and its change item. */
async function updateIn(tx: Tx, project: string, body: any): Promise<{ out: unknown; change: PendingChange }> {
  const s = await schemaOf(project);
  const r = await one(tx, Q.record, [body.record, project]);
  await one(tx, Q.canonicals, [r.gid]);
  // Bun's SQL hands jsonb values over frozen: the changed languages are copied.
  const vals = { ...r.vals };
  for (const [lang, values] of Object.entries(body.fields ?? {}))
    for (const [name, v] of Object.entries(values as Record<string, unknown>)) {
      const f = s.byName.get(name)!;
      const key = f.localized ? lang : "*";
      vals[key] = { ...vals[key], [f.gid]: v };
    }
  r.vals = vals;
  const now = Date.now() / 1000;
  await tx.unsafe(Q.update, [JSON.stringify(vals), JSON.stringify(r.checks ?? {}), r.definition, now, r.id]);
  r.updated_on = now;
  const places = placesMap(await tx.unsafe(Q.placesOne, [r.id]));
  const links = linksMap(await tx.unsafe(Q.linksOne, [r.gid]));
  const out = {
    success: true,
    result: { record: r.gid, "report.validation": [] },
    data: { records: { [r.gid]: form(r, s.defs.get(r.definition)!, s.languages, places, links) } },
  };
  return { out, change: { type: project, action: "UPDATE", dataType: "records", dataKey: r.gid, createdOn: now } };
}

async function update(project: string, me: any, body: any): Promise<string> {
  return await inTx("BEGIN", async (tx) => {
    await one(tx, Q.project, [project]);
    await one(tx, Q.membership, [project, me.gid]);
    const u = await updateIn(tx, project, body);
    await writeChangesLast(tx, [u.change]);
    return JSON.stringify(u.out);
  });
}

/** A batch of record updates: one transaction, one change-log write. */
async function batch(project: string, me: any, body: any): Promise<string> {
  return await inTx("BEGIN", async (tx) => {
    await one(tx, Q.project, [project]);
    await one(tx, Q.membership, [project, me.gid]);
    const results: unknown[] = [];
    const changes: PendingChange[] = [];
    for (const r of body.requests as { path: string; body: any }[]) {
      if (r.path !== "records/update") throw new Error("pg-bare: only records/update in a batch");
      const u = await updateIn(tx, project, r.body);
      results.push(u.out);
      changes.push(u.change);
    }
    await writeChangesLast(tx, changes);
    return JSON.stringify({ success: true, result: { results }, data: {} });
  });
}

const PROJECT_PATH = /^\/api\/p\/([^/]+)\/(init|records\/children|records\/search|records\/update|batch)$/;

Bun.serve({
  port: Number(port),
  hostname: "127.0.0.1",
  idleTimeout: 255,
  async fetch(req) {
    const u = req.url;
    const path = u.slice(u.indexOf("/", 8));
    if (path === "/api/ping")
      return new Response(JSON.stringify({ success: true, result: {}, data: {} }), {
        headers: { "content-type": JSON_TYPE },
      });
    const who = await holder(req);
    if (!who) return refusal(401, "Permission denied");
    if (req.method === "POST" && path === "/api/users/get") {
      const body = (await req.json()) as any;
      const me = who.user;
      const text = await inTx(READ, async (tx) => {
        const target = await one(tx, Q.user, [body.user]);
        if (!target || (target.gid !== me.gid && !(await one(tx, Q.coMember, [me.gid, target.gid])))) return null;
        return JSON.stringify({
          success: true,
          result: { user: target.gid },
          data: { "cc.users": { [target.gid]: target.gid === me.gid ? userFull(target) : userShort(target) } },
        });
      });
      return text ? answer(text, who.token) : refusal(422, "No info for this user");
    }
    const m = PROJECT_PATH.exec(path);
    if (!m) return refusal(404, "Not found");
    const project = m[1]!;
    const seq = await sequence();
    if (!(await member(project, who.user, seq, m[2] === "init"))) return refusal(403, "Not a member of the project");
    if (m[2] === "init") return answer(await init(who.user, project, seq), who.token);
    const body = (await req.json()) as any;
    if (m[2] === "records/children") return answer(await children(project, who.user, body), who.token);
    if (m[2] === "records/search") return answer(await search(project, who.user, body), who.token);
    if (m[2] === "records/update") return answer(await update(project, who.user, body), who.token);
    return answer(await batch(project, who.user, body), who.token);
  },
});

// A clean exit on SIGTERM (the harness stops servers so), so `bun --cpu-prof` writes its profile.
process.on("SIGTERM", () => process.exit(0));
