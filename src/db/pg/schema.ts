// The PostgreSQL schema of Apis: every table of the SQLite schema (src/**/*.table.ts), in one file
// because the feature folders are being restructured and their tables will move to their own
// front doors; one file here is one place to keep beside them until the data layer is switched
// (then each feature's pg table may move next to its SQLite one). test/db/pg/schema.test.ts fails
// when the two differ in tables, columns or indexes, apart from the differences listed there.
//
// Types: SQLite `text` → text, `integer` → integer (bigint for row ids, file sizes and cursors),
// `real` (times in seconds) → double precision, boolean integers → boolean, JSON text → jsonb
// (./jsonb.ts: stored as JSON values, not strings). Full-text search: SQLite's FTS5 tables
// (`records_fts`, `assets_fts`, `assets_fts_en`) and their triggers become generated `tsvector`
// columns with GIN indexes (the text search configurations `apis_simple` and `apis_en` and the
// functions `apis_json_text` and `apis_fts_text` come from the hand-written migration drizzle-pg/0000_extensions.sql).
import { sql } from "drizzle-orm";
import {
  bigint,
  boolean,
  customType,
  doublePrecision,
  index,
  integer,
  pgTable,
  primaryKey,
  text,
  uniqueIndex,
} from "drizzle-orm/pg-core";
import { json, jsonDefault } from "./jsonb";

/** A tsvector column (generated from other columns). */
const tsvector = customType<{ data: string }>({
  dataType() {
    return "tsvector";
  },
});

const id = () => bigint("id", { mode: "number" }).primaryKey().generatedByDefaultAsIdentity();
const time = (name: string) => doublePrecision(name);

// ---------------------------------------------------------------------------------------------
// db: meta, change log

export const meta = pgTable("meta", {
  key: text("key").primaryKey(),
  value: text("value").notNull(),
});

export const changes = pgTable(
  "changes",
  {
    cursor: bigint("cursor", { mode: "number" }).primaryKey().generatedByDefaultAsIdentity(),
    type: text("type").notNull(),
    action: text("action", { enum: ["INSERT", "UPDATE", "DELETE"] }).notNull(),
    dataType: text("data_type").notNull(),
    dataKey: text("data_key").notNull(),
    data: json<unknown>("data"),
    createdOn: time("created_on").notNull(),
  },
  (t) => [index("changes_type_cursor").on(t.type, t.cursor)],
);

export const changeAudience = pgTable(
  "change_audience",
  {
    userGid: text("user_gid").notNull(),
    cursor: bigint("cursor", { mode: "number" })
      .notNull()
      .references(() => changes.cursor, { onDelete: "cascade" }),
  },
  (t) => [primaryKey({ columns: [t.userGid, t.cursor] }), index("change_audience_cursor").on(t.cursor)],
);

// ---------------------------------------------------------------------------------------------
// platform: jobs

export const jobs = pgTable(
  "jobs",
  {
    token: text("token").primaryKey(),
    projectGid: text("project_gid"),
    kind: text("kind").notNull(),
    status: text("status", { enum: ["queued", "processing", "done", "rejected"] }).notNull(),
    info: json<Record<string, unknown>>("info").notNull().default(jsonDefault({})),
    params: json<Record<string, unknown>>("params").notNull().default(jsonDefault({})),
    userGid: text("user_gid"),
    attempts: integer("attempts").notNull().default(0),
    createdOn: time("created_on").notNull(),
    updatedOn: time("updated_on").notNull(),
    startedOn: time("started_on"),
    finishedOn: time("finished_on"),
    resume: json<unknown>("resume"),
    /**
     * PostgreSQL only: until when the worker that claimed the job holds it (epoch seconds). The
     * worker renews it while the job runs; a processing job whose lease lapsed is claimed again
     * (src/platform/jobs/queue-pg.service.ts). On SQLite one process owns the queue and re-queues at start instead.
     */
    leaseUntil: time("lease_until"),
    /** PostgreSQL only: who holds the lease (a process id of the worker's choosing). */
    leasedBy: text("leased_by"),
    /**
     * PostgreSQL only: the kind's lock key (`projectLock`: `project:<gid>`), written at enqueue, so
     * that the claim can keep jobs sharing a key from running at once across processes; null for
     * kinds without a lock. On SQLite the one runner keeps the held keys in memory.
     */
    lockKey: text("lock_key"),
  },
  (t) => [
    index("jobs_status_created").on(t.status, t.createdOn),
    index("jobs_project").on(t.projectGid),
    index("jobs_lease").on(t.status, t.leaseUntil),
    index("jobs_lock_key").on(t.lockKey, t.status),
  ],
);

