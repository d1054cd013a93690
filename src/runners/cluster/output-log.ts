// The output files of a task: the svc-output helper prints them as a base64 tar.gz between marker
// lines in its own log (output.sh); this decodes that log.
import { gunzipSync } from 'node:zlib';
import * as tar from 'tar-stream';
import { matchesAnyOutput, normaliseRelativePath } from '../types.js';
import { OUTPUT_BEGIN, OUTPUT_END, OUTPUT_ERROR } from './scripts.js';

/** Decodes the svc-output container's log into files (relative paths) matching `outputFiles`. */
export async function parseOutputLog(logText: string, outputFiles: string[]): Promise<Record<string, Uint8Array>> {
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
  const tarBuf = gunzipSync(gz);
  const keep = matchesAnyOutput(outputFiles);
  const out: Record<string, Uint8Array> = {};
  const extract = tar.extract();
  const done = (async () => {
    for await (const entry of extract) {
      const chunks: Buffer[] = [];
      for await (const c of entry) chunks.push(Buffer.from(c as Uint8Array));
      if (entry.header.type !== 'file' && entry.header.type !== 'contiguous-file') continue;
      let rel: string;
      try {
        rel = normaliseRelativePath(entry.header.name);
      } catch {
        continue;
      }
      if (keep(rel)) out[rel] = new Uint8Array(Buffer.concat(chunks));
    }
  })();
  extract.end(tarBuf);
  await done;
  return out;
}
