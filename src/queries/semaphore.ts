// A counting semaphore whose waiters give up at a deadline or when their signal aborts, so a
// query waiting for a slot never outlives its timeout.
export class Semaphore {
  private free: number;
  private readonly waiters: Array<{ grant: () => void }> = [];

  constructor(readonly size: number) { this.free = size; }

  /** Resolves to a release function; rejects with Error('timeout') after waitMs, or when signal aborts. */
  acquire(waitMs: number, signal?: AbortSignal): Promise<() => void> {
    if (this.free > 0) { this.free--; return Promise.resolve(this.releaser()); }
    return new Promise((resolve, reject) => {
      const waiter = {
        grant: () => { cleanup(); resolve(this.releaser()); },
      };
      const drop = (err: Error) => {
        const i = this.waiters.indexOf(waiter);
        if (i >= 0) this.waiters.splice(i, 1);
        cleanup();
        reject(err);
      };
      const timer = setTimeout(() => drop(new Error('timeout')), Math.max(0, waitMs));
      const onAbort = () => drop(new Error('aborted'));
      const cleanup = () => { clearTimeout(timer); signal?.removeEventListener('abort', onAbort); };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
    });
  }

  /** Whether a slot is free now (acquire would not wait). */
  available(): boolean { return this.free > 0; }

  private releaser(): () => void {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const next = this.waiters.shift();
      if (next) next.grant(); else this.free++;
    };
  }
}
