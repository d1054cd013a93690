// Output files come back from a container as a tar stream (local engine) or a gzipped tar in the
// helper's log (cluster). Both are read entry by entry and stopped as soon as a file passes
// max_file_bytes or all files pass max_task_bytes: nothing past the caps is buffered, and a small
// archive that gunzips to gigabytes stops at the cap. With a sink (RunCallbacks.onOutputFile) each
// file is handed on as a stream while it is read, so memory stays at a few chunks per file.
import { Readable, Transform } from 'node:stream';
import * as tar from 'tar-stream';

/** workflow.storage.max_file_bytes and max_task_bytes, as the runner enforces them. */
export interface OutputLimits { maxFileBytes: number; maxTaskBytes: number }

/** Receives one output file while it is read; `body` fails with OutputTooLarge past the caps. */
export type OutputFileSink = (name: string, body: Readable) => Promise<void>;

export class OutputTooLarge extends Error {}

export const overFile = (name: string, size: number, max: number) => new OutputTooLarge(`output file ${name} is ${size} bytes, over workflow.storage.max_file_bytes (${max})`);
export const overTask = (max: number) => new OutputTooLarge(`output files total over workflow.storage.max_task_bytes (${max})`);

/**
 * Reads a tar stream; returns the regular files whose name `rename` maps (null: skipped), within
 * `limits`. With `sink`, each file goes to the sink as it is read and the result is empty.
 */
export async function readTarFiles(
  stream: NodeJS.ReadableStream,
  rename: (entryName: string) => string | null,
  limits?: OutputLimits,
  sink?: OutputFileSink,
): Promise<Record<string, Uint8Array>> {
  const out: Record<string, Uint8Array> = {};
  const extract = tar.extract();
  const source = stream as Readable;
  source.on('error', (e) => extract.destroy(e));
  source.pipe(extract as unknown as NodeJS.WritableStream);
  let total = 0;
  /** Counts one chunk of `name` against the caps; the error to fail with, if passed. */
  const count = (name: string, size: number, n: number, declared: number): OutputTooLarge | undefined => {
    total += n;
    if (limits && size > limits.maxFileBytes) return overFile(name, Math.max(size, declared), limits.maxFileBytes);
    if (limits && total > limits.maxTaskBytes) return overTask(limits.maxTaskBytes);
    return undefined;
  };
  try {
    for await (const entry of extract) {
      const name = entry.header.type === 'file' || entry.header.type === 'contiguous-file' ? rename(entry.header.name) : null;
      if (name === null) {
        for await (const _ of entry) { /* skipped: drained, not kept */ }
        continue;
      }
      // the header says how large the file is: refused before a byte of it is read
      const declared = entry.header.size ?? 0;
      if (limits && declared > limits.maxFileBytes) throw overFile(name, declared, limits.maxFileBytes);
      let size = 0;
      if (sink) {
        let failure: OutputTooLarge | undefined;
        const counted = new Transform({
          transform(c: Buffer, _enc, cb) {
            size += c.length;
            failure = count(name, size, c.length, declared);
            cb(failure ?? null, failure ? undefined : c);
          },
        });
        (entry as unknown as Readable).on('error', (e) => counted.destroy(e));
        (entry as unknown as Readable).pipe(counted);
        try {
          await sink(name, counted);
        } catch (err) {
          throw failure ?? err;
        }
        if (failure) throw failure;
        continue;
      }
      const chunks: Buffer[] = [];
      for await (const c of entry) {
        size += (c as Uint8Array).length;
        const failure = count(name, size, (c as Uint8Array).length, declared);
        if (failure) throw failure;
        chunks.push(Buffer.from(c as Uint8Array));
      }
      out[name] = new Uint8Array(Buffer.concat(chunks));
    }
  } catch (err) {
    source.unpipe(extract as unknown as NodeJS.WritableStream);
    source.destroy();
    throw err;
  }
  return out;
}
