// Plan tasks of server-side scan planning: a large table's plan is answered with opaque tokens,
// each naming a group of the snapshot's data manifests (or a range of entries of one large
// manifest) that `fetchScanTasks` turns into file scan tasks. A token is stateless and signed: it
// carries the scan request, the workspace, the table (its catalog row id), the snapshot and schema
// the plan chose, its group of manifests and an expiry, deflated and signed with HMAC-SHA256 under
// a key derived from `catalog.auth_token` (the same on every replica), so any replica serves it
// and no client can forge, widen or move one to another table. Bound to the table's row, a token
// dies with a drop (a table created again under the name has another row).
import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import type { Services } from '../services.js';
import type { ManifestFile } from '../iceberg/manifests.js';
import type { ManifestSlice } from '../iceberg/planner.js';
import { IcebergError } from './errors.js';
import { parseJson } from './json.js';
import { jsonText } from './scan-json.js';
import type { ScanRequest } from './scan-request.js';

/** How long a plan task may be fetched after its plan (a scan fetches its tasks when it starts). */
export const PLAN_TASK_TTL_MS = 60 * 60_000;
/** A token larger than this is not one of ours (a request's filter is bounded, see expressions.ts). */
const MAX_TOKEN_CHARS = 1024 * 1024;
const MAX_CLAIMS_BYTES = 8 * 1024 * 1024;
/** Entries assumed for a manifest whose list gives no file counts (format v1 writers may omit them). */
const UNKNOWN_ENTRIES = 100;

export interface PlanTaskClaims {
  v: 1;
  /** the plan id (cancelling the plan on the replica that made it refuses its tasks there) */
  p: string;
  /** workspace id and catalog table row id */
  w: string;
  t: string;
  /** the snapshot and schema the plan chose */
  s: string;
  c: number;
  q: ScanRequest;
  /** the group: [manifest index, first entry, end entry] */
  g: Array<[number, number, number]>;
  /** expiry, ms since the epoch */
  e: number;
}

export const noSuchPlanTask = (why: string) => new IcebergError(404, 'NoSuchPlanTaskException', `The plan task does not exist: ${why}`);

const keys = new WeakMap<Services, Buffer>();
function keyOf(s: Services): Buffer {
  let k = keys.get(s);
  if (!k) {
    k = Buffer.from(hkdfSync('sha256', s.config.catalog.auth_token, 'svc', 'catalog scan plan tasks v1', 32));
    keys.set(s, k);
  }
  return k;
}

const mac = (s: Services, body: string) => createHmac('sha256', keyOf(s)).update(`plan-task.${body}`).digest();

export function signPlanTask(s: Services, claims: PlanTaskClaims): string {
  const body = deflateRawSync(Buffer.from(jsonText(claims))).toString('base64url');
  return `${body}.${mac(s, body).toString('base64url')}`;
}

/** The claims of a token this service signed and that has not expired; else 404 NoSuchPlanTaskException. */
export function verifyPlanTask(s: Services, token: string): PlanTaskClaims {
  const dot = token.indexOf('.');
  if (token.length > MAX_TOKEN_CHARS || dot <= 0) throw noSuchPlanTask('not a plan task of this catalog');
  const body = token.slice(0, dot);
  const sig = Buffer.from(token.slice(dot + 1), 'base64url');
  const want = mac(s, body);
  if (sig.length !== want.length || !timingSafeEqual(sig, want)) throw noSuchPlanTask('not a plan task of this catalog');
  let claims: PlanTaskClaims;
  try {
    claims = parseJson(inflateRawSync(Buffer.from(body, 'base64url'), { maxOutputLength: MAX_CLAIMS_BYTES }).toString('utf8')) as PlanTaskClaims;
  } catch {
    throw noSuchPlanTask('not a plan task of this catalog');
  }
  if (claims?.v !== 1) throw noSuchPlanTask('not a plan task of this catalog');
  if (claims.e < s.clock.now().getTime()) throw noSuchPlanTask('it expired; plan the scan again');
  return claims;
}

const entriesOf = (m: ManifestFile) => (m.addedFilesCount === null || m.existingFilesCount === null ? UNKNOWN_ENTRIES : m.addedFilesCount + m.existingFilesCount + (m.deletedFilesCount ?? 0));

/** Manifest entries a plan reads, as the manifest list counts them (before pruning by file). */
export const plannedEntries = (manifests: ManifestFile[]) => manifests.reduce((n, m) => n + entriesOf(m), 0);

/**
 * The data manifests cut into groups of about `per` entries: whole manifests together while they
 * fit, a larger manifest in ranges of `per` entries (its last range open-ended, whatever its count said).
 */
export function groupManifests(manifests: ManifestFile[], per: number): ManifestSlice[][] {
  const groups: ManifestSlice[][] = [];
  let current: ManifestSlice[] = [];
  let size = 0;
  const flush = () => { if (current.length) groups.push(current); current = []; size = 0; };
  manifests.forEach((m, index) => {
    const n = entriesOf(m);
    if (n > per) {
      flush();
      for (let from = 0; from < n; from += per) groups.push([{ index, from, to: from + per >= n ? Number.MAX_SAFE_INTEGER : from + per }]);
      return;
    }
    if (size + n > per) flush();
    current.push({ index, from: 0, to: Number.MAX_SAFE_INTEGER });
    size += n;
  });
  flush();
  return groups;
}

export const toClaimGroup = (g: ManifestSlice[]): Array<[number, number, number]> => g.map((x) => [x.index, x.from, x.to]);
export const fromClaimGroup = (g: Array<[number, number, number]>): ManifestSlice[] => g.map(([index, from, to]) => ({ index, from, to }));
