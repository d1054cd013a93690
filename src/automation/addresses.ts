// Address rules of the SSRF gate (SPEC 5.3.7): which IP addresses a webhook may connect to, and
// the `automation.webhook_allow_hosts` list (host names and CIDRs) that lifts the refusal.
//
// Pure functions, no I/O. An address is public only when it lies outside every special-purpose
// block of the IANA IPv4 and IPv6 registries; IPv6 must also be global unicast (2000::/3).
// Addresses that carry an IPv4 address inside IPv6 (IPv4-mapped ::ffff:0:0/96, IPv4-compatible
// ::/96, NAT64 64:ff9b::/96, 6to4 2002::/16) are judged by the IPv4 address they carry, so
// `::ffff:127.0.0.1` is loopback however it is written.
import { isIP } from 'node:net';
import { validAllowEntry } from '../config/sections/automation.js';

interface Block4 { base: number; bits: number; why: string }
interface Block6 { base: bigint; bits: number; why: string }

function parse4(ip: string): number | null {
  const parts = ip.split('.');
  if (parts.length !== 4) return null;
  let n = 0;
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p)) return null;
    const v = Number(p);
    if (v > 255) return null;
    n = n * 256 + v;
  }
  return n;
}

/** The 128-bit value of an IPv6 address (zone index dropped), or null. */
function parse6(ip: string): bigint | null {
  let s = ip.replace(/^\[|\]$/g, '');
  const zone = s.indexOf('%');
  if (zone >= 0) s = s.slice(0, zone);
  if (isIP(s) !== 6) return null;
  // A trailing dotted IPv4 part becomes two hextets.
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(s);
  if (dotted) {
    const v4 = parse4(dotted[1]!);
    if (v4 === null) return null;
    s = s.slice(0, -dotted[1]!.length) + `${(v4 >>> 16).toString(16)}:${(v4 & 0xffff).toString(16)}`;
  }
  const [head, tail] = s.includes('::') ? s.split('::') as [string, string] : [s, undefined];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = tail === undefined ? h : [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  if (groups.length !== 8) return null;
  let n = 0n;
  for (const g of groups) n = (n << 16n) + BigInt(parseInt(g || '0', 16));
  return n;
}

function cidr4(s: string, why: string): Block4 {
  const [a, b] = s.split('/');
  return { base: parse4(a!)!, bits: Number(b), why };
}
function cidr6(s: string, why: string): Block6 {
  const [a, b] = s.split('/');
  return { base: parse6(a!)!, bits: Number(b), why };
}

const in4 = (ip: number, b: { base: number; bits: number }) =>
  b.bits === 0 || (ip >>> (32 - b.bits)) === (b.base >>> (32 - b.bits));
const in6 = (ip: bigint, b: { base: bigint; bits: number }) =>
  b.bits === 0 || (ip >> BigInt(128 - b.bits)) === (b.base >> BigInt(128 - b.bits));

// IANA IPv4 Special-Purpose Address Registry, plus multicast and the reserved 240/4.
const V4: Block4[] = [
  cidr4('0.0.0.0/8', 'an unspecified ("this network") address'),
  cidr4('10.0.0.0/8', 'a private address (10.0.0.0/8)'),
  cidr4('100.64.0.0/10', 'a carrier-grade NAT address (100.64.0.0/10)'),
  cidr4('127.0.0.0/8', 'a loopback address'),
  cidr4('169.254.0.0/16', 'a link-local address (169.254.0.0/16, where cloud metadata services answer)'),
  cidr4('172.16.0.0/12', 'a private address (172.16.0.0/12)'),
  cidr4('192.0.0.0/24', 'an IETF protocol assignment (192.0.0.0/24)'),
  cidr4('192.0.2.0/24', 'a documentation address (192.0.2.0/24)'),
  cidr4('192.88.99.0/24', 'a 6to4 relay anycast address (192.88.99.0/24)'),
  cidr4('192.168.0.0/16', 'a private address (192.168.0.0/16)'),
  cidr4('198.18.0.0/15', 'a benchmarking address (198.18.0.0/15)'),
  cidr4('198.51.100.0/24', 'a documentation address (198.51.100.0/24)'),
  cidr4('203.0.113.0/24', 'a documentation address (203.0.113.0/24)'),
  cidr4('224.0.0.0/4', 'a multicast address'),
  cidr4('255.255.255.255/32', 'the broadcast address'),
  cidr4('240.0.0.0/4', 'a reserved address (240.0.0.0/4)'),
];

// IANA IPv6 Special-Purpose Address Registry (the blocks inside 2000::/3; everything outside it
// is refused as not global unicast).
const V6: Block6[] = [
  cidr6('2001::/23', 'an IETF protocol assignment (2001::/23, Teredo included)'),
  cidr6('2001:db8::/32', 'a documentation address (2001:db8::/32)'),
  cidr6('3fff::/20', 'a documentation address (3fff::/20)'),
];
const GLOBAL6 = cidr6('2000::/3', '');
const NOT_GLOBAL6: Block6[] = [
  cidr6('::/128', 'the unspecified address'),
  cidr6('::1/128', 'a loopback address'),
  cidr6('64:ff9b:1::/48', 'a local-use NAT64 address (64:ff9b:1::/48)'),
  cidr6('100::/64', 'a discard-only address (100::/64)'),
  cidr6('fc00::/7', 'a unique-local address (fc00::/7)'),
  cidr6('fe80::/10', 'a link-local address (fe80::/10)'),
  cidr6('fec0::/10', 'a site-local address (fec0::/10)'),
  cidr6('ff00::/8', 'a multicast address'),
];
// IPv6 blocks whose low 32 bits (or, for 6to4, bits 16-48) are an IPv4 address.
const MAPPED = cidr6('::ffff:0:0/96', '');
const COMPAT = cidr6('::/96', '');
const NAT64 = cidr6('64:ff9b::/96', '');
const SIX_TO_FOUR = cidr6('2002::/16', '');

function v4Reason(n: number): string | null {
  for (const b of V4) if (in4(n, b)) return b.why;
  return null;
}

function v6Reason(n: bigint): string | null {
  const low32 = Number(n & 0xffffffffn);
  if (in6(n, MAPPED)) return prefixed('an IPv4-mapped IPv6 address', v4Reason(low32));
  if (in6(n, NAT64)) return prefixed('a NAT64 address', v4Reason(low32));
  if (in6(n, SIX_TO_FOUR)) return prefixed('a 6to4 address', v4Reason(Number((n >> 80n) & 0xffffffffn)));
  for (const b of NOT_GLOBAL6) if (in6(n, b)) return b.why;
  if (in6(n, COMPAT)) return prefixed('an IPv4-compatible IPv6 address (deprecated)', v4Reason(low32) ?? 'a deprecated form');
  if (!in6(n, GLOBAL6)) return 'a reserved IPv6 address (outside global unicast 2000::/3)';
  for (const b of V6) if (in6(n, b)) return b.why;
  return null;
}

const prefixed = (what: string, inner: string | null) => (inner ? `${what} carrying ${inner}` : null);

/**
 * Why `ip` is not a public address ("a loopback address", ...), or null when it is public.
 * A string that is no IP address at all is refused too.
 */
export function nonPublicReason(ip: string): string | null {
  const bare = ip.replace(/^\[|\]$/g, '');
  const kind = isIP(bare.split('%')[0]!);
  if (kind === 4) return v4Reason(parse4(bare)!);
  if (kind === 6) {
    const n = parse6(bare);
    return n === null ? 'not an IP address' : v6Reason(n);
  }
  return 'not an IP address';
}

// ---------------------------------------------------------------------------------------------
// The allow list
// ---------------------------------------------------------------------------------------------

type Range = { v: 4; base: number; bits: number } | { v: 6; base: bigint; bits: number };

export interface AllowList {
  /** Host names (lower case, no trailing dot) allowed whatever they resolve to. */
  hosts: ReadonlySet<string>;
  /** Address ranges (an IP literal is a /32 or /128) allowed. */
  ranges: readonly Range[];
}

/** Lower case, no trailing dot, no IPv6 brackets. */
export function normalHost(host: string): string {
  return host.toLowerCase().replace(/\.$/, '').replace(/^\[|\]$/g, '');
}

function parseAllowEntry(raw: string): { host: string } | { range: Range } {
  if (!validAllowEntry(raw)) throw new Error(`webhook_allow_hosts entry ${JSON.stringify(raw)} is neither a host name nor a CIDR such as 10.0.0.0/8`);
  const e = raw.trim();
  const slash = e.indexOf('/');
  const addr = normalHost(slash >= 0 ? e.slice(0, slash) : e);
  const kind = isIP(addr);
  if (!kind) return { host: addr };
  const bits = slash >= 0 ? Number(e.slice(slash + 1)) : kind === 6 ? 128 : 32;
  if (kind === 4) return { range: { v: 4, base: parse4(addr)!, bits } };
  const base = parse6(addr)!;
  // ::ffff:a.b.c.d/n is an IPv4 range written the mapped way.
  if (in6(base, MAPPED) && bits >= 96) return { range: { v: 4, base: Number(base & 0xffffffffn), bits: bits - 96 } };
  return { range: { v: 6, base, bits } };
}

/** Builds the allow list; throws on an unusable entry (the startup check reports it first). */
export function parseAllowList(entries: readonly string[]): AllowList {
  const hosts = new Set<string>();
  const ranges: Range[] = [];
  for (const e of entries) {
    const p = parseAllowEntry(e);
    if ('host' in p) hosts.add(p.host);
    else ranges.push(p.range);
  }
  return { hosts, ranges };
}

export function hostAllowed(list: AllowList, host: string): boolean {
  return list.hosts.has(normalHost(host));
}

/** Whether a (resolved) address lies in one of the allowed ranges; IPv4-mapped IPv6 counts as IPv4. */
export function addressAllowed(list: AllowList, ip: string): boolean {
  const bare = normalHost(ip).split('%')[0]!;
  const kind = isIP(bare);
  let v4: number | null = kind === 4 ? parse4(bare) : null;
  const v6 = kind === 6 ? parse6(bare) : null;
  if (v6 !== null && in6(v6, MAPPED)) v4 = Number(v6 & 0xffffffffn);
  for (const r of list.ranges) {
    if (r.v === 4 && v4 !== null && in4(v4, r)) return true;
    if (r.v === 6 && v6 !== null && in6(v6, r)) return true;
  }
  return false;
}
