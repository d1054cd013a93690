// The output files of a task: the svc-output helper prints them as a base64 tar.gz between marker
// lines in its own log (output.sh); this decodes that log.
import { Readable, Transform } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { overTask, readTarFiles, type OutputFileSink, type OutputLimits } from '../output-files.js';
import { matchesAnyOutput, normaliseRelativePath } from '../types.js';
import { OUTPUT_BEGIN, OUTPUT_END, OUTPUT_ERROR } from './scripts.js';

/** Decodes the svc-output container's log into files (relative paths) matching `outputFiles`. */
export async function parseOutputLog(logText: string, outputFiles: string[], limits?: OutputLimits, sink?: OutputFileSink): Promise<Record<string, Uint8Array>> {
  const lines = logText.split('\n').map((l) => l.replace(/\r$/, ''));
  const err = lines.find((l) => l.startsWith(OUTPUT_ERROR));
  if (err) throw new Error(`collecting output files failed in the helper container: ${err.slice(OUTPUT_ERROR.length).trim()}`);
  const begin = lines.lastIndexOf(OUTPUT_BEGIN);
  const endIdx = lines.findIndex((l, i) => i > begin && l.startsWith(OUTPUT_END));
  if (begin < 0 || endIdx < 0) {
    throw new Error('collecting output files failed: the helper container log holds no complete archive (too large for the container log, or the helper was stopped early)');
  }
  const [, countStr, bytesStr] = lines[endIdx]!.trim().split(/\s+/);
  const count = Number(countStr);
  const bytes = Number(bytesStr);
  if (count === 0) return {};
  const gz = Buffer.from(lines.slice(begin + 1, endIdx).join(''), 'base64');
  if (gz.length !== bytes) throw new Error(`collecting output files failed: archive of ${gz.length} bytes, the helper wrote ${bytes}`);
  // Gunzipped as a stream, never whole, and bounded: a small archive may gunzip to gigabytes.
  // The tar adds headers and padding per file.
  const maxTar = limits ? limits.maxTaskBytes + 1024 * 1024 : Infinity;
  let inflated = 0;
  const bounded = new Transform({
    transform(c: Buffer, _enc, cb) {
      inflated += c.length;
      cb(inflated > maxTar && limits ? overTask(limits.maxTaskBytes) : null, c);
    },
  });
  const gunzip = createGunzip();
  gunzip.on('error', (err) => bounded.destroy(new Error(`collecting output files failed: the archive does not gunzip (${err.message})`)));
  bounded.on('close', () => gunzip.destroy());
  Readable.from([gz]).pipe(gunzip).pipe(bounded);
  const keep = matchesAnyOutput(outputFiles);
  return readTarFiles(bounded, (name) => {
    let rel: string;
    try {
      rel = normaliseRelativePath(name);
    } catch {
      return null;
    }
    return keep(rel) ? rel : null;
  }, limits, sink);
}
