// The console's one door to the server: every /api, /sync, /dam and /media address and every
// answer shape is known here and nowhere else. Answers are turned into the small view types below,
// so when a shape on the wire changes (docs/*.md; the reference-compat work), this file changes and
// the pages do not.
//
// Assets and the DAM speak the reference's shapes (docs/assets.md, docs/dam.md): the asset form
// (pathname, path, is_file, `type` = extension, status "published"/"deleted", info, metadata
// fields {type, is_localized, value}), a root folder `/` per project, children/search with
// page.top, uploads in `upload_file`, one dotted metadata field per metadata/set, autocomplete
// completions, dam/info's reference members (versions and publication come from dam/details).
//
// Projects, backups, API keys, members, the account and the project settings speak the current
// shapes too (docs/api.md, backups.md, apikeys.md, members.md, account.md, settings.md): the full
// project form (options, backups {versions, next_version}, build), backups known by their integer
// version (the list with details from the backups/get extension; no `backups` sync items, a
// `cc.projects` UPDATE instead), jobs/get's result.job, apikeys/create's `apikey` and the listing's
// result["apikeys.info"], members/get's result.users, reset_password_request's username_or_email,
// account/update's top-level members, and the settings endpoints (languages, channels, orderings,
// fieldlists).

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

type Envelope = { success: boolean; result: any; data: any };

