import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import sharp from "sharp";
import { call, get } from "../helpers/scenario";
import { TestServer, tokenOf } from "../helpers/server";

/**
 * The role matrix: every project endpoint and every global endpoint about projects, called by
 * each kind of caller. A row lists who is admitted; everybody else gets `deny` (403 unless the
 * spec says 422), and a caller without a JWT gets 401.
 */

type Role = "owner" | "member" | "api" | "invited" | "inactive" | "stranger" | "foreign_api" | "anonymous";
const ROLES: Role[] = ["owner", "member", "api", "invited", "inactive", "stranger", "foreign_api", "anonymous"];

/** One project with a caller of each role: owner, active member, API user, invited, deactivated. */
type World = { project: string; api: { gid: string; token: string }; api2: string };
type Row = {
  name: string;
  path: (w: World) => string;
  body?: (w: World) => unknown;
  get?: boolean;
  allow: Role[];
  deny?: number;
  /** Successful calls change the world: each admitted role gets a fresh one. */
  mutates?: boolean;
  /** Runs on a fresh world before an admitted call. */
  prepare?: (w: World) => Promise<unknown>;
};

let srv: TestServer;
let users: Record<"owner" | "member" | "invited" | "inactive" | "stranger", { gid: string; token: string }>;
let foreignApi: string;
let shared: World;
let png: Buffer;
let n = 0;

async function apiUser(owner: string, project: string, name: string) {
  const c = await call(srv, `/api/p/${project}/apikeys/create`, owner, { name });
  const a = await call(srv, `/api/p/${project}/auth`, null, { api_key: c.body.result.apikey });
  return { gid: c.body.result.user as string, token: tokenOf(a) };
}

async function world(): Promise<World> {
  const project = await srv.project(users.owner.token, `World ${++n}`);
  await srv.addMember(project, users.member.gid);
  await srv.addMember(project, users.invited.gid, ["member"], "invited");
  await srv.addMember(project, users.inactive.gid, ["member"], "inactive");
  const api = await apiUser(users.owner.token, project, "api");
  const api2 = await apiUser(users.owner.token, project, "api2");
  await call(srv, `/api/p/${project}/apikeys/deactivate`, users.owner.token, { user: api2.gid });
  return { project, api, api2: api2.gid };
}

function tokenFor(role: Role, w: World): string | null {
  if (role === "anonymous") return null;
  if (role === "api") return w.api.token;
  if (role === "foreign_api") return foreignApi;
  return users[role].token;
}

const persons: Role[] = ["owner", "member", "invited", "inactive", "stranger"];
const inProject: Role[] = ["owner", "member", "api"];
const P = (op: string) => (w: World) => `/api/p/${w.project}/${op}`;
const project = (w: World) => ({ project: w.project });

