// Alerts and reports (SPEC 8 automation).
import { isIP } from 'node:net';
import { z } from 'zod';
import { count, str, optStr, bool, section, meta } from '../builders.js';

const HOST_NAME = /^(?=.{1,253}$)([a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*$/;

/** Whether an entry of webhook_allow_hosts is a host name, an IP address or a CIDR (addr/bits). */
export function validAllowEntry(raw: string): boolean {
  const e = raw.trim().toLowerCase().replace(/\.$/, '');
  const slash = e.indexOf('/');
  const addr = (slash >= 0 ? e.slice(0, slash) : e).replace(/^\[|\]$/g, '');
  const kind = isIP(addr);
  if (slash < 0) return kind !== 0 || HOST_NAME.test(addr);
  const bits = e.slice(slash + 1);
  return kind !== 0 && /^\d{1,3}$/.test(bits) && Number(bits) <= (kind === 6 ? 128 : 32);
}

export const automation = section('alerts and reports', {
  enabled: bool(true, 'run the schedule ticker'),
  tick_interval_secs: count(30, 'schedule tick'),
  webhook_allow_hosts: z
    .array(z.string().refine(validAllowEntry, { error: 'must be a host name, an IP address or a CIDR such as 10.0.0.0/8' }))
    .default(() => [])
    .meta(meta('hosts a webhook may reach though they resolve to private address space: host names (matched exactly), IP addresses and CIDRs (matched against the address connected to)')),
  renderer_url: str('http://renderer:8080', 'screenshot renderer base URL'),
  public_url: str('http://svc:8080', 'base URL the renderer uses to reach the server'),
  browser_url: optStr('base URL in notification links; unset falls back to `automation.public_url`'),
});
