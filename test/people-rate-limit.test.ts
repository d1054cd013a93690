// The rate limiter of local sign-in and the token endpoint, without services: the arithmetic of one
// key with a moved clock, bounded keys, the byte bound of the table, and requests refused outright.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../src/clock.js';
import {
  RateLimiter, blockedFor, boundedKey, clientAddress, countAttempt, expired, ENTRY_BYTES, MAX_KEY_CHARS, type RateEntry,
} from '../src/auth/rate-limit.js';

const P = { max: 3, windowMs: 60_000, lockoutMs: 120_000 };

describe('the arithmetic of one key', () => {
  const table: Array<{ name: string; entry: RateEntry | undefined; now: number; want: RateEntry }> = [
    { name: 'first attempt opens a window', entry: undefined, now: 1_000, want: { windowStart: 1_000, count: 1, blockedUntil: 0 } },
    { name: 'inside the window it counts on', entry: { windowStart: 1_000, count: 2, blockedUntil: 0 }, now: 60_999, want: { windowStart: 1_000, count: 3, blockedUntil: 0 } },
    { name: 'the attempt over max blocks for the lockout', entry: { windowStart: 1_000, count: 3, blockedUntil: 0 }, now: 5_000, want: { windowStart: 1_000, count: 4, blockedUntil: 125_000 } },
    { name: 'a window that ended starts again at 1', entry: { windowStart: 1_000, count: 3, blockedUntil: 0 }, now: 61_000, want: { windowStart: 61_000, count: 1, blockedUntil: 0 } },
    { name: 'after a block ended the key counts from 1', entry: { windowStart: 1_000, count: 4, blockedUntil: 125_000 }, now: 125_000, want: { windowStart: 125_000, count: 1, blockedUntil: 0 } },
  ];
  for (const c of table) test(c.name, () => assert.deepEqual(countAttempt(c.entry, c.now, P), c.want));

  test('blockedFor and expired', () => {
    const e = { windowStart: 0, count: 4, blockedUntil: 120_000 };
    assert.equal(blockedFor(e, 119_000), 1_000);
    assert.equal(blockedFor(e, 120_000), 0);
    assert.equal(blockedFor(undefined, 0), 0);
    assert.equal(expired(e, 119_999, P), false);
    assert.equal(expired(e, 120_000, P), true);
    assert.equal(expired({ windowStart: 0, count: 1, blockedUntil: 0 }, 59_999, P), false);
  });
});

describe('the limiter with a moved clock', () => {
  test('max attempts pass, the next is refused with Retry-After until the lockout ends', () => {
    const clock = new ManualClock(0);
    const l = new RateLimiter(P, clock);
    for (let i = 0; i < 3; i++) assert.deepEqual(l.hit(['ip:a', 'email:x']), { allowed: true });
    assert.deepEqual(l.hit(['ip:a', 'email:x']), { allowed: false, retryAfterSecs: 120 });
    clock.advance(119_500);
    assert.deepEqual(l.blocked('ip:a'), { allowed: false, retryAfterSecs: 1 });
    clock.advance(500);
    assert.deepEqual(l.hit(['ip:a', 'email:x']), { allowed: true });
  });

  test('a request refused outright (a key already blocked) counts nothing and stores no new key', () => {
    const clock = new ManualClock(0);
    const l = new RateLimiter(P, clock);
    for (let i = 0; i < 4; i++) l.hit(['ip:attacker']);
    assert.equal(l.size, 1);
    const before = l.bytes;
    for (let i = 0; i < 1000; i++) assert.equal(l.hit(['ip:attacker', `client:guess-${i}`]).allowed, false);
    assert.equal(l.size, 1, 'no client key stored');
    assert.equal(l.bytes, before);
    // an existing key of a refused request is not counted either
    l.hit(['email:victim']);
    for (let i = 0; i < 10; i++) l.hit(['ip:attacker', 'email:victim']);
    assert.equal(l.hit(['email:victim']).allowed, true, 'victim: 2 attempts counted, not 12');
  });

  test('long keys are kept as their SHA-256; equal long keys still share one entry', () => {
    const clock = new ManualClock(0);
    const l = new RateLimiter(P, clock);
    const long = `client:${'x'.repeat(1_000_000)}`;
    assert.match(boundedKey(long), /^sha256:[A-Za-z0-9_-]{43}$/);
    assert.equal(boundedKey('ip:203.0.113.9'), 'ip:203.0.113.9');
    assert.equal(boundedKey('k'.repeat(MAX_KEY_CHARS)).length, MAX_KEY_CHARS);
    for (let i = 0; i < 3; i++) assert.equal(l.hit([long]).allowed, true);
    assert.equal(l.hit([long]).allowed, false);
    assert.equal(l.size, 1);
    assert.ok(l.bytes < 400, `one entry of a 1 MB key counts ${l.bytes} bytes`);
  });

  test('the table stays within its byte budget: expired entries go first, then the oldest', () => {
    const clock = new ManualClock(0);
    const budget = 100 * (ENTRY_BYTES + 2 * 12);
    const l = new RateLimiter(P, clock, budget);
    for (let i = 0; i < 1000; i++) l.hit([`ip:${String(i).padStart(9, '0')}`]);
    assert.ok(l.bytes <= budget, `${l.bytes} > ${budget}`);
    assert.equal(l.size, 100);
    // a blocked key survives newer keys once the others have expired
    for (let i = 0; i < 4; i++) l.hit(['ip:blocked..']);
    clock.advance(60_000);
    for (let i = 0; i < 99; i++) l.hit([`ip:new${String(i).padStart(6, '0')}`]);
    assert.equal(l.blocked('ip:blocked..').allowed, false);
    assert.equal(l.size, 100);
  });
});

describe('client address', () => {
  test('first hop of X-Forwarded-For, else the socket', () => {
    assert.equal(clientAddress({ 'x-forwarded-for': '203.0.113.1, 10.0.0.1' }, '127.0.0.1'), '203.0.113.1');
    assert.equal(clientAddress({}, '127.0.0.1'), '127.0.0.1');
    assert.equal(clientAddress({ 'x-forwarded-for': ' ' }, undefined), 'unknown');
  });
});
