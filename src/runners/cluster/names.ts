// Names of a task pod: its containers and volumes, its DNS-1123 name, its labels and annotations.
import { createHash } from 'node:crypto';

/** Names of the containers and volumes of a task pod. */
export const POD_NAMES = {
  main: 'main',
  input: 'svc-input',
  output: 'svc-output',
  workVolume: 'svc-work',
  inputVolume: 'svc-in',
  tmpVolume: 'svc-tmp',
  inputMount: '/svc/in',
  tmpMount: '/svc/tmp',
} as const;

/** Annotation holding the end time of a kept pod (RFC 3339). */
export const ENDED_AT_ANNOTATION = 'svc/ended-at';
/** Annotation holding the unmodified attempt name. */
export const ATTEMPT_ANNOTATION = 'svc/attempt';

const shortHash = (s: string) => createHash('sha256').update(s).digest('hex').slice(0, 8);

/** DNS-1123 label from an attempt name (at most 63 characters; a hash keeps long names unique). */
export function podNameFor(name: string): string {
  let s = name.toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/-+/g, '-').replace(/^-+|-+$/g, '');
  if (s === '') s = 'svc-task';
  if (s.length > 63 || s !== name) {
    if (s.length > 54) s = s.slice(0, 54).replace(/-+$/, '');
    if (s !== name) s = `${s}-${shortHash(name)}`;
  }
  return s;
}

const LABEL_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const LABEL_PREFIX = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;

export function validLabelKey(key: string): boolean {
  const slash = key.lastIndexOf('/');
  if (slash < 0) return LABEL_NAME.test(key);
  return LABEL_PREFIX.test(key.slice(0, slash)) && LABEL_NAME.test(key.slice(slash + 1));
}

/** A label value Kubernetes accepts: at most 63 of [A-Za-z0-9._-], alphanumeric at both ends. */
export function labelValue(v: string): string {
  return v.replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 63).replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, '');
}
