// Injected time: TTLs, rate-limit windows, leases and retention are tested by moving it.
export interface Clock { now(): Date }

export const systemClock: Clock = { now: () => new Date() };

/** A clock tests move by hand. */
export class ManualClock implements Clock {
  constructor(private t = Date.now()) {}
  now(): Date { return new Date(this.t); }
  advance(ms: number): void { this.t += ms; }
  set(date: Date): void { this.t = date.getTime(); }
}
