import type { DB } from "../connection";
import { usePgCodecs } from "./codecs";
import "./sqlite-api";
import { migratePg } from "./migrate";
import { PgPort, pgClient } from "./port";

/**
 * Opens the PostgreSQL database at `url` as the features' database handle (issue 39): migrated
 * (one process migrates, the others wait on the advisory lock), the PostgreSQL codecs of the
 * features' tables on (src/db/pg/codecs.ts), and the handle registered with its port, so that
 * `mutate`, `readOnly`, `sessionOf` and `dialectOf` (src/db/mutate.ts, src/db/query.ts) run on it.
 */
export async function openPgDatabase(
  url: string,
  opts: { max?: number } = {},
): Promise<{ db: DB; port: PgPort; migrations: { before: number; after: number } }> {
  const client = pgClient(url, opts.max ?? 10);
  let migrations;
  try {
    migrations = await migratePg(client);
  } catch (err) {
    await client.close();
    throw err;
  }
  usePgCodecs(true);
  const port = new PgPort(client);
  return { db: port.handle() as unknown as DB, port, migrations };
}
