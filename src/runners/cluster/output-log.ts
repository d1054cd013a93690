// The output files of a task: the svc-output helper prints them as a base64 tar.gz between marker
// lines in its own log (output.sh); this decodes that log.
import { gunzipSync } from 'node:zlib';
import { overTask, readTarBuffer, type OutputLimits } from '../output-files.js';
import { matchesAnyOutput, normaliseRelativePath } from '../types.js';
import { OUTPUT_BEGIN, OUTPUT_END, OUTPUT_ERROR } from './scripts.js';

/** Decodes the svc-output container's log into files (relative paths) matching `outputFiles`. */
export async function parseOutputLog(logText: string, outputFiles: string[], limits?: OutputLimits): Promise<Record<string, Uint8Array>> {
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
  // Bounded: a small archive may gunzip to gigabytes. The tar adds headers and padding per file.
  const maxTar = limits ? limits.maxTaskBytes + 1024 * 1024 : undefined;
  let tarBuf: Buffer;
  try {
    tarBuf = gunzipSync(gz, maxTar ? { maxOutputLength: maxTar } : {});
  } catch (err) {
    if (limits && (err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') throw overTask(limits.maxTaskBytes);
    throw new Error(`collecting output files failed: the archive does not gunzip (${(err as Error).message})`);
  }
  const keep = matchesAnyOutput(outputFiles);
  return readTarBuffer(tarBuf, (name) => {
    let rel: string;
    try {
      rel = normaliseRelativePath(name);
    } catch {
      return null;
    }
    return keep(rel) ? rel : null;
  }, limits);
}
