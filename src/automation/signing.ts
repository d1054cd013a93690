// Webhook signatures, the scheme Stripe and GitHub use: the receiver recomputes an HMAC-SHA256 of
// the timestamp and the exact body bytes with the automation's signing secret, compares it in
// constant time, and refuses timestamps too far from its clock (replays).
//
//   Svc-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>
//
// Several v1= entries may appear (none today; room for a rotation that signs with old and new).
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_HEADER = 'svc-signature';
/** Replays older (or newer) than this are refused by verifySignature. */
export const DEFAULT_TOLERANCE_SECS = 300;

/** A fresh signing secret: `whsec_` and 32 random bytes, base64url. */
export function newSigningSecret(): string {
  return `whsec_${randomBytes(32).toString('base64url')}`;
}

function mac(secret: string, t: number, body: string | Buffer): string {
  return createHmac('sha256', secret).update(`${t}.`).update(body).digest('hex');
}

/** The Svc-Signature header value for `body` sent at `nowSecs`. */
export function signatureHeader(secret: string, body: string | Buffer, nowSecs: number): string {
  const t = Math.floor(nowSecs);
  return `t=${t},v1=${mac(secret, t, body)}`;
}

/** What a receiver does: true when one v1 signature matches and t is within the tolerance. */
export function verifySignature(secret: string, header: string | undefined, body: string | Buffer, nowSecs: number, toleranceSecs = DEFAULT_TOLERANCE_SECS): boolean {
  if (!header || header.length > 1024) return false;
  let t = NaN;
  const sigs: string[] = [];
  for (const part of header.split(',')) {
    const [k, v] = part.split('=', 2);
    if (k === 't' && v && /^\d{1,12}$/.test(v)) t = Number(v);
    else if (k === 'v1' && v) sigs.push(v);
  }
  if (!Number.isFinite(t) || Math.abs(nowSecs - t) > toleranceSecs) return false;
  const want = Buffer.from(mac(secret, t, body), 'hex');
  return sigs.some((s) => {
    const got = Buffer.from(/^[0-9a-f]{64}$/.test(s) ? s : '', 'hex');
    return got.length === want.length && timingSafeEqual(got, want);
  });
}
