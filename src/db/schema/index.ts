// Every area's tables, for drizzle and drizzle-kit. Add an area's file here.
export * from "./core";