// ---------------------------------------------------------------------------------------------
// users, projects, members, apikeys, account

export const users = pgTable(
  "users",
  {
    gid: text("gid").primaryKey(),
    kind: text("kind", { enum: ["person", "api"] })
      .notNull()
      .default("person"),
    username: text("username"),
    email: text("email").notNull().default(""),
    name: text("name").notNull().default(""),
    passwordHash: text("password_hash"),
    avatar: text("avatar"),
    status: text("status", { enum: ["active", "invited", "inactive"] })
      .notNull()
      .default("active"),
    language: text("language").notNull().default("en"),
    timezone: text("timezone").notNull().default("UTC"),
    tokenVersion: integer("token_version").notNull().default(0),
    admin: boolean("admin").notNull().default(false),
    createdOn: time("created_on").notNull(),
    updatedOn: time("updated_on").notNull(),
  },
  (t) => [uniqueIndex("users_username_nocase").on(sql`lower(${t.username})`), index("users_email").on(t.email)],
);

export const projects = pgTable("projects", {
  gid: text("gid").primaryKey(),
  name: text("name").notNull(),
  icon: text("icon").notNull().default(""),
  owner: text("owner")
    .notNull()
    .references(() => users.gid),
  status: text("status", { enum: ["active", "deleted"] })
    .notNull()
    .default("active"),
  options: json<Record<string, unknown>>("options").notNull().default(jsonDefault({})),
  lastBackedUp: time("last_backed_up"),
  nextBackupVersion: integer("next_backup_version").notNull().default(1),
  createdOn: time("created_on").notNull(),
  updatedOn: time("updated_on").notNull(),
  deletedOn: time("deleted_on"),
});

export const memberships = pgTable(
  "memberships",
  {
    projectGid: text("project_gid")
      .notNull()
      .references(() => projects.gid, { onDelete: "cascade" }),
    userGid: text("user_gid")
      .notNull()
      .references(() => users.gid, { onDelete: "cascade" }),
    status: text("status", { enum: ["active", "inactive", "invited", "declined"] }).notNull(),
    roles: json<string[]>("roles").notNull(),
    options: json<Record<string, unknown>>("options").notNull().default(jsonDefault({})),
    createdOn: time("created_on").notNull(),
    updatedOn: time("updated_on").notNull(),
  },
  (t) => [primaryKey({ columns: [t.projectGid, t.userGid] }), index("memberships_user").on(t.userGid)],
);

export const apikeys = pgTable(
  "apikeys",
  {
    userGid: text("user_gid")
      .primaryKey()
      .references(() => users.gid, { onDelete: "cascade" }),
    projectGid: text("project_gid")
      .notNull()
      .references(() => projects.gid, { onDelete: "cascade" }),
    keyHash: text("key_hash").notNull(),
    keyPrefix: text("key_prefix").notNull(),
    createdOn: time("created_on").notNull(),
    updatedOn: time("updated_on").notNull(),
    lastUsedOn: time("last_used_on"),
  },
  (t) => [uniqueIndex("apikeys_key_hash").on(t.keyHash), index("apikeys_project").on(t.projectGid)],
);

export const verificationCodes = pgTable(
  "verification_codes",
  {
    validationHash: text("validation_hash").primaryKey(),
    codeHash: text("code_hash").notNull(),
    purpose: text("purpose", { enum: ["signup", "reset_password", "update_email"] }).notNull(),
    email: text("email").notNull(),
    username: text("username"),
    passwordHash: text("password_hash"),
    language: text("language"),
    userGid: text("user_gid"),
    userGids: json<string[]>("user_gids").notNull().default(jsonDefault([])),
    attempts: integer("attempts").notNull().default(0),
    status: text("status", { enum: ["pending", "used", "voided"] })
      .notNull()
      .default("pending"),
    expiresOn: time("expires_on").notNull(),
    createdOn: time("created_on").notNull(),
  },
  (t) => [index("verification_codes_expires").on(t.expiresOn), index("verification_codes_user").on(t.userGid)],
);

