import type { Statement as BunStatement } from "bun:sqlite";
import type { RunResult, SqlValue, Statement } from "../port";

/**
 * bun:sqlite's get/all/run behind the port's promises, on the statement `prepared` answers at each
 * call (the same one for a connection's cached statements; a fresh lookup where the connection
 * that serves the text is decided per call). The work is done at once; the promise is settled
 * when returned, so `await` continues in the same turn of the event loop. A failure is a rejected
 * promise, as on any asynchronous client.
 */
export function statementOn<R>(prepared: () => BunStatement): Statement<R> {
  return {
    get(...params: SqlValue[]) {
      try {
        return Promise.resolve((prepared().get(...(params as any[])) as R | null) ?? undefined);
      } catch (err) {
        return Promise.reject(err);
      }
    },
    all(...params: SqlValue[]) {
      try {
        return Promise.resolve(prepared().all(...(params as any[])) as R[]);
      } catch (err) {
        return Promise.reject(err);
      }
    },
    run(...params: SqlValue[]) {
      try {
        const r = prepared().run(...(params as any[]));
        return Promise.resolve<RunResult>({ changes: r.changes, lastInsertRowid: Number(r.lastInsertRowid) });
      } catch (err) {
        return Promise.reject(err);
      }
    },
  };
}
