import type { DB, Tx } from "../connection";
import {
  afterCommitIn,
  forgetUnitMemoIn,
  inUnitOf,
  readUnit,
  type Publisher,
  startUnitMemoIn,
  unitMemoIn,
  unitOfWork,
  wholeOrNothingIn,
  type UnitLog,
  type UnitOptions,
} from "../unit";
import { sqlitePort } from "./port";

/**
 * The asynchronous twins of src/db/mutate.ts's helpers, with the same arguments (the drizzle `DB`,
 * a `Tx` for the body): the conversion of a call site is `mutate(` → `await mutateAsync(` and an
 * `async` body (docs/async-data-layer.md, "Order of conversion"). They run on the database's port
 * (src/db/sqlite/port.ts) and its unit of work (src/db/unit.ts).
 */

export function mutateAsync<T>(
  db: DB,
  hub: Publisher | undefined,
  fn: (tx: Tx, log: UnitLog) => T | Promise<T>,
  opts?: UnitOptions,
): Promise<T> {
  return unitOfWork(sqlitePort(db), hub, (s, log) => fn(s.tx, log), opts);
}

export function readOnlyAsync<T>(db: DB, fn: (tx: Tx) => T | Promise<T>): Promise<T> {
  return readUnit(sqlitePort(db), (s) => fn(s.tx));
}

export function afterCommitAsync(db: DB, task: () => void | Promise<void>): void {
  afterCommitIn(sqlitePort(db), task);
}

export function inUnitAsync(db: DB): boolean {
  return inUnitOf(sqlitePort(db));
}

export function wholeOrNothingAsync(db: DB): void {
  wholeOrNothingIn(sqlitePort(db));
}

export function startUnitMemoAsync(db: DB): void {
  startUnitMemoIn(sqlitePort(db));
}

export function forgetUnitMemoAsync(db: DB): void {
  forgetUnitMemoIn(sqlitePort(db));
}

export function unitMemoAsync<T>(db: DB, key: string, compute: () => T | Promise<T>): Promise<T> {
  return unitMemoIn(sqlitePort(db), key, compute);
}