// ---------------------------------------------------------------------------------------------
// backups, modules, queries, dam

export const backups = pgTable(
  "backups",
  {
    gid: text("gid").primaryKey(),
    projectGid: text("project_gid").notNull(),
    version: integer("version").notNull().default(0),
    name: text("name").notNull().default(""),
    notes: text("notes").notNull().default(""),
    status: text("status", { enum: ["creating", "ready", "failed"] }).notNull(),
    jobToken: text("job_token"),
    createdBy: text("created_by"),
    startedBy: text("started_by"),
    scheduled: boolean("scheduled").notNull().default(false),
    cursor: bigint("cursor", { mode: "number" }),
    rows: bigint("rows", { mode: "number" }).notNull().default(0),
    files: bigint("files", { mode: "number" }).notNull().default(0),
    size: bigint("size", { mode: "number" }).notNull().default(0),
    error: text("error"),
    createdOn: time("created_on").notNull(),
    updatedOn: time("updated_on").notNull(),
    completedOn: time("completed_on"),
  },
  (t) => [
    index("backups_project").on(t.projectGid, t.createdOn),
    uniqueIndex("backups_project_version").on(t.projectGid, t.version),
  ],
);

export const modules = pgTable(
  "modules",
  {
    projectGid: text("project_gid")
      .notNull()
      .references(() => projects.gid, { onDelete: "cascade" }),
    name: text("name").notNull(),
    version: text("version").notNull(),
    keys: json<Record<string, unknown>>("keys").notNull().default(jsonDefault({})),
    actions: json<Record<string, unknown>>("actions").notNull().default(jsonDefault({})),
    logs: json<unknown[]>("logs").notNull().default(jsonDefault([])),
    apiUser: text("api_user"),
    registeredBy: text("registered_by").notNull(),
    createdOn: time("created_on").notNull(),
    updatedOn: time("updated_on").notNull(),
  },
  (t) => [primaryKey({ columns: [t.projectGid, t.name] })],
);

export const queries = pgTable(
  "queries",
  {
    id: id(),
    gid: text("gid").notNull(),
    projectGid: text("project_gid")
      .notNull()
      .references(() => projects.gid, { onDelete: "cascade" }),
    type: text("type", { enum: ["asset", "record", "schema"] }).notNull(),
    name: text("name").notNull(),
    q: text("q").notNull().default(""),
    filter: json<unknown[]>("filter").notNull().default(jsonDefault([])),
    createdBy: text("created_by"),
    createdOn: time("created_on").notNull(),
    updatedOn: time("updated_on").notNull(),
  },
  (t) => [
    uniqueIndex("queries_gid").on(t.gid),
    uniqueIndex("queries_project_type_name").on(t.projectGid, t.type, t.name),
  ],
);

export const damTransforms = pgTable(
  "dam_transforms",
  {
    id: id(),
    projectGid: text("project_gid")
      .notNull()
      .references(() => projects.gid, { onDelete: "cascade" }),
    file: text("file").notNull(),
    assetGid: text("asset_gid").notNull(),
    source: text("source").notNull(),
    width: integer("width").notNull(),
    height: integer("height").notNull(),
    size: bigint("size", { mode: "number" }).notNull(),
    options: json<Record<string, string>>("options").notNull(),
    updatedOn: time("updated_on").notNull(),
  },
  (t) => [uniqueIndex("dam_transforms_file").on(t.projectGid, t.file), index("dam_transforms_asset").on(t.assetGid)],
);

// ---------------------------------------------------------------------------------------------
// schema: fields, classes, definitions, layouts

function schemaTable(name: string) {
  return pgTable(
    name,
    {
      id: id(),
      gid: text("gid").notNull(),
      projectGid: text("project_gid")
        .notNull()
        .references(() => projects.gid, { onDelete: "cascade" }),
      original: text("original"),
      isNew: boolean("is_new").notNull().default(false),
      name: text("name").notNull(),
      label: json<Record<string, string>>("label").notNull().default(jsonDefault({})),
      metadata: json<Record<string, unknown>>("metadata").notNull().default(jsonDefault({})),
      spec: json<Record<string, unknown>>("spec").notNull().default(jsonDefault({})),
      createdOn: time("created_on").notNull(),
      updatedOn: time("updated_on").notNull(),
    },
    (t) => [
      uniqueIndex(`${name}_gid`).on(t.gid),
      index(`${name}_project_name`).on(t.projectGid, t.name),
      index(`${name}_original`).on(t.original),
    ],
  );
}

