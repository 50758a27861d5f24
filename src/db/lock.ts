/**
 * An asynchronous mutex with a first-come, first-served queue: who holds it runs, the others wait
 * in arrival order. The SQLite port keeps one per connection (the writer, each reader), so a
 * connection never has two transactions of different units interleaved on it.
 *
 * Taking a free lock does not wait: `tryAcquire` takes it in the same turn (most units find the
 * writer free, and then cost no extra microtask).
 */
export class AsyncLock {
  private held = false;
  private readonly waiting: (() => void)[] = [];
  private head = 0;

  /** Whether somebody holds the lock. */
  get locked(): boolean {
    return this.held;
  }

  /** How many wait for it. */
  get queued(): number {
    return this.waiting.length - this.head;
  }

  /** Takes the lock if it is free; true when taken. */
  tryAcquire(): boolean {
    if (this.held) return false;
    this.held = true;
    return true;
  }

  /** Resolves once the caller holds the lock. */
  acquire(): Promise<void> {
    if (this.tryAcquire()) return Promise.resolve();
    return new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  /** Frees the lock: the longest waiter holds it next (handed over, never free in between). */
  release(): void {
    if (!this.held) throw new Error("AsyncLock: released while free");
    if (this.head < this.waiting.length) {
      const next = this.waiting[this.head]!;
      this.waiting[this.head++] = undefined as unknown as () => void;
      if (this.head > 1024 && this.head * 2 > this.waiting.length) {
        this.waiting.splice(0, this.head);
        this.head = 0;
      }
      next();
      return;
    }
    this.waiting.length = 0;
    this.head = 0;
    this.held = false;
  }
}
