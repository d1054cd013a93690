// The one way alerts and reports reach a URL: an HTTP client behind the SSRF gate (SPEC 5.3.7).
//
// The gate is applied to the address actually connected to: the socket's DNS lookup is ours, and
// it refuses (before any connection) when a resolved address is not public and neither the host
// nor the address is in `automation.webhook_allow_hosts`. There is no second lookup between the
// check and the connect, so a name that answers a public address to a check and 127.0.0.1 to the
// connect (DNS rebinding) has no gap to use. IP literals, which skip the lookup, are checked
// before the request, and every socket's remote address is checked again when it connects.
// Redirects are followed by hand, each hop through the same gate, at most MAX_REDIRECTS of them.
// Save, test-send and delivery all call this module, so no path is checked differently.
import { http, https } from '../util/node-http.js';
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP, type Socket, type LookupFunction } from 'node:net';
import { DomainError } from '../errors.js';
import { addressAllowed, hostAllowed, nonPublicReason, normalHost, parseAllowList, type AllowList } from './addresses.js';

export const MAX_REDIRECTS = 5;
export const MAX_URL_LENGTH = 2048;
/** Bytes of a response body kept (for the delivery log); the rest is not read. */
export const MAX_RESPONSE_BYTES = 4096;

/** A webhook target the gate refuses; answered as 400 on save and test-send. */
export class TargetRefused extends DomainError {
  constructor(message: string) {
    super('bad_request', message);
    this.name = 'TargetRefused';
  }
}

export interface ResolvedAddress { address: string; family: 4 | 6 }
/** Host name -> addresses; tests inject one to make a name resolve to 127.0.0.1 without DNS. */
export type Resolver = (host: string) => Promise<ResolvedAddress[]>;

export const systemResolver: Resolver = async (host) =>
  (await dnsLookup(host, { all: true, verbatim: true })).map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));

export interface Gate { allow: AllowList; resolve: Resolver }

export function createGate(allowHosts: readonly string[], resolve: Resolver = systemResolver): Gate {
  return { allow: parseAllowList(allowHosts), resolve };
}

const HINT = 'list the host in automation.webhook_allow_hosts to allow it';

/** Why the URL text itself is unusable as a target (scheme, credentials, length), or undefined. */
export function targetUrlProblem(raw: string): string | undefined {
  if (raw.length > MAX_URL_LENGTH) return `the URL is longer than ${MAX_URL_LENGTH} characters`;
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return `${JSON.stringify(raw.slice(0, 200))} is not an absolute URL`;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return `the URL scheme must be http or https, not ${u.protocol.replace(/:$/, '')}`;
  if (u.username || u.password) return 'the URL must not carry a user name or password';
  if (!u.hostname) return 'the URL has no host';
  return undefined;
}

/** The refusal for one resolved address of `host`, or null when it may be connected to. */
function refusal(gate: Gate, host: string, address: string): string | null {
  if (hostAllowed(gate.allow, host) || addressAllowed(gate.allow, address)) return null;
  const why = nonPublicReason(address);
  if (!why) return null;
  return normalHost(host) === normalHost(address)
    ? `webhook target refused: ${normalHost(address)} is ${why}; ${HINT}`
    : `webhook target refused: ${host} resolves to ${normalHost(address)}, ${why}; ${HINT}`;
}

/**
 * The check made on save and before test-send: the URL is usable and every address its host
 * resolves to now may be connected to. Delivery repeats it at connect time (see `send`).
 */
export async function checkTarget(gate: Gate, raw: string): Promise<void> {
  const problem = targetUrlProblem(raw);
  if (problem) throw new TargetRefused(`webhook target refused: ${problem}`);
  const host = normalHost(new URL(raw).hostname);
  if (isIP(host)) {
    const r = refusal(gate, host, host);
    if (r) throw new TargetRefused(r);
    return;
  }
  let addrs: ResolvedAddress[];
  try {
    addrs = await gate.resolve(host);
  } catch {
    throw new TargetRefused(`webhook target refused: ${host} does not resolve`);
  }
  if (addrs.length === 0) throw new TargetRefused(`webhook target refused: ${host} does not resolve`);
  for (const a of addrs) {
    const r = refusal(gate, host, a.address);
    if (r) throw new TargetRefused(r);
  }
}

