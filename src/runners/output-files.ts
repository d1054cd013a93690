// Output files come back from a container as a tar stream (local engine) or a gzipped tar in the
// helper's log (cluster). Both are read entry by entry and stopped as soon as a file passes
// max_file_bytes or all files pass max_task_bytes: nothing past the caps is buffered, and a small
// archive that gunzips to gigabytes stops at the cap.
import { Readable } from 'node:stream';
import * as tar from 'tar-stream';

/** workflow.storage.max_file_bytes and max_task_bytes, as the runner enforces them. */
export interface OutputLimits { maxFileBytes: number; maxTaskBytes: number }

export class OutputTooLarge extends Error {}

export const overFile = (name: string, max: number) => new OutputTooLarge(`output file ${name} is over workflow.storage.max_file_bytes (${max})`);
export const overTask = (max: number) => new OutputTooLarge(`output files total over workflow.storage.max_task_bytes (${max})`);

/** Reads a tar stream; returns the regular files whose name `rename` maps (null: skipped), within `limits`. */
export async function readTarFiles(
  stream: NodeJS.ReadableStream,
  rename: (entryName: string) => string | null,
  limits?: OutputLimits,
): Promise<Record<string, Uint8Array>> {
  const out: Record<string, Uint8Array> = {};
  const extract = tar.extract();
  const source = stream as Readable;
  source.on('error', (e) => extract.destroy(e));
  source.pipe(extract as unknown as NodeJS.WritableStream);
  let total = 0;
  try {
    for await (const entry of extract) {
      const chunks: Buffer[] = [];
      const name = entry.header.type === 'file' || entry.header.type === 'contiguous-file' ? rename(entry.header.name) : null;
      let size = 0;
      for await (const c of entry) {
        if (name === null) continue;
        size += (c as Uint8Array).length;
        total += (c as Uint8Array).length;
        if (limits && size > limits.maxFileBytes) throw overFile(name, limits.maxFileBytes);
        if (limits && total > limits.maxTaskBytes) throw overTask(limits.maxTaskBytes);
        chunks.push(Buffer.from(c as Uint8Array));
      }
      if (name !== null) out[name] = new Uint8Array(Buffer.concat(chunks));
    }
  } catch (err) {
    source.unpipe(extract as unknown as NodeJS.WritableStream);
    source.destroy();
    throw err;
  }
  return out;
}

/** Reads a tar held in memory (the cluster helper's archive, once gunzipped). */
export function readTarBuffer(buf: Buffer, rename: (entryName: string) => string | null, limits?: OutputLimits) {
  return readTarFiles(Readable.from([buf]), rename, limits);
}
