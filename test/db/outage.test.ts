// What the log says while a part of a node cannot use the database (src/db/outage.ts), on a clock
// the test moves: one warning, a reminder a minute with the time and the attempts, one line once
// it works again; other errors are left to the caller.
import { describe, expect, test } from "bun:test";
import { Outage } from "../../src/db/outage";

const down = Object.assign(new Error("Failed to connect"), { code: "ERR_POSTGRES_CONNECTION_REFUSED" });

function logged() {
  const lines: string[] = [];
  const line = (level: string) => (msg: string, extra?: Record<string, unknown>) =>
    lines.push(`${level}: ${msg}${extra ? ` ${JSON.stringify(extra)}` : ""}`);
  return { lines, log: { debug: line("DEBUG"), info: line("INFO"), warn: line("WARN") } };
}

describe("an outage of the database as one part of a node logs it", () => {
  test("warns at the first failed attempt, reminds once a minute with how long and how many, and says once when it works again", () => {
    const { lines, log } = logged();
    let now = 1_000_000;
    const o = new Outage(log, "the change log follower", { now: () => now });
    o.ok();
    expect(lines).toEqual([]);
    // A read every 500 ms for 150 s.
    for (let t = 0; t < 300; t++, now += 500) expect(o.failed(down)).toBe(true);
    o.ok();
    o.ok();
    expect(lines.filter((l) => !l.startsWith("DEBUG"))).toEqual([
      'WARN: the change log follower cannot use the database; retrying {"error":"Failed to connect"}',
      'WARN: the change log follower still cannot use the database after 1 min (121 attempts) {"error":"Failed to connect"}',
      'WARN: the change log follower still cannot use the database after 2 min (241 attempts) {"error":"Failed to connect"}',
      "INFO: the change log follower works again after 2 min 30 s (300 failed attempts)",
    ]);
    // Every attempt at debug.
    expect(lines.filter((l) => l.startsWith("DEBUG")).length).toBe(300);
    expect(lines[2]).toBe(
      'DEBUG: the change log follower cannot use the database (attempt 2) {"error":"Failed to connect"}',
    );
    expect(o.failing).toBe(false);
  });

  test("a second outage is said again from its start, and a short one in tenths of a second", () => {
    const { lines, log } = logged();
    let now = 0;
    const o = new Outage(log, "the job runner", { now: () => now });
    o.down("Connection closed");
    now += 400;
    o.ok();
    now += 10_000;
    o.down("Failed to connect");
    now += 42_000;
    o.ok();
    expect(lines.filter((l) => !l.startsWith("DEBUG"))).toEqual([
      'WARN: the job runner cannot use the database; retrying {"error":"Connection closed"}',
      "INFO: the job runner works again after 0.4 s (1 failed attempt)",
      'WARN: the job runner cannot use the database; retrying {"error":"Failed to connect"}',
      "INFO: the job runner works again after 42 s (1 failed attempt)",
    ]);
  });

  test("an error that is not an outage is left to the caller: nothing logged, nothing counted", () => {
    const { lines, log } = logged();
    const o = new Outage(log, "the job runner");
    expect(o.failed(new TypeError("x is undefined"))).toBe(false);
    expect(o.failed(Object.assign(new Error("duplicate key"), { errno: "23505" }))).toBe(false);
    expect(o.failing).toBe(false);
    // PostgreSQL shutting down (57P01) and a connection exception (08006) are outages.
    expect(
      o.failed(
        Object.assign(new Error("terminating connection due to administrator command\nat x"), { errno: "57P01" }),
      ),
    ).toBe(true);
    expect(o.failed(Object.assign(new Error("connection failure"), { errno: "08006" }))).toBe(true);
    expect(lines.filter((l) => !l.startsWith("DEBUG"))).toEqual([
      'WARN: the job runner cannot use the database; retrying {"error":"terminating connection due to administrator command"}',
    ]);
  });
});
