/**
 * `then` without a hop when there is nothing to wait for. The cheapest requests are mostly made
 * of answers that are ready at once (kept facts, SQLite's statements behind the port's settled
 * promises), and each `await` of such an answer (a microtask, and an async function frame around
 * it) showed in their cost. These run the continuation at once instead.
 */

/**
 * `f(value)` at once when `v` is a value or a promise already fulfilled, else once `v` is
 * fulfilled (a rejection passes through). Like any function, it throws what `f` throws when `f`
 * runs at once: callers use it where a throw and a rejection are handled alike (inside a
 * try/catch that awaits, or a function whose result is awaited).
 */
export function thenNow<T, U>(v: T | Promise<T>, f: (value: T) => U): U | Promise<Awaited<U>> {
  if (!(v instanceof Promise)) return f(v);
  if (Bun.peek.status(v) === "fulfilled") return f(Bun.peek(v) as T);
  return v.then(f) as Promise<Awaited<U>>;
}

/**
 * `v`'s value when it is a value or a promise already fulfilled, else `v` itself (a promise still
 * to await): `const r = ready(x); const value = r instanceof Promise ? await r : r;` skips the hop
 * of an `await` when there is nothing to wait for.
 */
export function ready<T>(v: T | Promise<T>): T | Promise<T> {
  return v instanceof Promise && Bun.peek.status(v) === "fulfilled" ? (Bun.peek(v) as T) : v;
}
