import type { DB } from "../../db/connection";
import { kindOf } from "../../db/ports";
import { pgClientOf } from "./claimer.pg";
import type { Leader } from "./schedules";
import { PgLeader } from "./schedules-pg.service";

/** Who leads the housekeeping schedules of a server on `db`: none on SQLite (its one server runs them). */
export function scheduleLeader(db: DB): Leader | undefined {
  return kindOf(db) === "postgres" ? new PgLeader(pgClientOf(db)) : undefined;
}
