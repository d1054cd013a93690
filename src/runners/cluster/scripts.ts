// The helper containers' shell scripts (input.sh, output.sh beside this file; POSIX sh, the
// helper_image needs sh, cat, mkdir, dirname, find, tar, gzip, base64, wc, sleep: busybox has them
// all). Paths come from the environment so that the scripts can be exercised outside a pod. The
// scripts' leading comment lines are left out of the pod spec.
import { readFileSync } from 'node:fs';

/** Marker lines of output.sh around the archive (and the line reporting a failure). */
export const OUTPUT_BEGIN = 'svc-output-begin';
export const OUTPUT_END = 'svc-output-end';
export const OUTPUT_ERROR = 'svc-output-error';

function script(file: string): string {
  const text = readFileSync(new URL(file, import.meta.url), 'utf8');
  const lines = text.split('\n');
  let first = 0;
  while (first < lines.length && lines[first]!.startsWith('#')) first++;
  return lines.slice(first).join('\n');
}

/** svc-input: copies SVC_INPUT_FILES (newline separated) from SVC_INPUT_DIR into SVC_WORKDIR. */
export const INPUT_SCRIPT = script('./input.sh');

/** svc-output: on SIGTERM, prints the matching files of SVC_WORKDIR as a base64 tar.gz between markers. */
export const OUTPUT_SCRIPT = script('./output.sh');