/** The socket lookup used for every connection: resolve once, refuse, hand the same addresses on. */
function gatedLookup(gate: Gate, host: string): LookupFunction {
  return ((hostname: string, options: { all?: boolean; family?: number }, cb: (...a: unknown[]) => void) => {
    gate.resolve(hostname).then((addrs) => {
      const usable = options.family === 4 || options.family === 6 ? addrs.filter((a) => a.family === options.family) : addrs;
      if (usable.length === 0) return cb(Object.assign(new Error(`${hostname} does not resolve`), { code: 'ENOTFOUND' }));
      // Every address is judged, not only the first: a name answering one public and one private
      // address must not reach the private one through the connection attempts of autoSelectFamily.
      for (const a of usable) {
        const r = refusal(gate, host, a.address);
        if (r) return cb(new TargetRefused(r));
      }
      if (options.all) return cb(null, usable);
      return cb(null, usable[0]!.address, usable[0]!.family);
    }, (err: Error) => cb(err));
  }) as unknown as LookupFunction;
}

export interface OutboundRequest {
  url: string;
  method: 'POST' | 'GET';
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Whole exchange, redirects included. */
  timeoutMs: number;
}

export interface OutboundResponse {
  status: number;
  /** The first MAX_RESPONSE_BYTES of the body, as text. */
  body: string;
  /** The URL that answered (after redirects). */
  url: string;
  redirects: number;
}

interface HopResult { status: number; location?: string; body: string }

function hop(gate: Gate, url: URL, req: OutboundRequest, signal: AbortSignal): Promise<HopResult> {
  const host = normalHost(url.hostname);
  if (isIP(host)) {
    const r = refusal(gate, host, host);
    if (r) return Promise.reject(new TargetRefused(r));
  }
  const mod = url.protocol === 'https:' ? https : http;
  return new Promise<HopResult>((resolve, reject) => {
    const headers: Record<string, string> = { 'user-agent': 'svc-automation', ...req.headers };
    if (req.body !== undefined) headers['content-length'] = String(Buffer.byteLength(req.body));
    const r = mod.request(url, { method: req.method, headers, lookup: gatedLookup(gate, host), agent: false, signal });
    r.on('socket', (s: Socket) => {
      s.once('connect', () => {
        const why = s.remoteAddress ? refusal(gate, host, s.remoteAddress) : 'webhook target refused: no remote address';
        if (why) r.destroy(new TargetRefused(why));
      });
    });
    r.on('error', reject);
    r.on('response', (res) => {
      const chunks: Buffer[] = [];
      let kept = 0;
      const done = () => resolve({ status: res.statusCode ?? 0, location: res.headers.location, body: Buffer.concat(chunks).toString('utf8') });
      res.on('data', (c: Buffer) => {
        if (kept < MAX_RESPONSE_BYTES) {
          chunks.push(c.subarray(0, MAX_RESPONSE_BYTES - kept));
          kept += Math.min(c.length, MAX_RESPONSE_BYTES - kept);
          if (kept >= MAX_RESPONSE_BYTES) { res.destroy(); done(); }
        }
      });
      res.on('end', done);
      res.on('error', reject);
    });
    r.end(req.body);
  });
}

const REDIRECT = new Set([301, 302, 303, 307, 308]);

/**
 * Sends one request through the gate, following redirects (each checked like the first URL).
 * Throws TargetRefused when the gate refuses a hop, or an Error for network failures and time-outs.
 */
export async function send(gate: Gate, req: OutboundRequest): Promise<OutboundResponse> {
  const problem = targetUrlProblem(req.url);
  if (problem) throw new TargetRefused(`webhook target refused: ${problem}`);
  const signal = AbortSignal.timeout(req.timeoutMs);
  let url = new URL(req.url);
  let current = req;
  for (let redirects = 0; ; redirects++) {
    let res: HopResult;
    try {
      res = await hop(gate, url, current, signal);
    } catch (err) {
      if (err instanceof TargetRefused && redirects > 0) {
        throw new TargetRefused(err.message.replace(/^webhook target refused: /, `webhook target refused after a redirect to ${url.origin}: `));
      }
      if (signal.aborted && !(err instanceof TargetRefused)) throw new Error(`no answer within ${Math.round(req.timeoutMs / 1000)} s`);
      throw err;
    }
    if (!REDIRECT.has(res.status) || !res.location) return { status: res.status, body: res.body, url: url.toString(), redirects };
    if (redirects >= MAX_REDIRECTS) throw new Error(`more than ${MAX_REDIRECTS} redirects`);
    let next: URL;
    try {
      next = new URL(res.location, url);
    } catch {
      throw new Error('a redirect named an invalid location');
    }
    const p = targetUrlProblem(next.toString());
    if (p) throw new TargetRefused(`webhook target refused: a redirect to ${next.origin}: ${p}`);
    // 303 (and 301/302 after a POST, as browsers do) continue as a GET without the body.
    if (res.status === 303 || ((res.status === 301 || res.status === 302) && current.method === 'POST')) {
      const { 'content-type': _ct, ...rest } = current.headers ?? {};
      current = { ...current, method: 'GET', body: undefined, headers: rest };
    }
    url = next;
  }
}