const ROWS: Row[] = [
  // Global endpoints about projects, users and memberships.
  { name: "POST /api/projects/get", path: () => "/api/projects/get", body: project, allow: inProject },
  {
    name: "POST /api/projects/create",
    path: () => "/api/projects/create",
    body: () => ({ name: "New" }),
    allow: persons,
  },
  {
    name: "POST /api/projects/update",
    path: () => "/api/projects/update",
    body: (w) => ({ project: w.project, name: "Renamed" }),
    allow: inProject,
    mutates: true,
  },
  {
    name: "POST /api/projects/upload_icon",
    path: () => "/api/projects/upload_icon",
    body: (w) => {
      const f = new FormData();
      f.set("project", w.project);
      f.set("file", new Blob([png], { type: "image/png" }), "icon.png");
      return f;
    },
    allow: ["owner"],
    mutates: true,
  },
  {
    name: "POST /api/projects/delete_icon",
    path: () => "/api/projects/delete_icon",
    body: project,
    allow: ["owner"],
    mutates: true,
  },
  {
    name: "POST /api/projects/delete",
    path: () => "/api/projects/delete",
    body: project,
    allow: ["owner"],
    mutates: true,
  },
  // These two work on a deleted project only: the owner deletes it first.
  ...(["undelete", "permanent_delete"] as const).map(
    (op): Row => ({
      name: `POST /api/projects/${op}`,
      path: () => `/api/projects/${op}`,
      body: project,
      allow: ["owner"],
      mutates: true,
      prepare: (w) => call(srv, "/api/projects/delete", users.owner.token, { project: w.project }),
    }),
  ),
  {
    name: "POST /api/members/get",
    path: () => "/api/members/get",
    body: (w) => ({ project: w.project, member: users.owner.gid }),
    allow: inProject,
    deny: 422,
  },
  {
    name: "POST /api/users/get",
    path: () => "/api/users/get",
    body: () => ({ user: users.owner.gid }),
    allow: inProject,
    deny: 422,
  },
  // Sync of the project's data.
  {
    name: "POST /sync/get (project)",
    path: () => "/sync/get",
    body: (w) => ({ project: w.project, cursor: 0 }),
    allow: inProject,
  },
  { name: "POST /sync/cursors (project)", path: () => "/sync/cursors", body: project, allow: inProject },
  // Project endpoints.
  { name: "GET /api/p/<project>/init", path: P("init"), get: true, allow: inProject },
  { name: "POST members/get", path: P("members/get"), allow: inProject },
  {
    name: "POST members/invite",
    path: P("members/invite"),
    body: () => ({ email: `someone${++n}@example.test` }),
    allow: ["owner"],
    mutates: true,
  },
  {
    name: "POST members/resend_invite",
    path: P("members/resend_invite"),
    body: () => ({ user: users.invited.gid }),
    allow: ["owner"],
  },
  {
    name: "POST members/deactivate",
    path: P("members/deactivate"),
    body: () => ({ user: users.member.gid }),
    allow: ["owner"],
    mutates: true,
  },
  {
    name: "POST members/reactivate",
    path: P("members/reactivate"),
    body: () => ({ user: users.inactive.gid }),
    allow: ["owner"],
    mutates: true,
  },
  // Removing someone else needs the owner (a member removing itself is tested in members.test.ts).
  {
    name: "POST members/remove",
    path: P("members/remove"),
    body: () => ({ user: users.invited.gid }),
    allow: ["owner"],
    mutates: true,
  },
  { name: "POST backups/get", path: P("backups/get"), allow: inProject },
  {
    name: "POST backups/create",
    path: P("backups/create"),
    body: () => ({ created_by: "matrix" }),
    allow: inProject,
    mutates: true,
  },
  { name: "POST apikeys/get", path: P("apikeys/get"), allow: ["owner"] },
  {
    name: "POST apikeys/create",
    path: P("apikeys/create"),
    body: () => ({ name: "k" }),
    allow: ["owner"],
    mutates: true,
  },
  {
    name: "POST apikeys/update",
    path: P("apikeys/update"),
    body: (w) => ({ user: w.api2, name: "renamed" }),
    allow: ["owner"],
    mutates: true,
  },
  {
    name: "POST apikeys/deactivate",
    path: P("apikeys/deactivate"),
    body: (w) => ({ user: w.api.gid }),
    allow: ["owner"],
    mutates: true,
  },
  {
    name: "POST apikeys/reactivate",
    path: P("apikeys/reactivate"),
    body: (w) => ({ user: w.api2 }),
    allow: ["owner"],
    mutates: true,
  },
  {
    name: "POST apikeys/delete",
    path: P("apikeys/delete"),
    body: (w) => ({ user: w.api2 }),
    allow: ["owner"],
    mutates: true,
  },
];

beforeAll(async () => {
  // Request limits are tested in apikeys.test.ts; here they would only get in the way.
  srv = await TestServer.start({ "rate-limit": "0" });
  const [owner, member, invited, inactive, stranger] = await Promise.all(
    ["owner", "member", "invited", "inactive", "stranger"].map(async (u) => await srv.user(u)),
  );
  users = { owner: owner!, member: member!, invited: invited!, inactive: inactive!, stranger: stranger! };
  const theirs = await srv.project(users.stranger.token, "Theirs");
  foreignApi = (await apiUser(users.stranger.token, theirs, "foreign")).token;
  shared = await world();
  png = await sharp({ create: { width: 8, height: 8, channels: 3, background: "#3366cc" } })
    .png()
    .toBuffer();
});
afterAll(() => srv.stop());