function errorOf(status: number, body: Envelope | null): ApiError {
  const r = body?.result ?? {};
  const info = (r.info && typeof r.info === "object" ? r.info : {}) as Record<string, unknown>;
  const issues = (
    Array.isArray(r.validation) ? r.validation : Array.isArray(info.validation) ? info.validation : []
  ) as Issue[];
  return new ApiError(
    typeof r.code === "number" ? r.code : status,
    status,
    typeof r.message === "string" ? r.message : `HTTP ${status}`,
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
async function call(
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
function upload(
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

// ---------------------------------------------------------------------------------------------
// View types (what the pages work with)

export type User = {
  gid: string;
  username: string | null;
  name: string;
  avatar: string | null;
  status: string;
  email?: string;
  language?: string;
  timezone?: string;
};

/** One entry of a keyed, ordered project setting (a channel, an ordering, a fieldlist). */
export type Setting = { key: string; name: string };

export type ProjectOptions = {
  timezone: string;
  /** Ordered; the first is the project's main language. */
  languages: string[];
  /** In display order; the `__all__` channel first. */
  channels: Setting[];
  orderings: Setting[];
  fieldlists: Setting[];
};

/** A complete backup as the project form lists it. */
export type BackupVersion = { version: number; name: string; createdBy: string; timestamp: number };

export type Project = {
  gid: string;
  name: string;
  icon: string;
  owner: string;
  status: "active" | "deleted";
  /** The settings (empty lists in the reduced form, which has no options). */
  options: ProjectOptions;
  /** Complete backups, newest first. */
  backups: BackupVersion[];
  nextBackupVersion: number;
};

export type Membership = {
  project: string;
  user: string;
  status: "active" | "inactive" | "invited" | "declined";
  roles: string[];
  rateLimit?: number | null;
};

export type Session = {
  user: string;
  version: string;
  ccCursor: number;
  users: Map<string, User>;
  projects: Map<string, Project>;
  memberships: Membership[];
  languages: [code: string, name: string][];
};

export type ProjectState = {
  project: Project | null;
  cursor: number | null;
  ccCursor: number;
  members: string[];
  users: Map<string, User>;
  memberships: Membership[];
};

export type Asset = {
  gid: string;
  /** Where it is: `/products/shoe.jpg`. */
  pathname: string;
  /** Its folder's pathname: `/` for the top level (the project's root folder). */
  path: string;
  kind: "folder" | "file" | "image";
  name: string;
  /** The file's lowercase extension, from its content ("" for folders). */
  extension: string;
  size: number;
  width: number | null;
  height: number | null;
  version: number;
  storageName: string | null;
  /** Whether the DAM publishes the original (not in the asset form: asked with a search, see withPublication). */
  published: boolean;
  status: "active" | "deleted";
  /** The metadata fields by dotted name: their values (a localized one: language → text). */
  metadata: Record<string, unknown>;
  extracted: Record<string, unknown>;
  createdOn: number;
  updatedOn: number;
};

export type ApiKey = {
  user: string;
  name: string;
  prefix: string;
  status: "active" | "inactive";
  rateLimit: number | null;
  createdOn: number;
  lastUsedOn: number | null;
};

export type Backup = {
  version: number;
  name: string;
  createdBy: string;
  notes: string;
  status: "creating" | "ready" | "failed";
  size: number;
  rows: number;
  files: number;
  /** When the snapshot was taken. */
  timestamp: number;
  completedOn: number | null;
  error: string | null;
  /** The token of the job that writes it. */
  job: string | null;
};

export type Job = {
  token: string;
  project: string | null;
  kind: string;
  status: "queued" | "processing" | "done" | "rejected";
  total: number | null;
  remaining: number | null;
  error: string | null;
};

export type SyncItem = {
  type: string;
  cursor: number;
  action: "INSERT" | "UPDATE" | "DELETE";
  dataType: string;
  key: string;
  data: unknown;
};

// ---------------------------------------------------------------------------------------------
// Wire → view

const own = (o: unknown, k: string) => !!o && typeof o === "object" && Object.prototype.hasOwnProperty.call(o, k);

function entries(dict: unknown): [string, any][] {
  return dict && typeof dict === "object" ? Object.entries(dict as Record<string, unknown>) : [];
}

function toUser(u: any): User {
  return {
    gid: u.gid,
    username: u.username ?? null,
    name: u.name ?? "",
    avatar: u.avatar ?? null,
    status: u.status ?? "active",
    email: own(u, "email") ? u.email : undefined,
    language: u.options?.language,
    timezone: u.options?.timezone,
  };
}

/** A keyed setting in its display order (keys the order names but the dictionary lacks are left out). */
function settingList(options: any, dict: string, order: string): Setting[] {
  const names = options?.[dict];
  const keys: unknown[] = Array.isArray(options?.[order]) ? options[order] : [];
  return keys
    .filter((k): k is string => typeof k === "string" && own(names, k))
    .map((k) => ({ key: k, name: String(names[k]) }));
}

function toProject(p: any): Project {
  const o = p.options && typeof p.options === "object" ? p.options : {};
  const versions: any[] = Array.isArray(p.backups?.versions) ? p.backups.versions : [];
  return {
    gid: p.gid,
    name: p.name,
    icon: p.icon ?? "",
    owner: p.owner,
    status: p.status,
    options: {
      timezone: typeof o.timezone === "string" ? o.timezone : "",
      languages: Array.isArray(o.languages) ? o.languages.filter((l: unknown) => typeof l === "string") : [],
      channels: settingList(o, "channels", "orderedchannels"),
      orderings: settingList(o, "orderings", "orderedorderings"),
      fieldlists: settingList(o, "fieldlists", "orderedfieldlists"),
    },
    backups: versions.map((v) => ({
      version: v.version,
      name: v.name ?? "",
      createdBy: v.created_by ?? "",
      timestamp: v.timestamp,
    })),
    nextBackupVersion: typeof p.backups?.next_version === "number" ? p.backups.next_version : 1,
  };
}

function toMembership(m: any): Membership {
  return {
    project: m.project_gid,
    user: m.user_gid,
    status: m.status,
    roles: m.roles ?? [],
    rateLimit: m.options && own(m.options, "rate_limit_per_second") ? m.options.rate_limit_per_second : undefined,
  };
}

function users(data: any): Map<string, User> {
  return new Map(entries(data?.["cc.users"]).map(([k, v]) => [k, toUser(v)]));
}
function projects(data: any): Map<string, Project> {
  return new Map(entries(data?.["cc.projects"]).map(([k, v]) => [k, toProject(v)]));
}
function memberships(data: any): Membership[] {
  return Array.isArray(data?.["cc.projects_members"]) ? data["cc.projects_members"].map(toMembership) : [];
}

function toSession(env: Envelope): Session {
  return {
    user: env.result.user,
    version: env.result["cc.version"] ?? "",
    ccCursor: env.result["cc.cursor"] ?? 0,
    users: users(env.data),
    projects: projects(env.data),
    memberships: memberships(env.data),
    languages: entries(env.data?.["cc.languages"]).map(([k, v]) => [k, String(v)]),
  };
}

/** Raster types the DAM can transform (SVG and PDF have a size but are not rendered). */
const RASTER = new Set(["jpg", "png", "gif", "webp", "tiff", "avif", "heic", "heif"]);

function toAsset(a: any): Asset {
  const info = a.info && typeof a.info === "object" ? a.info : {};
  const isFile = !!a.is_file;
  const type = typeof a.type === "string" ? a.type : "";
  const metadata: Record<string, unknown> = {};
  for (const [k, v] of entries(a.metadata)) metadata[k] = v && typeof v === "object" && own(v, "value") ? v.value : v;
  return {
    gid: a.gid,
    pathname: a.pathname ?? "",
    path: a.path ?? "",
    kind: !isFile ? "folder" : info.width != null ? "image" : "file",
    name: a.name,
    extension: type,
    size: info.filesize ?? 0,
    width: isFile ? (info.width ?? null) : null,
    height: isFile ? (info.height ?? null) : null,
    version: a.version ?? 1,
    // The DAM's storage pathname of the current version.
    storageName: isFile && type && a.version ? `${a.gid}~${a.version}.${type}` : null,
    published: false,
    status: a.status === "deleted" ? "deleted" : "active",
    metadata,
    extracted: info.metadata && typeof info.metadata === "object" ? info.metadata : {},
    createdOn: a.created_on,
    updatedOn: a.updated_on,
  };
}

/** Whether the DAM can render thumbnails of it. */
export function isRaster(a: Asset): boolean {
  return a.kind === "image" && !!a.storageName && RASTER.has(a.extension);
}

function assetMap(data: any): Map<string, Asset> {
  return new Map(entries(data?.assets).map(([k, v]) => [k, toAsset(v)]));
}

/** The assets named by `gids`, in that order (gids the answer lacks are left out). */
function ordered(gids: unknown, map: Map<string, Asset>): Asset[] {
  return (Array.isArray(gids) ? gids : []).map((g) => map.get(g)).filter((a): a is Asset => !!a);
}

function toApiKey(k: any): ApiKey {
  return {
    user: k.user,
    name: k.name,
    prefix: k.key_prefix,
    status: k.status,
    rateLimit: k.rate_limit_per_second ?? null,
    createdOn: k.created_on,
    lastUsedOn: k.last_used_on ?? null,
  };
}

function toBackup(b: any): Backup {
  return {
    version: b.version,
    name: b.name ?? "",
    createdBy: b.created_by ?? "",
    notes: b.notes ?? "",
    status: b.status,
    size: b.size ?? 0,
    rows: b.rows ?? 0,
    files: b.files ?? 0,
    timestamp: b.timestamp,
    completedOn: b.completed_on ?? null,
    error: b.error ?? null,
    job: typeof b["job.token"] === "string" ? b["job.token"] : null,
  };
}

export function toJob(token: string, j: any): Job {
  const info = j?.info ?? {};
  return {
    token,
    project: j?.project_gid ?? null,
    kind: j?.job ?? "",
    status: j?.status ?? "queued",
    total: typeof info.total === "number" ? info.total : null,
    remaining: typeof info.remaining === "number" ? info.remaining : null,
    error: typeof info.error === "string" ? info.error : null,
  };
}

export function toSyncItem(i: any): SyncItem {
  return {
    type: i.type,
    cursor: i.cursor,
    action: i.action,
    dataType: i.data_type,
    key: i.data_key,
    data: i.data ?? null,
  };
}

// ---------------------------------------------------------------------------------------------
// Public files

export const media = {
  avatar: (file: string) => `/media/avatars/${encodeURIComponent(file)}`,
  icon: (file: string) => `/media/icons/${encodeURIComponent(file)}`,
};

// ---------------------------------------------------------------------------------------------
// Account and session (/api)

const j = (o: Record<string, unknown>) => o;

export const account = {
  async login(username: string, password: string): Promise<Session> {
    return toSession(await call("/api/login", { username, password }));
  },
  async init(): Promise<Session> {
    return toSession(await call("/api/init"));
  },
  async usernameAvailable(username: string): Promise<{ available: boolean; message?: string }> {
    const r = (await call("/api/username", { username }, { anonymous: true })).result;
    return { available: !!r.available, message: r.validation?.[0]?.message };
  },
  /** Step one of signup: checks everything and mails a code. Returns the validation code. */
  async signupRequest(p: { username: string; email: string; password: string; language?: string }): Promise<string> {
    return (await call("/api/signup_request", j(p), { anonymous: true })).result.validation_code;
  },
  async signup(p: {
    username: string;
    email: string;
    password: string;
    validationCode: string;
    code: string;
  }): Promise<Session> {
    const body = {
      username: p.username,
      email: p.email,
      password: p.password,
      validation_code: p.validationCode,
      verification_code: p.code,
    };
    return toSession(await call("/api/signup", body));
  },
  async resetRequest(usernameOrEmail: string): Promise<string> {
    return (await call("/api/reset_password_request", { username_or_email: usernameOrEmail }, { anonymous: true }))
      .result.validation_code;
  },
  async reset(p: { username: string; password: string; validationCode: string; code: string }): Promise<Session> {
    const body = {
      username: p.username,
      new_password: p.password,
      validation_code: p.validationCode,
      verification_code: p.code,
    };
    return toSession(await call("/api/reset_password", body));
  },
  /** Changes the profile; a new password needs the current one (the answer renews the JWT). */
  async update(p: {
    username?: string;
    name?: string;
    language?: string;
    timezone?: string;
    password?: string;
    currentPassword?: string;
  }): Promise<User> {
    const body: Record<string, unknown> = {};
    if (p.username !== undefined) body.username = p.username;
    if (p.name !== undefined) body.name = p.name;
    if (p.language !== undefined) body.language = p.language;
    if (p.timezone !== undefined) body.timezone = p.timezone;
    if (p.password !== undefined) {
      body.password = p.password;
      body.current_password = p.currentPassword ?? "";
    }
    const env = await call("/api/account/update", body);
    return users(env.data).get(env.result.user)!;
  },
  async emailRequest(email: string): Promise<string> {
    return (await call("/api/account/update_email_request", { email })).result.validation_code;
  },
  async emailChange(email: string, validationCode: string, code: string): Promise<User> {
    const env = await call("/api/account/update_email", {
      email,
      validation_code: validationCode,
      verification_code: code,
    });
    return users(env.data).get(env.result.user)!;
  },
  async uploadAvatar(file: File): Promise<User> {
    const form = new FormData();
    form.append("file", file);
    const env = await upload("/api/account/upload_avatar", form);
    return users(env.data).get(env.result.user)!;
  },
  async deleteAvatar(): Promise<User> {
    const env = await call("/api/account/delete_avatar", {});
    return users(env.data).get(env.result.user)!;
  },
  async acceptInvite(project: string): Promise<void> {
    await call("/api/account/accept_invite", { project });
  },
  async declineInvite(project: string): Promise<void> {
    await call("/api/account/decline_invite", { project });
  },
  async leaveProject(project: string): Promise<void> {
    await call("/api/account/leave_project", { project });
  },
  async deleteAccount(): Promise<void> {
    await call("/api/account/delete", { confirm: true });
  },
};

export type Invitation = {
  invitee: User | undefined;
  project: Project | undefined;
  owner: User | undefined;
  members: string[];
};

export const invitations = {
  /** What an invitation link names; works without a login. */
  async get(project: string, invitee: string): Promise<Invitation> {
    const env = await call("/api/init_invite", { project, invitee }, { anonymous: true });
    const us = users(env.data);
    const p = projects(env.data).get(env.result.project);
    return {
      invitee: us.get(env.result.invitee),
      project: p,
      owner: p ? us.get(p.owner) : undefined,
      members: env.result.project_members ?? [],
    };
  },
  async decline(project: string, invitee: string): Promise<void> {
    await call("/api/decline_invite", { project, invitee }, { anonymous: true });
  },
};

// ---------------------------------------------------------------------------------------------
// Projects (/api/projects, /api/p/<project>)

async function projectOf(env: Envelope): Promise<Project | undefined> {
  return projects(env.data).get(env.result.project);
}

export const projectsApi = {
  async create(name: string, timezone?: string): Promise<Project> {
    return (await projectOf(await call("/api/projects/create", timezone ? { name, timezone } : { name })))!;
  },
  async rename(project: string, name: string): Promise<Project> {
    return (await projectOf(await call("/api/projects/update", { project, name })))!;
  },
  async setTimezone(project: string, timezone: string): Promise<Project> {
    return (await projectOf(await call("/api/projects/update", { project, timezone })))!;
  },
  async uploadIcon(project: string, file: File): Promise<Project> {
    const form = new FormData();
    form.append("project", project);
    form.append("file", file);
    return (await projectOf(await upload("/api/projects/upload_icon", form)))!;
  },
  async deleteIcon(project: string): Promise<Project> {
    return (await projectOf(await call("/api/projects/delete_icon", { project })))!;
  },
  async remove(project: string): Promise<void> {
    await call("/api/projects/delete", { project });
  },
  async undelete(project: string): Promise<void> {
    await call("/api/projects/undelete", { project });
  },
  async removeForGood(project: string): Promise<void> {
    await call("/api/projects/permanent_delete", { project });
  },
  /** The project init payload: the project, its people, its cursor. */
  async init(project: string): Promise<ProjectState> {
    const env = await call(`/api/p/${project}/init`);
    return {
      project: env.result.project ? (projects(env.data).get(env.result.project) ?? null) : null,
      cursor: env.result.cursor ?? null,
      ccCursor: env.result["cc.cursor"] ?? 0,
      members: env.result.project_members ?? [],
      users: users(env.data),
      memberships: memberships(env.data),
    };
  },
};

const p = (project: string, path: string) => `/api/p/${project}/${path}`;

export type Member = { user: User; membership: Membership };

export const membersApi = {
  async list(project: string): Promise<Member[]> {
    const env = await call(p(project, "members/get"), {});
    const us = users(env.data);
    const ms = new Map(memberships(env.data).map((m) => [m.user, m]));
    return ((env.result.users ?? []) as string[])
      .filter((g) => us.has(g) && ms.has(g))
      .map((g) => ({ user: us.get(g)!, membership: ms.get(g)! }));
  },
  async invite(project: string, email: string, language?: string): Promise<{ user: string; mailSent: boolean }> {
    const r = (await call(p(project, "members/invite"), language ? { email, language } : { email })).result;
    return { user: r.user, mailSent: !!r.mail_sent };
  },
  async resend(project: string, user: string): Promise<boolean> {
    return !!(await call(p(project, "members/resend_invite"), { user })).result.mail_sent;
  },
  async deactivate(project: string, user: string) {
    await call(p(project, "members/deactivate"), { user });
  },
  async reactivate(project: string, user: string) {
    await call(p(project, "members/reactivate"), { user });
  },
  /** Removes a member, or withdraws an invitation. */
  async remove(project: string, user: string) {
    await call(p(project, "members/remove"), { user });
  },
};

export const apiKeysApi = {
  async list(project: string): Promise<ApiKey[]> {
    const env = await call(p(project, "apikeys/get"), {});
    const dict = new Map(entries(env.result["apikeys.info"]).map(([k, v]) => [k, toApiKey({ ...v, user: k })]));
    return ((env.result.apikeys ?? []) as string[]).map((g) => dict.get(g)).filter((k): k is ApiKey => !!k);
  },
  /** Creates a key; the key itself is in this answer only. */
  async create(project: string, name: string, rateLimit: number | null): Promise<{ user: string; key: string }> {
    const r = (await call(p(project, "apikeys/create"), { name, rate_limit_per_second: rateLimit })).result;
    return { user: r.user, key: r.apikey };
  },
  async update(project: string, user: string, changes: { name?: string; rateLimit?: number | null }) {
    const body: Record<string, unknown> = { user };
    if (changes.name !== undefined) body.name = changes.name;
    if (changes.rateLimit !== undefined) body.rate_limit_per_second = changes.rateLimit;
    await call(p(project, "apikeys/update"), body);
  },
  async deactivate(project: string, user: string) {
    await call(p(project, "apikeys/deactivate"), { user });
  },
  async reactivate(project: string, user: string) {
    await call(p(project, "apikeys/reactivate"), { user });
  },
  async remove(project: string, user: string) {
    await call(p(project, "apikeys/delete"), { user });
  },
};

export const backupsApi = {
  /** Every backup of the project with its details (being written and failed ones too), newest first. */
  async list(project: string): Promise<Backup[]> {
    const env = await call(p(project, "backups/get"), {});
    return (Array.isArray(env.result.backups) ? env.result.backups : []).map(toBackup);
  },
  /** Starts a backup (`createdBy`: who makes it); answers its version and the job token to follow. */
  async create(
    project: string,
    b: { createdBy: string; name?: string; notes?: string },
  ): Promise<{ version: number; job: string }> {
    const body: Record<string, string> = { created_by: b.createdBy };
    if (b.name?.trim()) body.name = b.name.trim();
    if (b.notes?.trim()) body.notes = b.notes;
    const r = (await call(p(project, "backups/create"), body)).result;
    return { version: r.version, job: r["job.token"] };
  },
  /** Starts a restore; answers the job token. */
  async restore(project: string, version: number): Promise<string> {
    return (await call(p(project, "backups/restore"), { version })).result["job.token"];
  },
  async remove(project: string, version: number) {
    await call(p(project, "backups/delete"), { version });
  },
};

export type SettingKind = "channel" | "ordering" | "fieldlist";
const SETTING_PATHS: Record<SettingKind, string> = {
  channel: "channels",
  ordering: "orderings",
  fieldlist: "fieldlists",
};

/** The project settings (docs/settings.md); every call answers the changed project. */
export const settingsApi = {
  async addLanguage(project: string, language: string): Promise<Project> {
    return (await projectOf(await call(p(project, "languages/add"), { language })))!;
  },
  /** Places a language before another (null: at the end); the first is the main language. */
  async moveLanguage(project: string, language: string, before: string | null): Promise<Project> {
    return (await projectOf(
      await call(p(project, "languages/move"), before ? { language, before_language: before } : { language }),
    ))!;
  },
  /** Removes a language; its values are kept (hidden) unless `removeValues` confirms deleting them. */
  async removeLanguage(
    project: string,
    language: string,
    removeValues: boolean,
  ): Promise<{ project: Project; removedValues: number }> {
    const env = await call(
      p(project, "languages/remove"),
      removeValues ? { language, remove_values: true } : { language },
    );
    return {
      project: (await projectOf(env))!,
      removedValues: typeof env.result.removed_values === "number" ? env.result.removed_values : 0,
    };
  },
  async create(project: string, kind: SettingKind, name: string): Promise<{ key: string; project: Project }> {
    const env = await call(p(project, `${SETTING_PATHS[kind]}/create`), { name });
    return { key: env.result[kind], project: (await projectOf(env))! };
  },
  async rename(project: string, kind: SettingKind, key: string, name: string): Promise<Project> {
    return (await projectOf(await call(p(project, `${SETTING_PATHS[kind]}/update`), { [kind]: key, name })))!;
  },
  /** Places an entry before another (null: at the end). */
  async move(project: string, kind: SettingKind, key: string, before: string | null): Promise<Project> {
    const body: Record<string, string> = { [kind]: key };
    if (before) body[`before_${kind}`] = before;
    return (await projectOf(await call(p(project, `${SETTING_PATHS[kind]}/move`), body)))!;
  },
  async remove(project: string, kind: SettingKind, key: string): Promise<Project> {
    return (await projectOf(await call(p(project, `${SETTING_PATHS[kind]}/delete`), { [kind]: key })))!;
  },
};

export const jobsApi = {
  async get(project: string | null, tokenOfJob: string): Promise<Job> {
    const env = await call(project ? p(project, "jobs/get") : "/api/jobs/get", { token: tokenOfJob });
    return toJob(tokenOfJob, env.result.job);
  },
};

// ---------------------------------------------------------------------------------------------
// Assets (/api/p/<project>/assets) and the DAM (/dam)

export type AssetVersion = {
  version: number;
  storageName: string;
  size: number;
  createdOn: number | null;
  current: boolean;
};
export type Page<T> = { items: T[]; total: number; cursor: string | null };
export type FolderNode = { asset: Asset; children: FolderNode[] };

/** The root folder's gid per project (it never changes). */
const roots = new Map<string, Promise<string>>();

function rootOf(project: string): Promise<string> {
  let found = roots.get(project);
  if (!found) {
    found = call(p(project, "assets/root"), {}).then((env) => String(env.result.root));
    found.catch(() => roots.delete(project));
    roots.set(project, found);
  }
  return found;
}

/** Every page of a paged call (`page.top`/`page.size`), up to `max` items. */
async function allPages(
  path: string,
  body: Record<string, unknown>,
  list: string,
  max = 10000,
): Promise<{ items: Asset[]; total: number }> {
  const items: Asset[] = [];
  let total = 0;
  for (let top = 0; top < max; ) {
    const size = Math.min(1000, max - top);
    const env = await call(path, { ...body, "page.top": top, "page.size": size });
    const gids: unknown[] = Array.isArray(env.result[list]) ? env.result[list] : [];
    items.push(...ordered(gids, assetMap(env.data)));
    total = env.result[`${list}.size`] ?? items.length;
    top += gids.length;
    if (gids.length < size || top >= total) break;
  }
  return { items, total };
}

/** Marks the files the DAM publishes (one search over the gids shown; the asset form does not say). */
async function withPublication(project: string, assets: Asset[]): Promise<Asset[]> {
  const files = assets.filter((a) => a.kind !== "folder").map((a) => a.gid);
  if (!files.length) return assets;
  const filter = [
    "and",
    "",
    [
      ["published", "is_true"],
      ["gid", "in", files],
      ["status", "in", ["published", "deleted"]],
    ],
  ];
  const env = await call(p(project, "assets/search"), { filter, "page.size": files.length });
  const published = new Set<string>(Array.isArray(env.result.assets) ? env.result.assets : []);
  return assets.map((a) => (published.has(a.gid) ? { ...a, published: true } : a));
}

/** The search filter of the console's type choice. */
function typeFilter(kind: string): unknown[] | null {
  if (kind === "image" || kind === "folder") return ["type", "is", kind];
  if (kind === "file")
    return [
      "and",
      "",
      [
        ["type", "is", "file"],
        ["not", "", ["type", "is", "image"]],
      ],
    ];
  return null;
}

export const assetsApi = {
  /** The items of a folder (null: the top level, i.e. the project's root folder), folders first. */
  async children(project: string, folder: string | null): Promise<Asset[]> {
    const { items } = await allPages(
      p(project, "assets/children"),
      folder ? { asset: folder } : { pathname: "/" },
      "children",
    );
    return withPublication(project, items);
  },
  async get(project: string, gids: string[]): Promise<Map<string, Asset>> {
    if (!gids.length) return new Map();
    return assetMap((await call(p(project, "assets/get"), { assets: gids })).data);
  },
  /** The active folder hierarchy below the root. */
  async folders(project: string): Promise<FolderNode[]> {
    const { items } = await allPages(
      p(project, "assets/search"),
      { filter: ["type", "is", "folder"], sort: "pathname" },
      "assets",
    );
    const nodes = new Map(items.map((a) => [a.pathname, { asset: a, children: [] as FolderNode[] }]));
    const top: FolderNode[] = [];
    for (const n of nodes.values()) (nodes.get(n.asset.path)?.children ?? top).push(n);
    const byName = (list: FolderNode[]) => {
      list.sort((x, y) => x.asset.name.localeCompare(y.asset.name));
      list.forEach((n) => byName(n.children));
    };
    byName(top);
    // Folders below a folder that is not found (none, unless one changed meanwhile) are left out.
    return top.filter((n) => n.asset.path === "/");
  },
  async createFolder(project: string, name: string, parent: string | null): Promise<Asset> {
    const env = await call(p(project, "assets/create"), parent ? { name, parent } : { name });
    return assetMap(env.data).get(env.result.asset)!;
  },
  async rename(project: string, asset: string, name: string): Promise<Asset> {
    const env = await call(p(project, "assets/update"), { asset, name });
    return assetMap(env.data).get(env.result.asset)!;
  },
  /** Moves items into a folder (null: the top level). */
  async move(project: string, assets: string[], parent: string | null) {
    await call(p(project, "assets/move"), { assets, parent: parent ?? (await rootOf(project)) });
  },
  async trash(project: string, assets: string[]) {
    await call(p(project, "assets/delete"), { assets });
  },
  async restore(project: string, assets: string[]) {
    await call(p(project, "assets/undelete"), { assets });
  },
  async removeForGood(project: string, assets: string[]) {
    await call(p(project, "assets/permanent_delete"), { assets });
  },
  async upload(
    project: string,
    file: File,
    parent: string | null,
    onProgress?: (sent: number, total: number) => void,
    signal?: AbortSignal,
  ): Promise<Asset> {
    const form = new FormData();
    if (parent) form.append("parent", parent);
    else form.append("pathname", "/");
    form.append("upload_file", file, file.name);
    const env = await upload(p(project, "assets/upload"), form, onProgress, signal);
    return assetMap(env.data).get(env.result.asset)!;
  },
  /** Sets one metadata field of an asset (a dotted name such as `shop.sku`; a one-line text as typed). */
  async setMetadata(project: string, asset: string, name: string, value: string): Promise<void> {
    await call(p(project, "assets/metadata/set"), { asset, name, type: "textline", is_localized: false, value });
  },
  async clearMetadata(project: string, asset: string, name: string): Promise<void> {
    await call(p(project, "assets/metadata/clear"), { asset, name });
  },
  /** Replaces the file of an asset with a new version (the asset keeps its gid). */
  async replace(
    project: string,
    asset: string,
    file: File,
    onProgress?: (sent: number, total: number) => void,
  ): Promise<Asset> {
    const form = new FormData();
    form.append("asset", asset);
    form.append("upload_file", file, file.name);
    const env = await upload(p(project, "assets/upload_update"), form, onProgress);
    return assetMap(env.data).get(env.result.asset)!;
  },
  /** The kept versions of an asset's file, newest first. */
  async versions(project: string, asset: Asset): Promise<AssetVersion[]> {
    if (!asset.storageName) return [];
    const r = await details(project, asset.storageName);
    return (Array.isArray(r.versions) ? r.versions : []).map((v: any) => ({
      version: v.version,
      storageName: v.storage_pathname,
      size: v.size ?? 0,
      createdOn: v.created_on ?? null,
      current: !!v.current,
    }));
  },
  /** Search: words (`q`), the trash (deleted items) and a type; `size` results from the first. */
  async search(
    project: string,
    q: { text?: string; trash?: boolean; kind?: string; size?: number },
  ): Promise<Page<Asset>> {
    const filter: unknown[] = [];
    if (q.trash) filter.push(["status", "is", "deleted"]);
    const byType = q.kind ? typeFilter(q.kind) : null;
    if (byType) filter.push(byType);
    const body: Record<string, unknown> = {};
    if (q.text?.trim()) body.q = q.text.trim();
    if (filter.length) body.filter = ["and", "", filter];
    // Without words: the trash newest first; otherwise folders first, then by name.
    if (q.trash && !q.text?.trim()) body.sort = "-updated_on";
    const { items, total } = await allPages(p(project, "assets/search"), body, "assets", q.size ?? 100);
    return { items: await withPublication(project, items), total, cursor: null };
  },
  /** Names starting with what was typed. */
  async suggest(project: string, text: string): Promise<string[]> {
    if (!text.trim()) return [];
    return (
      (
        await call(p(project, "assets/search/autocomplete"), {
          field: "name",
          fieldq: text.trim(),
          "completions.size": 8,
        })
      ).result.completions ?? []
    );
  },
  /** Makes the original public; answers its URL. */
  async publish(project: string, asset: Asset): Promise<string> {
    return (await call(`/dam/p/${project}/publish/${encodeURIComponent(asset.storageName!)}`)).result.public_url;
  },
  async unpublish(project: string, asset: Asset): Promise<void> {
    await call(`/dam/p/${project}/unpublish/${encodeURIComponent(asset.storageName!)}`);
  },
  /** The public URL of a published original (null when not published). */
  async publicUrl(project: string, asset: Asset): Promise<string | null> {
    if (!asset.storageName) return null;
    return (await details(project, asset.storageName)).public_url ?? null;
  },
};

/** `dam/details` of one stored version: versions, publication, transforms. */
async function details(project: string, storageName: string): Promise<any> {
  return (await call(`/dam/p/${project}/details/${encodeURIComponent(storageName)}`)).result;
}

// Thumbnails: one transform call per image gives a public /media URL. Calls are queued (the server
// renders a few at a time and answers 503 beyond), retried on 503 and remembered per source and size.

/** The device pixel ratio rounded to the few steps the console asks for (sharper on HiDPI, few variants). */
export function thumbDpr(ratio = typeof window !== "undefined" ? window.devicePixelRatio : 1): number {
  const steps = [1, 1.5, 2, 3, 4];
  return steps.find((s) => s >= ratio - 0.01) ?? 4;
}

const thumbCache = new Map<string, Promise<string>>();
const thumbQueue: (() => void)[] = [];
let thumbRunning = 0;
const THUMB_PARALLEL = 4;

function nextThumb() {
  while (thumbRunning < THUMB_PARALLEL && thumbQueue.length) {
    thumbRunning++;
    thumbQueue.shift()!();
  }
}

async function transformOnce(project: string, storageName: string, options: string): Promise<string> {
  for (let attempt = 0; ; attempt++) {
    try {
      return (await call(`/dam/p/${project}/transform/${encodeURIComponent(storageName)}/${options}`)).result
        .public_url;
    } catch (e) {
      if (!(e instanceof ApiError) || e.status !== 503 || attempt >= 8) throw e;
      await new Promise((r) => setTimeout(r, 250 * (attempt + 1)));
    }
  }
}

export function thumbnailUrl(project: string, asset: Asset, size: number, dpr = thumbDpr()): Promise<string> {
  const options = `fit=${size},${size}/dpr=${dpr}`;
  const key = `${project}/${asset.storageName}/${options}`;
  let found = thumbCache.get(key);
  if (!found) {
    found = new Promise<string>((resolve, reject) => {
      thumbQueue.push(() => {
        transformOnce(project, asset.storageName!, options)
          .then(resolve, reject)
          .finally(() => {
            thumbRunning--;
            nextThumb();
          });
      });
      nextThumb();
    });
    found.catch(() => thumbCache.delete(key));
    thumbCache.set(key, found);
  }
  return found;
}

// ---------------------------------------------------------------------------------------------
// Sync (/sync/get for catching up without a socket; the socket lives in live.ts)

export const syncApi = {
  socketPath: "/sync/io",
  async since(
    ccCursor: number,
    project?: { gid: string; cursor: number },
  ): Promise<{ items: SyncItem[]; more: boolean; reinit: boolean }> {
    const body: Record<string, unknown> = { cc_cursor: ccCursor };
    if (project) Object.assign(body, { project: project.gid, cursor: project.cursor });
    const r = (await call("/sync/get", body)).result;
    return { items: (r.sync ?? []).map(toSyncItem), more: !!r.warning && !r.reinit, reinit: !!r.reinit };
  },
  /** initsync's payload for the socket. */
  initPayload(ccCursor: number, project?: { gid: string; cursor: number }): Record<string, unknown> {
    return project
      ? { "cc.cursor": ccCursor, project: project.gid, cursor: project.cursor }
      : { "cc.cursor": ccCursor };
  },
  /** An initsync acknowledgement: items, or an error envelope. */
  readAck(ack: unknown): { items: SyncItem[] } | { error: ApiError } {
    if (Array.isArray(ack)) return { items: ack.map(toSyncItem) };
    return { error: errorOf(0, ack as Envelope) };
  },
  readJwt(payload: unknown): string | null {
    const jwt = (payload as { JWT?: unknown } | null)?.JWT;
    return typeof jwt === "string" ? jwt : null;
  },
};

// ---------------------------------------------------------------------------------------------
// Schema: fields, classes, definitions, layouts (docs/schema.md). Kept in this one section so the
// schema pages (pages/schema/) have a single place to change when a shape changes.

export type SchemaKind = "field" | "class" | "definition";
export const SCHEMA_KINDS: SchemaKind[] = ["field", "class", "definition"];
/** The wire's plural of a kind: endpoint prefix, `data` dictionary and sync data type. */
export const schemaPlural = (k: SchemaKind | "layout") => (k === "class" ? "classes" : `${k}s`);

/** A text per project language. */
export type Localized = Record<string, string>;

type SchemaBase = {
  gid: string;
  /** The committed item a working copy edits (null otherwise). */
  original: string | null;
  name: string;
  label: Localized;
  isNew: boolean;
  isWorkingCopy: boolean;
  updatedOn: number;
};

export type SchemaField = SchemaBase & {
  kind: "field";
  type: string;
  options: Record<string, unknown>;
  isLocalized: boolean;
  isRequired: boolean;
  initial: Record<string, unknown>;
  unit: string | null;
};

export type SchemaClass = SchemaBase & { kind: "class"; fields: string[]; layout: string | null };

export type SchemaDefinition = SchemaBase & {
  kind: "definition";
  classes: string[];
  fields: string[];
  titlefield: string | null;
  layout: string | null;
  childdefinitions: string[];
  fieldlists: Record<string, string[]>;
};

export type SchemaItem = SchemaField | SchemaClass | SchemaDefinition;

export type LayoutComponent = { type: string; name?: string; options?: Record<string, unknown>; content?: string[] };
export type SchemaLayout = {
  gid: string;
  original: string | null;
  name: string;
  root: string;
  components: Record<string, LayoutComponent>;
  updatedOn: number;
};

export type Schema = {
  fields: Map<string, SchemaField>;
  classes: Map<string, SchemaClass>;
  definitions: Map<string, SchemaDefinition>;
  layouts: Map<string, SchemaLayout>;
};

export const FIELD_TYPES = [
  "text",
  "textline",
  "textlist",
  "number",
  "decimal",
  "boolean",
  "barcode",
  "date",
  "image",
  "imagelist",
  "file",
  "filelist",
  "record",
  "recordlist",
  "class",
  "classlist",
  "fieldpicker",
] as const;
export const BARCODE_FORMATS = ["any", "ean8", "ean13", "upca", "gtin14"] as const;
export const LAYOUT_CONTAINERS = ["vertical", "horizontal", "tabs", "tab", "section"] as const;

/** What a commit would do (its dry run). */
export type CommitPreview = {
  changedMembers: string[];
  /** Classes and definitions that follow the commit. */
  classes: string[];
  definitions: string[];
  /** Per definition, the fields its ordered list would lose. */
  droppedFields: Record<string, string[]>;
  /** Records touched, and how many would lose values (when the records feature reports it). */
  records: { affected: number; losingValues: number } | null;
};

const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []);
const localized = (v: unknown): Localized => Object.fromEntries(entries(v).filter(([, t]) => typeof t === "string"));
const dict = (v: unknown): Record<string, unknown> =>
  v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {};

function schemaBase(x: any): SchemaBase {
  return {
    gid: x.gid,
    original: x.original ?? null,
    name: x.name ?? "",
    label: localized(x.label),
    isNew: !!x.is_new,
    isWorkingCopy: !!x.is_working_copy,
    updatedOn: typeof x.updated_on === "number" ? x.updated_on : 0,
  };
}

function toSchemaField(x: any): SchemaField {
  return {
    ...schemaBase(x),
    kind: "field",
    type: x.type,
    options: dict(x.options),
    isLocalized: !!x.is_localized,
    isRequired: !!x.is_required,
    initial: dict(x.initial),
    unit: typeof x.unit === "string" ? x.unit : null,
  };
}

function toSchemaClass(x: any): SchemaClass {
  return { ...schemaBase(x), kind: "class", fields: strings(x.fields), layout: x.layout ?? null };
}

function toSchemaDefinition(x: any): SchemaDefinition {
  return {
    ...schemaBase(x),
    kind: "definition",
    classes: strings(x.classes),
    fields: strings(x.fields),
    titlefield: x.titlefield ?? null,
    layout: x.layout ?? null,
    childdefinitions: strings(x.childdefinitions),
    fieldlists: Object.fromEntries(entries(x.fieldlists).map(([k, v]) => [k, strings(v)])),
  };
}

function toSchemaLayout(x: any): SchemaLayout {
  const components: Record<string, LayoutComponent> = {};
  for (const [k, c] of entries(x.components)) {
    if (!c || typeof c !== "object") continue;
    components[k] = {
      type: String(c.type),
      name: typeof c.name === "string" ? c.name : undefined,
      options: c.options ? dict(c.options) : undefined,
      content: Array.isArray(c.content) ? strings(c.content) : undefined,
    };
  }
  return {
    gid: x.gid,
    original: x.original ?? null,
    name: x.name ?? "",
    root: x.root,
    components,
    updatedOn: typeof x.updated_on === "number" ? x.updated_on : 0,
  };
}

/** The schema items an answer's `data` holds (dictionaries it lacks are empty). */
export function schemaOf(data: any): Schema {
  return {
    fields: new Map(entries(data?.fields).map(([k, v]) => [k, toSchemaField(v)])),
    classes: new Map(entries(data?.classes).map(([k, v]) => [k, toSchemaClass(v)])),
    definitions: new Map(entries(data?.definitions).map(([k, v]) => [k, toSchemaDefinition(v)])),
    layouts: new Map(entries(data?.layouts).map(([k, v]) => [k, toSchemaLayout(v)])),
  };
}

/** The answer of a schema change: the gid it names and the items it returned. */
export type SchemaAnswer = { gid: string | null; data: Schema; jobs: string[] };

const schemaAnswer = (env: Envelope, kind: SchemaKind): SchemaAnswer => ({
  gid: env.result[kind] ?? null,
  data: schemaOf(env.data),
  jobs: strings(env.result["job.tokens"]),
});

/** The members a class or definition lists and moves one by one. */
export type SchemaMember = "fields" | "classes" | "childdefinitions";
const MEMBER_KEY: Record<SchemaMember, string> = {
  fields: "field",
  classes: "class",
  childdefinitions: "childdefinition",
};

export const schemaApi = {
  /** Every schema item of the project (the project init answers all four dictionaries). */
  async load(project: string): Promise<Schema> {
    return schemaOf((await call(`/api/p/${project}/init`)).data);
  },
  /** Some items again (after sync items named them); gids that are gone are left out. */
  async get(project: string, kind: SchemaKind | "layout", gids: string[]): Promise<Schema> {
    return schemaOf((await call(p(project, `${schemaPlural(kind)}/get`), { [schemaPlural(kind)]: gids })).data);
  },
  /** `create`/`modify` with wire members (name, label, type, options, is_localized, ...). */
  async create(project: string, kind: SchemaKind, members: Record<string, unknown>): Promise<SchemaAnswer> {
    return schemaAnswer(await call(p(project, `${schemaPlural(kind)}/create`), members), kind);
  },
  async modify(
    project: string,
    kind: SchemaKind,
    gid: string,
    members: Record<string, unknown>,
  ): Promise<SchemaAnswer> {
    return schemaAnswer(await call(p(project, `${schemaPlural(kind)}/modify`), { ...members, [kind]: gid }), kind);
  },
  /** commit, revert, save_as_new, copy, delete: the working-copy life cycle. */
  async lifecycle(
    project: string,
    kind: SchemaKind,
    gid: string,
    action: "commit" | "revert" | "save_as_new" | "copy" | "delete",
  ): Promise<SchemaAnswer> {
    return schemaAnswer(await call(p(project, `${schemaPlural(kind)}/${action}`), { [kind]: gid }), kind);
  },
  /** What a commit would change and drop; nothing is changed. */
  async commitPreview(project: string, kind: SchemaKind, gid: string): Promise<CommitPreview> {
    const r = (await call(p(project, `${schemaPlural(kind)}/commit`), { [kind]: gid, dry_run: true })).result;
    const drop = dict(r.would_drop);
    const records = dict(drop.records);
    return {
      changedMembers: strings(r.changed_members),
      classes: strings(r.classes),
      definitions: strings(r.definitions),
      droppedFields: Object.fromEntries(entries(drop.fields).map(([k, v]) => [k, strings(v)])),
      records:
        typeof records.affected === "number"
          ? {
              affected: records.affected,
              losingValues: typeof records.losing_values === "number" ? records.losing_values : 0,
            }
          : null,
    };
  },
  /** Adds, moves (before another, or to the end) or removes one entry of a class's or definition's list. */
  async member(
    project: string,
    kind: "class" | "definition",
    gid: string,
    member: SchemaMember,
    action: "add" | "move" | "remove",
    item: string,
    before?: string | null,
  ): Promise<SchemaAnswer> {
    const key = MEMBER_KEY[member];
    const body: Record<string, unknown> = { [kind]: gid, [key]: item };
    if (before && action !== "remove") body[`before_${key}`] = before;
    return schemaAnswer(await call(p(project, `${schemaPlural(kind)}/${member}/${action}`), body), kind);
  },
  /** Adds, moves or removes one of a definition's fields in one of the project's fieldlists. */
  async fieldlistMember(
    project: string,
    definition: string,
    fieldlist: string,
    action: "add" | "move" | "remove",
    field: string,
    before?: string | null,
  ): Promise<SchemaAnswer> {
    const body: Record<string, unknown> = { definition, fieldlist, field };
    if (before && action !== "remove") body.before_field = before;
    return schemaAnswer(await call(p(project, `definitions/fieldlists/fields/${action}`), body), "definition");
  },
  /** Replaces a layout's root and components (moves are done this way). */
  async setLayout(
    project: string,
    kind: "class" | "definition",
    gid: string,
    root: string,
    components: Record<string, LayoutComponent>,
  ): Promise<SchemaAnswer> {
    return schemaAnswer(
      await call(p(project, `${schemaPlural(kind)}/layouts/modify`), { [kind]: gid, root, components }),
      kind,
    );
  },
  async addComponent(
    project: string,
    kind: "class" | "definition",
    gid: string,
    c: { parent: string; type: string; name?: string; options?: Record<string, unknown>; before?: string },
  ): Promise<SchemaAnswer & { component: string }> {
    const body: Record<string, unknown> = { [kind]: gid, parent: c.parent, type: c.type };
    if (c.name) body.name = c.name;
    if (c.options) body.options = c.options;
    if (c.before) body.before_component = c.before;
    const env = await call(p(project, `${schemaPlural(kind)}/layouts/components/create`), body);
    return { ...schemaAnswer(env, kind), component: env.result.component };
  },
  async modifyComponent(
    project: string,
    kind: "class" | "definition",
    gid: string,
    component: string,
    changes: { name?: string | null; type?: string; options?: Record<string, unknown> },
  ): Promise<SchemaAnswer> {
    return schemaAnswer(
      await call(p(project, `${schemaPlural(kind)}/layouts/components/modify`), { [kind]: gid, component, ...changes }),
      kind,
    );
  },
  async removeComponent(
    project: string,
    kind: "class" | "definition",
    gid: string,
    component: string,
  ): Promise<SchemaAnswer> {
    return schemaAnswer(
      await call(p(project, `${schemaPlural(kind)}/layouts/components/delete`), { [kind]: gid, component }),
      kind,
    );
  },
};

// ---------------------------------------------------------------------------------------------
// Records (/api/p/<project>/records, docs/records.md) and the read side of the schema they are
// typed by (definitions, classes, fields, layouts: docs/schema.md). Used by pages/records/.

export type RecordItem = {
  gid: string;
  parent: string | null;
  canonical: string;
  backlinks: string[];
  treelevel: number;
  /** From the record itself up to the root. */
  path: string[];
  childcount: number;
  definition: string;
  title: Record<string, string>;
  status: "published" | "deleted";
  channels: string[];
  orderings: Record<string, number>;
  isLink: boolean;
  /** Language → field name → value (`<name>/key` members beside value-list fields). */
  fields: Record<string, Record<string, unknown>>;
  createdOn: number;
  updatedOn: number;
};

export type FieldDef = {
  gid: string;
  name: string;
  label: Record<string, string>;
  type: string;
  options: Record<string, any>;
  isLocalized: boolean;
  isRequired: boolean;
  unit: string;
};
export type DefinitionDef = {
  gid: string;
  name: string;
  label: Record<string, string>;
  fields: string[];
  classes: string[];
  layout: string | null;
  isExtended: boolean;
};
export type ClassDef = {
  gid: string;
  name: string;
  label: Record<string, string>;
  fields: string[];
  layout: string | null;
};
export type LayoutPart = { type: string; name?: string | null; content?: string[]; options?: Record<string, any> };
export type LayoutDef = { gid: string; root: string; components: Record<string, LayoutPart> };
/** One line of `report.validation`: a refused value (`error`) or a written one with a remark (`warning`). */
export type ValueReport = {
  record: string;
  language: string | null;
  field: string;
  level: "error" | "warning";
  code: string;
  message: string;
};
export type RecordsPage = { items: RecordItem[]; total: number };
/** A bulk selection element: a gid, a parent's children, or a search. */
export type Selection = (
  | string
  | { children: string; exclude?: string[] }
  | { search: { language?: string; q?: string; filter?: unknown }; exclude?: string[] }
)[];
export type BulkOp = "delete" | "undelete" | "move" | "link" | "shallow_copy" | "duplicate" | "channels/set" | "update";
export type ExcelResult = { name: string; file: Blob; counts: Record<string, number>; report: ValueReport[] };

const XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";
const obj = (v: unknown): Record<string, any> =>
  v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, any>) : {};
const strs = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []);

function toRecord(r: any): RecordItem {
  return {
    gid: r.gid,
    parent: r.parent ?? null,
    canonical: r.canonical ?? r.gid,
    backlinks: strs(r.backlinks),
    treelevel: r.treelevel ?? 0,
    path: strs(r.path),
    childcount: r.childcount ?? 0,
    definition: r.definition ?? "",
    title: obj(r.title),
    status: r.status === "deleted" ? "deleted" : "published",
    channels: strs(r.channels),
    orderings: obj(r.orderings),
    isLink: !!r.is_link,
    fields: obj(r.fields),
    createdOn: r.created_on ?? 0,
    updatedOn: r.updated_on ?? 0,
  };
}
const recordMap = (data: any) => new Map(entries(data?.records).map(([k, v]) => [k, toRecord(v)]));
function inOrder<T>(gids: unknown, map: Map<string, T>): T[] {
  return strs(gids)
    .map((g) => map.get(g))
    .filter((x): x is T => !!x);
}
const toField = (f: any): FieldDef => ({
  gid: f.gid,
  name: f.name,
  label: obj(f.label),
  type: f.type,
  options: obj(f.options),
  isLocalized: !!f.is_localized,
  isRequired: !!f.is_required,
  unit: f.unit ?? "",
});
const toDefinition = (d: any): DefinitionDef => ({
  gid: d.gid,
  name: d.name,
  label: obj(d.label),
  fields: strs(d.fields),
  classes: strs(d.classes),
  layout: d.layout ?? null,
  isExtended: !!d.is_extended,
});
const toClass = (c: any): ClassDef => ({
  gid: c.gid,
  name: c.name,
  label: obj(c.label),
  fields: strs(c.fields),
  layout: c.layout ?? null,
});
const toLayout = (l: any): LayoutDef => ({ gid: l.gid, root: l.root, components: obj(l.components) });
const mapOf = <T>(data: any, key: string, fn: (v: any) => T) =>
  new Map(entries(data?.[key]).map(([k, v]) => [k, fn(v)]));

function report(result: any): ValueReport[] {
  return (Array.isArray(result?.["report.validation"]) ? result["report.validation"] : []) as ValueReport[];
}
function fileOf(data: any, name: unknown): Blob | null {
  const b64 = typeof name === "string" ? data?.files?.[name] : undefined;
  if (typeof b64 !== "string") return null;
  const bin = atob(b64);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return new Blob([bytes], { type: XLSX });
}
/** The marked-up workbook of a refused import (code 1005), if the error carries one. */
export function excelErrorFile(
  e: unknown,
): { name: string; file: Blob; problems: { cell: string; message: string }[] } | null {
  if (!(e instanceof ApiError) || e.code !== 1005) return null;
  const name = e.info["report.excel"];
  const file = fileOf(e.info, name);
  return file
    ? {
        name: String(name),
        file,
        problems: (Array.isArray(e.info.problems) ? e.info.problems : []) as { cell: string; message: string }[],
      }
    : null;
}

const rp = (project: string, op: string) => p(project, `records/${op}`);
type Place = { parent: string; ordering?: string; before?: string | null };
const placeBody = (record: string, to: Place) => ({
  record,
  parent: to.parent,
  ...(to.ordering ? { ordering: to.ordering } : {}),
  ...(to.before ? { before_record: to.before } : {}),
});

export const recordsApi = {
  async root(project: string, language?: string): Promise<RecordItem> {
    const env = await call(rp(project, "root"), language ? { language } : {});
    return recordMap(env.data).get(env.result.root)!;
  },
  async get(project: string, gids: string[], languages?: string[]): Promise<Map<string, RecordItem>> {
    if (!gids.length) return new Map();
    return recordMap(
      (await call(rp(project, "get"), { records: gids.slice(0, 1000), ...(languages ? { languages } : {}) })).data,
    );
  },
  async one(project: string, gid: string): Promise<RecordItem> {
    return recordMap((await call(rp(project, "get"), { record: gid })).data).get(gid)!;
  },
  async children(
    project: string,
    parent: string,
    o: { channel?: string; ordering?: string; top?: number; size?: number; language?: string },
  ): Promise<RecordsPage> {
    const body: Record<string, unknown> = { record: parent, "page.top": o.top ?? 0, "page.size": o.size ?? 100 };
    if (o.channel) body.channel = o.channel;
    if (o.ordering) body.ordering = o.ordering;
    if (o.language) body.language = o.language;
    const env = await call(rp(project, "children"), body);
    return { items: inOrder(env.result.children, recordMap(env.data)), total: env.result["children.size"] ?? 0 };
  },
  /** A parent's grid: its path (root first), one page of children, and the definitions and layouts they use. */
  async worksheet(
    project: string,
    record: string,
    o: { ordering: string; top?: number; size?: number; language?: string },
  ) {
    const env = await call(rp(project, "worksheet"), {
      record,
      ordering: o.ordering,
      "page.top": o.top ?? 0,
      "page.size": o.size ?? 50,
      ...(o.language ? { language: o.language } : {}),
    });
    const recs = recordMap(env.data);
    const defs = mapOf(env.data, "definitions", toDefinition);
    return {
      record: recs.get(env.result.record)!,
      path: inOrder(env.result.path, recs),
      children: inOrder(env.result.children, recs),
      total: (env.result["children.size"] ?? 0) as number,
      definitions: inOrder(env.result.sibling_definitions, defs),
    };
  },
  async create(project: string, parent: string, ordering?: string): Promise<RecordItem> {
    const env = await call(rp(project, "create"), ordering ? { parent, ordering } : { parent });
    return recordMap(env.data).get(env.result.record)!;
  },
  /** Writes values (language → field name → value); invalid ones are refused and reported, the rest written. */
  async update(
    project: string,
    record: string,
    fields: Record<string, Record<string, unknown>>,
  ): Promise<{ record: RecordItem | undefined; report: ValueReport[] }> {
    const env = await call(rp(project, "update"), { record, fields });
    return { record: recordMap(env.data).get(record), report: report(env.result) };
  },
  async setDefinition(project: string, record: string, definition: string): Promise<void> {
    await call(rp(project, "definition/set"), { record, definition });
  },
  async move(project: string, record: string, to: Place): Promise<void> {
    await call(rp(project, "move"), placeBody(record, to));
  },
  /** A linked copy (kept in step with its canonical); answers the new record's gid. */
  async link(project: string, record: string, to: Place): Promise<string> {
    return (await call(rp(project, "link"), placeBody(record, to))).result.record;
  },
  async shallowCopy(project: string, record: string, to: Place): Promise<string> {
    return (await call(rp(project, "shallow_copy"), placeBody(record, to))).result.record;
  },
  async duplicate(project: string, record: string, ordering?: string): Promise<string> {
    return (await call(rp(project, "duplicate"), ordering ? { record, ordering } : { record })).result.record;
  },
  async unlink(project: string, record: string): Promise<void> {
    await call(rp(project, "unlink"), { record });
  },
  async remove(project: string, record: string): Promise<void> {
    await call(rp(project, "delete"), { record });
  },
  async undelete(project: string, record: string): Promise<void> {
    await call(rp(project, "undelete"), { record });
  },
  async setChannels(project: string, record: string, channels: string[], enabled: boolean): Promise<void> {
    await call(rp(project, "channels/set"), { record, channels, enabled });
  },
  /** Full text (`q`, +/- terms) and/or a filter (docs/filter.md) in one language. */
  async search(
    project: string,
    s: { language: string; q?: string; filter?: unknown; top?: number; size?: number },
  ): Promise<RecordsPage> {
    const body: Record<string, unknown> = { language: s.language, "page.top": s.top ?? 0, "page.size": s.size ?? 50 };
    if (s.q?.trim()) body.q = s.q.trim();
    if (s.filter !== undefined && s.filter !== null) body.filter = s.filter;
    const env = await call(rp(project, "search"), body);
    return { items: inOrder(env.result.records, recordMap(env.data)), total: env.result["records.size"] ?? 0 };
  },
  /** Starts a background operation over a selection; answers the job's token. */
  async bulk(project: string, op: BulkOp, selection: Selection, extra: Record<string, unknown> = {}): Promise<string> {
    return (await call(rp(project, `bulk/${op}`), { selection, ...extra })).result["job.token"];
  },
  /** What a finished bulk job did: records done and skipped (with reasons), values refused. */
  async bulkOutcome(
    project: string,
    tokenOfJob: string,
  ): Promise<{ done: number; skipped: { gid: string; reason: string }[]; refused: number }> {
    const info = obj((await call(p(project, "jobs/get"), { token: tokenOfJob })).result.job?.info);
    return {
      done: info.done ?? 0,
      skipped: Array.isArray(info.skipped_items) ? info.skipped_items : [],
      refused: info.validation_errors ?? 0,
    };
  },
  /** A workbook of a parent's children in one language: the file, or a download link for large ones. */
  async excelExport(
    project: string,
    record: string,
    language: string,
  ): Promise<{ name: string; file: Blob | null; url: string | null; rows: number }> {
    const env = await call(p(project, "records/excel/children"), { record, language });
    const name = String(env.result["children.excel"] ?? "children.xlsx");
    return {
      name,
      file: fileOf(env.data, name),
      url: env.result["download.url"] ?? null,
      rows: env.result["children.size"] ?? 0,
    };
  },
  /** Imports an edited workbook; answers the counts, the value report and the marked-up workbook. */
  async excelImport(project: string, file: File, record?: string): Promise<ExcelResult> {
    const form = new FormData();
    form.append("upload_file", file, file.name);
    if (record) form.append("record", record);
    const env = await upload(p(project, "records/excel/update"), form);
    const name = String(env.result["report.excel"] ?? "report.xlsx");
    return {
      name,
      file: fileOf(env.data, name) ?? new Blob([], { type: XLSX }),
      counts: obj(env.result["report.counts"]),
      report: report(env.result),
    };
  },
};

/** The schema as the records pages read it (the schema pages have their own calls). */
async function schemaGet<T>(
  project: string,
  kind: "definition" | "class" | "field" | "layout",
  gids: string[],
  fn: (v: any) => T,
): Promise<Map<string, T>> {
  const plural = kind === "class" ? "classes" : `${kind}s`;
  return gids.length
    ? mapOf((await call(p(project, `${plural}/get`), { [plural]: gids })).data, plural, fn)
    : new Map();
}

export const recordSchemaApi = {
  definitions: (project: string, gids: string[]) => schemaGet(project, "definition", gids, toDefinition),
  classes: (project: string, gids: string[]) => schemaGet(project, "class", gids, toClass),
  fields: (project: string, gids: string[]) => schemaGet(project, "field", gids, toField),
  layouts: (project: string, gids: string[]) => schemaGet(project, "layout", gids, toLayout),
  /** The committed definitions (for the definition picker) and fields (for the bulk field update), by name. */
  async committed(project: string): Promise<{ definitions: DefinitionDef[]; fields: FieldDef[] }> {
    const filter = [
      "and",
      "",
      [
        ["kind", "in", ["definition", "field"]],
        ["is_committed", "is_true"],
      ],
    ];
    const env = await call(p(project, "schema/search"), { filter, "page.size": 5000 });
    const byName = (a: { name: string }, b: { name: string }) => a.name.localeCompare(b.name);
    return {
      definitions: [...mapOf(env.data, "definitions", toDefinition).values()].filter((d) => !d.isExtended).sort(byName),
      fields: [...mapOf(env.data, "fields", toField).values()].sort(byName),
    };
  },
};
