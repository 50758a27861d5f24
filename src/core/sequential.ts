/**
 * Array helpers for predicates that read the database: they run one item after the other (inside
 * a unit of work its parts never run at once), and await each answer (an async predicate given to
 * `Array.filter` or `find` would be a promise, always truthy).
 */

/** The items whose predicate holds, in order. */
export async function filterEach<T>(items: readonly T[], keep: (item: T) => Promise<boolean>): Promise<T[]> {
  const out: T[] = [];
  for (const item of items) if (await keep(item)) out.push(item);
  return out;
}

/** The first item whose predicate holds. */
export async function findEach<T>(items: readonly T[], match: (item: T) => Promise<boolean>): Promise<T | undefined> {
  for (const item of items) if (await match(item)) return item;
  return undefined;
}
