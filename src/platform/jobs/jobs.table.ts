import { index, integer, real, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * Background jobs (src/platform/jobs/runner.ts). The token is the job's gid and the `data_key` of its
 * `jobs` sync items. `project_gid` is null for instance-wide jobs; a project's permanent deletion
 * removes its jobs too. Project backups leave this table out (it is bookkeeping, not project data).
 */
export const jobs = sqliteTable(
  "jobs",
  {
    token: text("token").primaryKey(),
    projectGid: text("project_gid"),
    /** The registered kind, shown to clients as the job object's `job` member. */
    kind: text("kind").notNull(),
    status: text("status", { enum: ["queued", "processing", "done", "rejected"] }).notNull(),
    info: text("info", { mode: "json" }).$type<Record<string, unknown>>().notNull().default({}),
    params: text("params", { mode: "json" }).$type<Record<string, unknown>>().notNull().default({}),
    /** Who started it (null for scheduled work); sees its sync items with the project owner. */
    userGid: text("user_gid"),
    /** How many times a worker has picked it up (a crash re-queues it and counts again). */
    attempts: integer("attempts").notNull().default(0),
    createdOn: real("created_on").notNull(),
    updatedOn: real("updated_on").notNull(),
    startedOn: real("started_on"),
    finishedOn: real("finished_on"),
    /**
     * Where the job goes on from when it runs again after an interruption: what its handler saved
     * with its last committed unit of work (`progress.save`), null until it saves something.
     */
    resume: text("resume", { mode: "json" }).$type<unknown>(),
  },
  (t) => [index("jobs_status_created").on(t.status, t.createdOn), index("jobs_project").on(t.projectGid)],
);
