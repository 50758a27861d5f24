// Every area's tables, for drizzle and drizzle-kit. Add an area's file here.
export * from "../features/users/users.table";
export * from "../platform/jobs/jobs.table";
export * from "../features/backups/backups.table";
export * from "../features/assets/assets.table";
export * from "../features/account/account.table";
export * from "../features/apikeys/apikeys.table";
export * from "../features/dam/dam.table";
export * from "../features/queries/queries.table";
export * from "../features/modules/modules.table";
