import type { Ctx } from "../platform/context";
import { announceVersion } from "../features/instance/instance.api";
import { VERSION } from "../version";

/**
 * Notes this program's version in the database; when it differs from the one noted before, says
 * so (a log line and a `cc.version` sync item for every client). Nothing else reads the note, so a
 * server does it just after it listens (`versionNoteLater`): as the first write and the first
 * query through drizzle of the process it took about 6 ms of cold code before the first answer.
 * Not synced on its own (lost to a power cut, it is simply noted again at the next start).
 * A database that refuses the write (a full disk, a read-only file) gets a warning, not an error:
 * the server goes on (its health check says what is wrong), and the next start notes it.
 */
export async function noteVersion(ctx: Pick<Ctx, "db" | "hub" | "config" | "log">): Promise<void> {
  try {
    if (await announceVersion(ctx.db, ctx.hub, VERSION, { durable: false })) ctx.log.info(`updated to ${VERSION}`);
  } catch (err) {
    ctx.log.warn("the version could not be noted in the database; it is noted at the next start", {
      error: String((err as Error)?.message ?? err),
    });
  }
}