export const fields = schemaTable("fields");
export const classes = schemaTable("classes");
export const definitions = schemaTable("definitions");
export const layouts = schemaTable("layouts");

// ---------------------------------------------------------------------------------------------
// records

export const records = pgTable(
  "records",
  {
    id: id(),
    gid: text("gid").notNull(),
    projectGid: text("project_gid")
      .notNull()
      .references(() => projects.gid, { onDelete: "cascade" }),
    parent: text("parent"),
    canonical: text("canonical").notNull(),
    isLink: boolean("is_link").notNull().default(false),
    definition: text("definition").notNull(),
    treelevel: integer("treelevel").notNull().default(0),
    path: json<string[]>("path").notNull(),
    childcount: integer("childcount").notNull().default(0),
    status: text("status").notNull().default("published"),
    channels: json<string[]>("channels").notNull(),
    vals: json<Record<string, Record<string, unknown>>>("vals").notNull(),
    checks: json<Record<string, unknown>>("checks").notNull(),
    createdOn: time("created_on").notNull(),
    updatedOn: time("updated_on").notNull(),
  },
  (t) => [
    uniqueIndex("records_gid").on(t.gid),
    index("records_parent").on(t.parent, t.status, t.channels),
    index("records_canonical").on(t.canonical, t.isLink),
    index("records_project").on(t.projectGid, t.id, t.status, t.treelevel),
    index("records_definition").on(t.projectGid, t.definition),
  ],
);

export const recordOrderings = pgTable(
  "record_orderings",
  {
    recordId: bigint("record_id", { mode: "number" })
      .notNull()
      .references(() => records.id, { onDelete: "cascade" }),
    projectGid: text("project_gid")
      .notNull()
      .references(() => projects.gid, { onDelete: "cascade" }),
    parent: text("parent").notNull(),
    ordering: text("ordering").notNull(),
    pos: bigint("pos", { mode: "number" }).notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.recordId, t.ordering] }),
    index("record_orderings_place").on(t.parent, t.ordering, t.pos, t.recordId),
  ],
);

/**
 * The searchable text of a record per language, as on SQLite (id = record id × 64 + slot), with
 * its full-text document as a generated column instead of a row of the FTS5 table `records_fts`:
 * `doc` holds the title (weight A) and the body (weight B) through `apis_simple` (unaccent,
 * lowercase, no stemming: what FTS5's unicode61 remove_diacritics 2 does). src/db/pg/search.ts
 * queries it.
 */
export const recordSearch = pgTable(
  "record_search",
  {
    id: id(),
    recordId: bigint("record_id", { mode: "number" })
      .notNull()
      .references(() => records.id, { onDelete: "cascade" }),
    projectGid: text("project_gid")
      .notNull()
      .references(() => projects.gid, { onDelete: "cascade" }),
    language: text("language").notNull(),
    title: text("title").notNull().default(""),
    body: text("body").notNull().default(""),
    doc: tsvector("doc").generatedAlwaysAs(
      sql`setweight(to_tsvector('apis_simple'::regconfig, apis_fts_text(title)), 'A') || setweight(to_tsvector('apis_simple'::regconfig, apis_fts_text(body)), 'B')`,
    ),
  },
  (t) => [
    uniqueIndex("record_search_record").on(t.recordId, t.language),
    index("record_search_doc").using("gin", t.doc),
    index("record_search_project").on(t.projectGid),
  ],
);

// ---------------------------------------------------------------------------------------------
// assets

/** The metadata text of an asset that search sees (the SQLite triggers' `meta` column of assets_fts). */
const ASSET_META = sql.raw(
  "apis_json_text(metadata, true, true) || ' ' || apis_json_text(title, false, false) || ' ' || apis_json_text(description, false, false) || ' ' || apis_json_text(extracted, false, false)",
);
const assetDoc = (config: string) =>
  sql`setweight(to_tsvector(${sql.raw(`'${config}'::regconfig`)}, apis_fts_text(name)), 'A') || setweight(to_tsvector(${sql.raw(`'${config}'::regconfig`)}, apis_fts_text(${ASSET_META})), 'B')`;

