/**
 * What a service operation answers: the envelope's `result` (scalars, gid lists) and `data`
 * (resource dictionaries keyed by gid), without the HTTP around it. Routes wrap it with
 * `answer()` of src/http/envelope.ts; a batch request can collect many.
 */
export type Answer = { result: Record<string, unknown>; data?: Record<string, unknown> };
