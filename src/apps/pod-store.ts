// Where app pods are recorded (docs/apps.md "Pods"): Redis, beside the tickets and tokens, so every
// replica's apps listener and every pod worker see one state and it outlives any one replica.
//   <ns>:pod:<key>           JSON PodRecord (no expiry: the idle sweep removes it)
//   <ns>:pod:<key>:claim     who is launching it (SET NX, expires), so one launch per pod
//   <ns>:pod:<key>:sessions  sorted set: token hash -> last use (ms on the injected clock)
//   <ns>:pods                set of the keys above, walked by the idle sweep
import type { Redis } from 'ioredis';
import type { PodHandle, PodMode } from './pods.js';

export type PodState = 'launching' | 'ready' | 'failed';

export interface PodRecord {
  key: string;
  id: string;
  mode: PodMode;
  state: PodState;
  workspaceId: string;
  appId: string;
  userId: string;
  version: number | null;
  /** When the launch was asked for and when the pod was last used (ms, injected clock). */
  launchedAt: number;
  used: number;
  handle?: PodHandle;
  /** Why a launch failed (shown to the person who opened the app: no internal text). */
  message?: string;
  /** App names whose source was put into the pod (an edit pod serves several apps). */
  delivered?: string[];
}

/** A record is a few hundred bytes; anything much larger is not ours. */
const MAX_RECORD_BYTES = 65_536;

export class PodStore {
  constructor(private readonly redis: Redis, private readonly ns = 'svc:apps') {}

  private k(key: string) { return `${this.ns}:pod:${key}`; }

  async get(key: string): Promise<PodRecord | null> {
    const raw = await this.redis.get(this.k(key));
    if (!raw || raw.length > MAX_RECORD_BYTES) return null;
    return JSON.parse(raw) as PodRecord;
  }

  async put(rec: PodRecord): Promise<void> {
    await this.redis.multi().set(this.k(rec.key), JSON.stringify(rec)).sadd(`${this.ns}:pods`, rec.key).exec();
  }

  /** Updates the record only while it is still launch `id` (a stopped and relaunched pod is another). */
  async update(key: string, id: string, change: Partial<PodRecord>): Promise<PodRecord | null> {
    const rec = await this.get(key);
    if (!rec || rec.id !== id) return null;
    const next = { ...rec, ...change };
    await this.redis.set(this.k(key), JSON.stringify(next));
    return next;
  }

  /** One launcher at a time per pod: true when this caller may launch it. */
  async claim(key: string, ttlMs: number): Promise<boolean> {
    return (await this.redis.set(`${this.k(key)}:claim`, '1', 'PX', ttlMs, 'NX')) === 'OK';
  }

  async claimed(key: string): Promise<boolean> {
    return (await this.redis.exists(`${this.k(key)}:claim`)) === 1;
  }

  async release(key: string): Promise<void> {
    await this.redis.del(`${this.k(key)}:claim`);
  }

  async remove(key: string): Promise<void> {
    await this.redis.multi().del(this.k(key), `${this.k(key)}:sessions`, `${this.k(key)}:claim`).srem(`${this.ns}:pods`, key).exec();
  }

  /** Every recorded pod key (bounded by how many pods can run at once). */
  async keys(): Promise<string[]> {
    return this.redis.smembers(`${this.ns}:pods`);
  }

  /**
   * Admits a session (a token hash) to the pod at `now`, atomically (a Lua script, so two new
   * viewers cannot both take the last seat): sessions unused for `liveMs` are dropped first (a
   * session whose token idled out holds no seat), a session already seated is always admitted and
   * marked used, a new one only while fewer than `cap` are seated (null: no cap, an edit pod).
   */
  async admit(key: string, session: string, now: number, liveMs: number, cap: number | null): Promise<boolean> {
    const r = await this.redis.eval(ADMIT, 1, `${this.k(key)}:sessions`, String(now), String(now - liveMs), String(cap ?? 0), session, cap === null ? '0' : '1');
    return r === 1;
  }
}

// The rule of admitsSession (pods.ts) run inside Redis.
const ADMIT = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[2])
if redis.call('ZSCORE', KEYS[1], ARGV[4]) then redis.call('ZADD', KEYS[1], ARGV[1], ARGV[4]) return 1 end
if ARGV[5] == '1' and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[4])
return 1
`;
