import { type Envelope } from "./http";

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

export function entries(dict: unknown): [string, any][] {
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

export function users(data: any): Map<string, User> {
  return new Map(entries(data?.["cc.users"]).map(([k, v]) => [k, toUser(v)]));
}
export function projects(data: any): Map<string, Project> {
  return new Map(entries(data?.["cc.projects"]).map(([k, v]) => [k, toProject(v)]));
}
export function memberships(data: any): Membership[] {
  return Array.isArray(data?.["cc.projects_members"]) ? data["cc.projects_members"].map(toMembership) : [];
}

export function toSession(env: Envelope): Session {
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

export function assetMap(data: any): Map<string, Asset> {
  return new Map(entries(data?.assets).map(([k, v]) => [k, toAsset(v)]));
}

/** The assets named by `gids`, in that order (gids the answer lacks are left out). */
export function ordered(gids: unknown, map: Map<string, Asset>): Asset[] {
  return (Array.isArray(gids) ? gids : []).map((g) => map.get(g)).filter((a): a is Asset => !!a);
}

export function toApiKey(k: any): ApiKey {
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

export function toBackup(b: any): Backup {
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
