// Engine images are pinned (SPEC 9.4): a built-in table of the engine kinds and the versions that
// were measured, or an image the caller pins by digest. A floating tag (`latest`, no tag, a bare
// major) is refused, at create and at explain. Pure: no registry is asked anything.
import type { EngineKind } from '../db/engine-types.js';

export interface PinnedVersion {
  version: string;
  /** repository:tag of the release */
  image: string;
  /** HTTP port clients connect to */
  port: number;
}

export interface EngineKindInfo {
  kind: EngineKind;
  title: string;
  /** the version a create without one gets */
  default_version: string;
  /** Trino numbers its releases 475, 476: there a bare number names one release, not a major */
  bare_number_is_release: boolean;
  versions: PinnedVersion[];
}

/** The measured versions. The first of each kind's list is its default. */
export const PINNED: Record<EngineKind, EngineKindInfo> = {
  trino: {
    kind: 'trino', title: 'Trino', default_version: '476', bare_number_is_release: true,
    versions: [
      { version: '476', image: 'docker.io/trinodb/trino:476', port: 8080 },
      { version: '475', image: 'docker.io/trinodb/trino:475', port: 8080 },
    ],
  },
  olap: {
    kind: 'olap', title: 'StarRocks (all-in-one)', default_version: '3.4.5', bare_number_is_release: false,
    versions: [
      { version: '3.4.5', image: 'docker.io/starrocks/allin1-ubuntu:3.4.5', port: 8030 },
      { version: '3.3.16', image: 'docker.io/starrocks/allin1-ubuntu:3.3.16', port: 8030 },
    ],
  },
};

export const ENGINE_KINDS = Object.keys(PINNED) as EngineKind[];

export interface ImageRef {
  /** registry/path, normalised (docker.io and library/ filled in) */
  repository: string;
  tag: string | null;
  digest: string | null;
}

const DIGEST_RE = /^sha256:[0-9a-f]{64}$/;
const PATH_RE = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$/;
const TAG_RE = /^[\w][\w.-]{0,127}$/;
const FLOATING = new Set(['latest', 'stable', 'edge', 'nightly', 'main', 'master', 'dev', 'current']);

export class ImageError extends Error {}

/** Parses `[registry/]path[:tag][@sha256:<hex>]` the way the Docker CLI does. */
export function parseImageRef(ref: string): ImageRef {
  if (ref.length === 0 || ref.length > 512 || /\s/.test(ref)) throw new ImageError('image must be a reference of at most 512 characters without spaces');
  let rest = ref;
  let digest: string | null = null;
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!DIGEST_RE.test(digest)) throw new ImageError(`image ${ref}: the digest must be sha256:<64 lower-case hex digits>`);
  }
  let tag: string | null = null;
  const colon = rest.lastIndexOf(':');
  if (colon > rest.lastIndexOf('/')) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!TAG_RE.test(tag)) throw new ImageError(`image ${ref}: invalid tag`);
  }
  const parts = rest.split('/');
  let registry = 'docker.io';
  if (parts.length > 1 && (parts[0]!.includes('.') || parts[0]!.includes(':') || parts[0] === 'localhost')) registry = parts.shift()!;
  if (registry === 'docker.io' && parts.length === 1) parts.unshift('library');
  const path = parts.join('/');
  if (!PATH_RE.test(path)) throw new ImageError(`image ${ref}: invalid repository name`);
  return { repository: `${registry.toLowerCase()}/${path}`, tag, digest };
}

/** Why a tag floats, or null when it names one release. */
export function floatingReason(tag: string | null, bareNumberIsRelease = false): string | null {
  if (tag === null) return 'no tag';
  if (FLOATING.has(tag.toLowerCase())) return `the tag ${tag} moves`;
  if (/^v?\d+$/.test(tag) && !(bareNumberIsRelease && /^\d+$/.test(tag))) return `the tag ${tag} is a bare major version`;
  return null;
}

export interface ResolvedImage {
  /** what the provisioner runs: repository:tag of the table, or repository[:tag]@digest */
  image: string;
  repository: string;
  tag: string | null;
  digest: string | null;
  /** the table's version, or null for an image pinned by digest */
  version: string | null;
  port: number;
  pinned_by: 'version' | 'digest';
}

/**
 * The image an engine of `kind` runs: a version of the table (default: the kind's default), or
 * `image` pinned by digest, or `image` equal to a table entry. Throws ImageError with the reason.
 */
export function resolveImage(kind: EngineKind, opts: { version?: string; image?: string }): ResolvedImage {
  const info = PINNED[kind];
  const known = info.versions.map((v) => v.version).join(', ');
  if (opts.image === undefined) {
    const version = opts.version ?? info.default_version;
    const v = info.versions.find((x) => x.version === version);
    if (!v) throw new ImageError(`${info.title} ${version} is not a pinned version (pinned: ${known})`);
    const ref = parseImageRef(v.image);
    return { image: v.image, repository: ref.repository, tag: ref.tag, digest: null, version: v.version, port: v.port, pinned_by: 'version' };
  }
  const ref = parseImageRef(opts.image);
  const port = info.versions[0]!.port;
  if (ref.digest) {
    return { image: opts.image, repository: ref.repository, tag: ref.tag, digest: ref.digest, version: opts.version ?? null, port, pinned_by: 'digest' };
  }
  // a release of the table first: Trino's releases are bare numbers (476) and are not floating
  const v = info.versions.find((x) => { const p = parseImageRef(x.image); return p.repository === ref.repository && p.tag === ref.tag; });
  if (v) return { image: v.image, repository: ref.repository, tag: ref.tag, digest: null, version: v.version, port: v.port, pinned_by: 'version' };
  const floating = floatingReason(ref.tag, info.bare_number_is_release);
  if (floating) throw new ImageError(`image ${opts.image} has a floating tag (${floating}): use a pinned version (${known}) or pin a digest (@sha256:...)`);
  throw new ImageError(`image ${opts.image} is not a pinned version of ${info.title} (pinned: ${known}): pin a digest (@sha256:...) to run another image`);
}

/** Whether `repository` (normalised) is one of `allowed` (normalised the same way). */
export function imageAllowed(repository: string, allowed: readonly string[]): boolean {
  return allowed.some((a) => {
    try { return parseImageRef(a).repository === repository; } catch { return false; }
  });
}
