/**
 * The steps of this process's start, each with the milliseconds since the process began
 * (`performance.now()` counts from then), for `apis serve --log-level debug` ("start-up timings")
 * and the API benchmark. `step` is called at the end of each step.
 */
const steps: [string, number][] = [];

export function startupStep(name: string): void {
  steps.push([name, Math.round(performance.now() * 10) / 10]);
}

/** The steps so far, in order: `{ step: ms since the process began }`. */
export function startupTimings(): Record<string, number> {
  return Object.fromEntries(steps);
}
