/**
 * Thrown out of a long command stopped by Ctrl-C (SIGINT) or SIGTERM: src/main.ts prints
 * `apis: <message>` and exits with `code`, 128 + the signal's number (130, 143) as a shell reports
 * a process the signal ended.
 */
export class Interrupted extends Error {
  constructor(
    message: string,
    readonly code: number,
  ) {
    super(message);
  }
}

const CODES: ReadonlyMap<string, number> = new Map([
  ["SIGINT", 130],
  ["SIGTERM", 143],
]);

/**
 * Runs a long command's work (backup create/restore, storage migrate, migrate-database) with
 * Ctrl-C and SIGTERM turned into an abort of the signal it is given, instead of the process dying
 * wherever it is (which left a `.partial` archive, extracted or pinned copies under `<data>/tmp`,
 * or a database left half-swapped by a restore). The work stops at its next point where stopping
 * leaves nothing half-done and removes what it made in its own `finally` blocks; `stopped` then
 * says in what state things are (`interrupted: <stopped()>`). A repeated signal while it stops is
 * ignored. A work past the point where it can stop finishes: `signal.aborted` is then true on its
 * normal return, for the caller to say so.
 */
export async function interruptible<T>(work: (signal: AbortSignal) => Promise<T>, stopped: () => string): Promise<T> {
  const controller = new AbortController();
  let code = 0;
  const onSignal = (name: string) => {
    if (controller.signal.aborted) return;
    code = CODES.get(name) ?? 130;
    controller.abort(new Interrupted("interrupted", code));
  };
  const onInt = () => onSignal("SIGINT");
  const onTerm = () => onSignal("SIGTERM");
  process.on("SIGINT", onInt);
  process.on("SIGTERM", onTerm);
  try {
    return await work(controller.signal);
  } catch (err) {
    // The work stopped where it checks the signal (its reason comes out); any other failure, even
    // after a signal, is reported as itself: `stopped` would not describe it.
    if (controller.signal.aborted && err === controller.signal.reason)
      throw new Interrupted(`interrupted: ${stopped()}`, code);
    throw err;
  } finally {
    process.off("SIGINT", onInt);
    process.off("SIGTERM", onTerm);
  }
}