describe("role matrix", () => {
  for (const row of ROWS) {
    const refused = ROLES.filter((r) => !row.allow.includes(r));
    test(`${row.name} admits ${row.allow.join(", ")} and refuses ${refused.join(", ")}`, async () => {
      const wrong: string[] = [];
      for (const role of ROLES) {
        const admitted = row.allow.includes(role);
        const w = admitted && row.mutates ? await world() : shared;
        if (admitted && row.prepare && w !== shared) await row.prepare(w);
        const r = row.get
          ? await get(srv, row.path(w), tokenFor(role, w))
          : await call(srv, row.path(w), tokenFor(role, w), row.body?.(w));
        const expected = admitted ? 200 : role === "anonymous" ? 401 : (row.deny ?? 403);
        if (r.status !== expected)
          wrong.push(`${role}: ${r.status} (expected ${expected}) ${JSON.stringify(r.body?.result)}`);
        else if (!admitted && r.body.success !== false) wrong.push(`${role}: refusal outside the envelope`);
      }
      expect(wrong).toEqual([]);
    });
  }

  test("refused calls changed nothing in the shared project", async () => {
    const r = await call(srv, `/api/p/${shared.project}/members/get`, users.owner.token, {});
    const status = Object.fromEntries(r.body.data["cc.projects_members"].map((m: any) => [m.user_gid, m.status]));
    expect(status).toEqual({
      [users.owner.gid]: "active",
      [users.member.gid]: "active",
      [users.invited.gid]: "invited",
      [users.inactive.gid]: "inactive",
      [shared.api.gid]: "active",
      [shared.api2]: "inactive",
    });
    const p = await call(srv, "/api/projects/get", users.owner.token, { project: shared.project });
    expect(p.body.data["cc.projects"][shared.project]).toMatchObject({ name: "World 1", status: "active", icon: "" });
  });

  test("an unknown project answers like a foreign one (403), revealing nothing", async () => {
    for (const op of ["members/get", "apikeys/get", "members/invite"]) {
      expect(
        (await call(srv, `/api/p/nosuchproject/${op}`, users.owner.token, { email: "x@example.test" })).status,
      ).toBe(403);
    }
    expect((await get(srv, `/api/p/nosuchproject/init`, users.owner.token)).status).toBe(403);
  });

  test("members of a deleted project are refused while its owner still reads it", async () => {
    const w = await world();
    await call(srv, "/api/projects/delete", users.owner.token, { project: w.project });
    expect((await get(srv, `/api/p/${w.project}/init`, users.member.token)).status).toBe(403);
    expect((await get(srv, `/api/p/${w.project}/init`, w.api.token)).status).toBe(403);
    expect((await get(srv, `/api/p/${w.project}/init`, users.owner.token)).status).toBe(200);
    expect((await call(srv, `/api/p/${w.project}/auth`, null, { api_key: "apis_whatever" })).status).toBe(403);
  });
});

describe("strangers and incomplete bodies", () => {
  test("a stranger sending an empty body to a project endpoint gets 403, not a 400 that describes the body", async () => {
    const s = await TestServer.start({ "rate-limit": "0" });
    try {
      const owner = await s.user("owner1");
      const stranger = await s.user("stranger1");
      const project = await s.project(owner.token, "Closed");
      for (const path of ["members/invite", "apikeys/create", "assets/upload", "backups/create", "jobs/get"]) {
        const r = await s.call(`/api/p/${project}/${path}`, { token: stranger.token, body: {} });
        expect([path, r.status]).toEqual([path, 403]);
      }
      const member = await s.call(`/api/p/${project}/members/invite`, { token: owner.token, body: {} });
      expect(member.status).toBe(400);
    } finally {
      await s.stop();
    }
  });
});
