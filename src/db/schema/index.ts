// Every area's tables, for drizzle and drizzle-kit. Add an area's file here.
export * from "./core";
export * from "./jobs";
export * from "./backups";
export * from "./assets";
export * from "./account";
export * from "./apikeys";
export * from "./dam";
export * from "../../features/schema/schema.table";
export * from "../../features/records/records.table";
