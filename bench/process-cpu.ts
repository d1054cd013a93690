// CPU time of another process (the `svc serve` a benchmark loads), from /proc on Linux. On a
// shared machine the throughput ratio moves with whatever else runs (the load generator too);
// the CPU time the server spends per request is the steadier figure beside it.
import { readFileSync, existsSync } from 'node:fs';

const TICK_US = 10_000; // USER_HZ is 100 on Linux

/** CPU time (user + system) the process has used so far, in µs; undefined where /proc is missing. */
export function cpuMicros(pid: number): number | undefined {
  const file = `/proc/${pid}/stat`;
  if (!existsSync(file)) return undefined;
  // fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15
  const f = readFileSync(file, 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12])) * TICK_US;
}

/** Accumulates the server's CPU µs per request for each named load. */
export class CpuPerRequest {
  private readonly totals = new Map<string, { us: number; requests: number }>();
  constructor(private readonly pid: number) {}

  async measure<T extends { total: number }>(name: string, run: () => Promise<T>): Promise<T> {
    const before = cpuMicros(this.pid);
    const res = await run();
    const after = cpuMicros(this.pid);
    if (before !== undefined && after !== undefined && res.total > 0) {
      const t = this.totals.get(name) ?? { us: 0, requests: 0 };
      t.us += after - before; t.requests += res.total;
      this.totals.set(name, t);
    }
    return res;
  }

  /** µs of server CPU per request of the load, or undefined when not measured. */
  perRequest(name: string): number | undefined {
    const t = this.totals.get(name);
    return t ? t.us / t.requests : undefined;
  }
}
