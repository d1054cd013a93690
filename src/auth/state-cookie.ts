// The OIDC state cookie: what the login route must remember until the provider sends the browser
// back (state, nonce, PKCE verifier, when it started and where to go afterwards), sealed with
// AES-256-GCM under a key derived from `security.secret_key` (HKDF-SHA256, info
// 'svc-oidc-state'). The browser holds it; the service keeps nothing, so any replica can finish
// a sign-in another one started. Tampered, foreign or expired values are refused alike.
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import { decodeBase64Strict } from '../config/checks.js';

export const STATE_COOKIE_MAX_AGE_SECS = 600;

const VERSION = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const HKDF_INFO = 'svc-oidc-state';
/** Binds the ciphertext to its purpose: a value sealed for something else never opens here. */
const AAD = Buffer.from('svc_oidc/v1');

export interface SignInState {
  state: string;
  nonce: string;
  codeVerifier: string;
  /** Milliseconds since the epoch, from the service clock. */
  createdAt: number;
  /** Where the browser goes after sign-in: a path on this origin. */
  returnTo: string;
}

/** The 32-byte cookie key derived from the base64 `security.secret_key`. */
export function stateCookieKey(secretKeyBase64: string): Buffer {
  const ikm = decodeBase64Strict(secretKeyBase64);
  if (!ikm || ikm.length === 0) throw new Error('security.secret_key is not valid base64');
  return Buffer.from(hkdfSync('sha256', ikm, Buffer.alloc(0), HKDF_INFO, 32));
}

export function sealState(key: Buffer, s: SignInState): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(AAD);
  const plain = Buffer.from(JSON.stringify({ s: s.state, n: s.nonce, v: s.codeVerifier, t: s.createdAt, r: s.returnTo }));
  const body = Buffer.concat([cipher.update(plain), cipher.final()]);
  return Buffer.concat([Buffer.from([VERSION]), iv, body, cipher.getAuthTag()]).toString('base64url');
}

export type OpenResult =
  | { ok: true; value: SignInState }
  | { ok: false; reason: 'missing' | 'invalid' | 'expired' };

/** Opens a cookie value; `now` is the service clock in ms. */
export function openState(key: Buffer, cookie: string | undefined, now: number, maxAgeSecs = STATE_COOKIE_MAX_AGE_SECS): OpenResult {
  if (!cookie) return { ok: false, reason: 'missing' };
  if (cookie.length > 4096 || !/^[A-Za-z0-9_-]+$/.test(cookie)) return { ok: false, reason: 'invalid' };
  const raw = Buffer.from(cookie, 'base64url');
  if (raw.length < 1 + IV_BYTES + TAG_BYTES + 2 || raw[0] !== VERSION) return { ok: false, reason: 'invalid' };
  let parsed: unknown;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(1, 1 + IV_BYTES));
    decipher.setAAD(AAD);
    decipher.setAuthTag(raw.subarray(raw.length - TAG_BYTES));
    const plain = Buffer.concat([decipher.update(raw.subarray(1 + IV_BYTES, raw.length - TAG_BYTES)), decipher.final()]);
    parsed = JSON.parse(plain.toString('utf8'));
  } catch {
    return { ok: false, reason: 'invalid' };
  }
  const p = parsed as { s?: unknown; n?: unknown; v?: unknown; t?: unknown; r?: unknown };
  if (typeof p.s !== 'string' || typeof p.n !== 'string' || typeof p.v !== 'string' || typeof p.t !== 'number' || typeof p.r !== 'string') {
    return { ok: false, reason: 'invalid' };
  }
  const age = now - p.t;
  if (age < -60_000 || age > maxAgeSecs * 1000) return { ok: false, reason: 'expired' };
  return { ok: true, value: { state: p.s, nonce: p.n, codeVerifier: p.v, createdAt: p.t, returnTo: p.r } };
}

/** Constant-time equality of two strings (the returned `state` against the remembered one). */
export function sameString(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
