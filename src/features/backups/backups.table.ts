import { index, uniqueIndex, integer, real, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * Project backups (src/features/backups/backups.service.ts). The files of a backup live in
 * `<data>/backups/projects/<project gid>/<backup gid>/`. Like `jobs`, this table is bookkeeping:
 * project backups and restores leave it out, so restoring never removes the backup it restores.
 */
export const backups = sqliteTable(
  "backups",
  {
    gid: text("gid").primaryKey(),
    projectGid: text("project_gid").notNull(),
    /** The project's number for it (1, 2, ...; the reference's `version`), never reused. */
    version: integer("version").notNull().default(0),
    name: text("name").notNull().default(""),
    notes: text("notes").notNull().default(""),
    status: text("status", { enum: ["creating", "ready", "failed"] }).notNull(),
    /** The job that creates it. */
    jobToken: text("job_token"),
    /** Who or what made it, as the client said (`created_by` of backups/create; "Apis scheduler" for scheduled ones). */
    createdBy: text("created_by"),
    /** The user who started it (null for scheduled backups). */
    startedBy: text("started_by"),
    /** True for backups made by the schedule; only these are pruned by retention. */
    scheduled: integer("scheduled", { mode: "boolean" }).notNull().default(false),
    /** Project cursor at snapshot time (scheduled backups are skipped when nothing changed since). */
    cursor: integer("cursor"),
    rows: integer("rows").notNull().default(0),
    files: integer("files").notNull().default(0),
    size: integer("size").notNull().default(0),
    error: text("error"),
    createdOn: real("created_on").notNull(),
    updatedOn: real("updated_on").notNull(),
    completedOn: real("completed_on"),
  },
  (t) => [
    index("backups_project").on(t.projectGid, t.createdOn),
    uniqueIndex("backups_project_version").on(t.projectGid, t.version),
  ],
);
