// The Idempotency-Key request header of execution starts and webhooks (docs/workflows.md): one
// value, as the IETF draft and payment APIs send it; createExecution checks its form.
import type { IncomingHttpHeaders } from 'node:http';
import { badRequest } from '../errors.js';

export function idempotencyKeyOf(headers: IncomingHttpHeaders): string | undefined {
  const v = headers['idempotency-key'];
  if (v === undefined) return undefined;
  if (Array.isArray(v)) throw badRequest('send one Idempotency-Key header');
  return v;
}
