/**
 * What a service operation answers: the envelope's `result` (scalars, gid lists) and `data`
 * (resource dictionaries keyed by gid), without the HTTP around it. Routes wrap it with
 * `answer()` of src/http/envelope.ts; a batch request can collect many.
 */
export type Answer = { result: Record<string, unknown>; data?: Record<string, unknown> };

/** Answers handed out again and again unchanged (see `lastingAnswer`). */
const lasting = new WeakSet<Answer>();

/**
 * Marks an answer that is handed out many times and never changed (a value of the schema
 * snapshot, kept while the schema holds): the HTTP layer may then keep its encoded envelope with
 * it instead of encoding it for every request (src/http/envelope.ts `encodedAnswer`). Returns it.
 */
export function lastingAnswer<T extends Answer>(a: T): T {
  lasting.add(a);
  return a;
}

/** Whether `lastingAnswer` marked this answer. */
export function isLasting(a: Answer): boolean {
  return lasting.has(a);
}
