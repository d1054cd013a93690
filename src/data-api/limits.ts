// Rate limits and the response cache of the Data API, behind one store.
// - Token buckets per client and endpoint: `data_api.rate_limit_burst` calls at once, refilled
//   at `data_api.rate_limit_per_minute`. A refused call learns when one token is back.
// - The response cache: rendered answers by key (endpoint version, normalised parameters, page,
//   format and the caller's grant) for `data_api.cache_ttl_secs`; answers above 1 MiB skip it.
// With data_api.replicas 1 both live in this process (bounded in count and bytes); above 1 in
// the key-value store at data_api.shared_store_url (Redis), so every replica takes from the same
// bucket. When the shared store fails a call, this replica falls back to its process-local
// bucket and cache for that call (fail open, logged at most once a minute): a store outage
// degrades the limits to per replica, it never refuses or fails calls.
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Config } from '../config/index.js';
import { TtlCache } from '../util/ttl-cache.js';

export const MAX_CACHED_BYTES = 1024 * 1024;
const BUCKETS_MAX = 100_000;

export interface Take {
  ok: boolean;
  /** Tokens left after this call. */
  remaining: number;
  /** Seconds until a token is back (refused) or the bucket is full again (allowed). */
  resetSecs: number;
}

export interface CachedAnswer { body: string; etag: string; contentType: string; version: number; link: string | null; rows: number; storedAt: number }

// Refill, then take one: KEYS[1] the bucket; ARGV now (ms), rate (tokens/ms), burst, ttl (ms).
const TAKE_LUA = `
local b = redis.call('HMGET', KEYS[1], 't', 'at')
local now = tonumber(ARGV[1]); local rate = tonumber(ARGV[2]); local burst = tonumber(ARGV[3])
local t = tonumber(b[1]); local at = tonumber(b[2])
if t == nil then t = burst; at = now end
if now > at then t = math.min(burst, t + (now - at) * rate); at = now end
local ok = 0
if t >= 1 then t = t - 1; ok = 1 end
redis.call('HSET', KEYS[1], 't', tostring(t), 'at', tostring(at))
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return {ok, tostring(t)}
`;

export class DataApiLimits {
  private readonly buckets: TtlCache<string, { t: number; at: number }>;
  private readonly cache: TtlCache<string, CachedAnswer>;
  private readonly shared: Redis | null;
  private readonly rate: number;
  private readonly burst: number;
  private readonly ttlMs: number;
  private lastWarn = 0;
  private down = false;

  constructor(cfg: Config, private readonly now: () => number, private readonly log: Logger) {
    const d = cfg.data_api;
    this.rate = d.rate_limit_per_minute / 60_000;
    this.burst = Math.max(1, d.rate_limit_burst);
    this.ttlMs = d.cache_ttl_secs * 1000;
    const fullMs = this.rate > 0 ? Math.ceil(this.burst / this.rate) : 60_000;
    this.buckets = new TtlCache(BUCKETS_MAX, fullMs, now, { max: 16 * 1024 * 1024, sizeOf: (k) => 120 + k.length * 2 });
    this.cache = new TtlCache(100_000, Math.max(this.ttlMs, 1), now, { max: Math.max(d.cache_max_bytes, 1), sizeOf: (k, v) => 200 + (k.length + v.body.length + (v.link?.length ?? 0)) * 2 });
    this.shared = d.replicas > 1 && d.shared_store_url
      ? new Redis(d.shared_store_url, { maxRetriesPerRequest: 1, connectTimeout: 2_000, commandTimeout: 1_000 })
      : null;
    // Calls wait for the first connection; once the store has failed, they use this replica's
    // buckets and cache at once until it is ready again (no call waits on a store known down).
    this.shared?.on('error', (err: Error) => { this.down = true; this.warn('the Data API shared store is unreachable', err); });
    this.shared?.on('ready', () => { this.down = false; });
    this.shared?.defineCommand('dataApiTake', { numberOfKeys: 1, lua: TAKE_LUA });
  }

  private store(): Redis | null {
    return this.shared && !(this.down && this.shared.status !== 'ready') ? this.shared : null;
  }

  get limited(): boolean { return this.rate > 0; }
  get cacheTtlSecs(): number { return this.ttlMs / 1000; }
  get policy(): { burst: number; windowSecs: number } { return { burst: this.burst, windowSecs: Math.ceil(this.burst / this.rate / 1000) }; }

  private warn(what: string, err: Error): void {
    const now = this.now();
    if (now - this.lastWarn < 60_000) return;
    this.lastWarn = now;
    this.log.warn({ err: err.message }, `${what}: rate limits and the response cache fall back to this replica until it answers`);
  }

  /** Takes one call from the bucket of `key` (client and endpoint). */
  async take(key: string): Promise<Take> {
    const shared = this.store();
    if (shared) {
      try {
        const [ok, left] = await (shared as unknown as { dataApiTake(k: string, ...a: string[]): Promise<[number, string]> })
          .dataApiTake(`svc:data-api:rl:${key}`, String(this.now()), String(this.rate), String(this.burst), String(Math.ceil(this.burst / this.rate) + 1000));
        return this.answer(ok === 1, Number(left));
      } catch (err) {
        this.warn('the Data API shared store failed a rate-limit call', err as Error);
      }
    }
    const now = this.now();
    const b = this.buckets.get(key) ?? { t: this.burst, at: now };
    if (now > b.at) { b.t = Math.min(this.burst, b.t + (now - b.at) * this.rate); b.at = now; }
    const ok = b.t >= 1;
    if (ok) b.t -= 1;
    this.buckets.set(key, b);
    return this.answer(ok, b.t);
  }

  private answer(ok: boolean, left: number): Take {
    const resetSecs = ok ? Math.ceil((this.burst - left) / this.rate / 1000) : Math.max(1, Math.ceil((1 - left) / this.rate / 1000));
    return { ok, remaining: Math.max(0, Math.floor(left)), resetSecs };
  }

  async get(key: string): Promise<CachedAnswer | undefined> {
    if (this.ttlMs <= 0) return undefined;
    const shared = this.store();
    if (shared) {
      try {
        const raw = await shared.get(`svc:data-api:c:${key}`);
        return raw ? JSON.parse(raw) as CachedAnswer : undefined;
      } catch (err) {
        this.warn('the Data API shared store failed a cache read', err as Error);
      }
    }
    return this.cache.get(key);
  }

  async set(key: string, a: CachedAnswer): Promise<void> {
    if (this.ttlMs <= 0 || a.body.length > MAX_CACHED_BYTES) return;
    const shared = this.store();
    if (shared) {
      try {
        await shared.set(`svc:data-api:c:${key}`, JSON.stringify(a), 'PX', this.ttlMs);
        return;
      } catch (err) {
        this.warn('the Data API shared store failed a cache write', err as Error);
      }
    }
    this.cache.set(key, a);
  }

  /** Seconds the answer stored at `storedAt` stays in the cache. */
  maxAge(storedAt: number): number { return Math.max(0, Math.floor((storedAt + this.ttlMs - this.now()) / 1000)); }

  async close(): Promise<void> { this.shared?.disconnect(); }
}
