import { primaryKey, real, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { projects } from "../projects/projects.table";

/** One entry of a module's log (reference `UnicatModuleLog`), plus the `request` it answers, if any. */
export type ModuleLog = {
  timestamp: number;
  version: string;
  action: string;
  configuration: Record<string, unknown>;
  command: string;
  started_at: number | null;
  ended_at: number | null;
  duration: number | null;
  status: string;
  output: string;
  request: string | null;
};

/** A published action: a named configuration users can start. */
export type ModuleAction = { name: string; configuration: Record<string, unknown> };

/**
 * Modules of a project: external integrations registered under a unique name. `keys` (settings),
 * `actions` and `logs` (newest last, at most MODULE_LOG_LIMIT) live in the row as JSON.
 * `apiUser` is the module's own API user (the one that registered it, or the one an owner named):
 * besides the project owner, only that user may change the module.
 */
export const modules = sqliteTable(
  "modules",
  {
    projectGid: text("project_gid")
      .notNull()
      .references(() => projects.gid, { onDelete: "cascade" }),
    name: text("name").notNull(),
    version: text("version").notNull(),
    keys: text("keys", { mode: "json" }).$type<Record<string, unknown>>().notNull().default({}),
    actions: text("actions", { mode: "json" }).$type<Record<string, ModuleAction>>().notNull().default({}),
    logs: text("logs", { mode: "json" }).$type<ModuleLog[]>().notNull().default([]),
    /** Gid of the module's own API user, or null (then only the owner may change it). */
    apiUser: text("api_user"),
    registeredBy: text("registered_by").notNull(),
    createdOn: real("created_on").notNull(),
    updatedOn: real("updated_on").notNull(),
  },
  (t) => [primaryKey({ columns: [t.projectGid, t.name] })],
);