export const assets = pgTable(
  "assets",
  {
    id: id(),
    gid: text("gid").notNull(),
    projectGid: text("project_gid")
      .notNull()
      .references(() => projects.gid, { onDelete: "cascade" }),
    parent: text("parent"),
    pathname: text("pathname"),
    type: text("type", { enum: ["folder", "file", "image"] }).notNull(),
    name: text("name").notNull(),
    extension: text("extension").notNull().default(""),
    mime: text("mime").notNull().default(""),
    size: bigint("size", { mode: "number" }).notNull().default(0),
    version: integer("version").notNull().default(1),
    storageName: text("storage_name"),
    sha256: text("sha256"),
    width: integer("width"),
    height: integer("height"),
    format: text("format"),
    pages: integer("pages"),
    extracted: json<Record<string, unknown>>("extracted").notNull().default(jsonDefault({})),
    metadata: json<Record<string, unknown>>("metadata").notNull().default(jsonDefault({})),
    title: json<Record<string, string>>("title").notNull().default(jsonDefault({})),
    description: json<Record<string, string>>("description").notNull().default(jsonDefault({})),
    transforms: json<Record<string, unknown>>("transforms"),
    facts: json<Record<string, unknown>>("facts"),
    status: text("status", { enum: ["active", "deleted"] })
      .notNull()
      .default("active"),
    deletedWith: text("deleted_with"),
    deletedOn: time("deleted_on"),
    published: boolean("published").notNull().default(false),
    publicName: text("public_name"),
    createdOn: time("created_on").notNull(),
    updatedOn: time("updated_on").notNull(),
    createdBy: text("created_by").references(() => users.gid, { onDelete: "set null" }),
    updatedBy: text("updated_by").references(() => users.gid, { onDelete: "set null" }),
    /** The name (A) and metadata text (B) through `apis_simple` (SQLite: assets_fts). */
    search: tsvector("search").generatedAlwaysAs(assetDoc("apis_simple")),
    /** The same through `apis_en` (unaccent + the English Snowball stemmer; SQLite: assets_fts_en, porter). */
    searchEn: tsvector("search_en").generatedAlwaysAs(assetDoc("apis_en")),
  },
  (t) => [
    uniqueIndex("assets_gid").on(t.gid),
    uniqueIndex("assets_storage_name").on(t.storageName),
    index("assets_project_parent").on(t.projectGid, t.parent, t.name),
    index("assets_project_parent_lower_name").on(t.projectGid, t.parent, sql`lower(${t.name})`),
    index("assets_project_parent_status_type").on(t.projectGid, t.parent, t.status, t.type),
    index("assets_project_status").on(t.projectGid, t.status),
    index("assets_deleted_with").on(t.deletedWith),
    index("assets_project_pathname").on(t.projectGid, t.pathname),
    index("assets_search").using("gin", t.search),
    index("assets_search_en").using("gin", t.searchEn),
    // Substring search and autocomplete of names (pg_trgm; SQLite scans with LIKE).
    index("assets_name_trgm").using("gin", sql`lower(${t.name}) gin_trgm_ops`),
  ],
);

export const assetVersions = pgTable(
  "asset_versions",
  {
    id: id(),
    projectGid: text("project_gid")
      .notNull()
      .references(() => projects.gid, { onDelete: "cascade" }),
    assetGid: text("asset_gid").notNull(),
    version: integer("version").notNull(),
    storageName: text("storage_name").notNull(),
    name: text("name").notNull(),
    extension: text("extension").notNull(),
    mime: text("mime").notNull(),
    size: bigint("size", { mode: "number" }).notNull(),
    sha256: text("sha256"),
    width: integer("width"),
    height: integer("height"),
    format: text("format"),
    pages: integer("pages"),
    extracted: json<Record<string, unknown>>("extracted").notNull().default(jsonDefault({})),
    facts: json<Record<string, unknown>>("facts"),
    createdOn: time("created_on").notNull(),
    createdBy: text("created_by").references(() => users.gid, { onDelete: "set null" }),
    replacedOn: time("replaced_on").notNull(),
  },
  (t) => [
    uniqueIndex("asset_versions_asset_version").on(t.assetGid, t.version),
    uniqueIndex("asset_versions_storage_name").on(t.storageName),
    index("asset_versions_project").on(t.projectGid),
  ],
);
