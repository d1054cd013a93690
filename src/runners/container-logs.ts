// A container's logs from a Docker-API engine, split into lines per stream, every line once.
//
// The follow answer can fail while the container ends: podman answers 200, then finds the process
// gone while it inspects the container (`read /proc/N/cgroup: no such process`) and writes its
// error JSON into the body instead of the logs. Read as frames, that was a stdout "line" of error
// JSON and the task's own lines were lost. Here the answer is read strictly as the engine's frames
// (8-byte header: 1 stdout or 2 stderr, three zero bytes, the payload's length); anything else, a
// cut connection, or an answer still open after the container ended means the follow failed, and
// once the container has ended a read without follow gives the rest (the lines already delivered,
// counted per stream, are skipped).
import type { Readable } from 'node:stream';
import type Docker from 'dockerode';
import type { Logger } from 'pino';
import { LineSplitter, type LogStream } from './types.js';

type Outcome = 'ended' | 'failed';

/** How long the follow answer may stay open after the container ended before it is read again. */
const FOLLOW_END_MS = 5_000;

/** The engine's frames of one answer; `broken` once a header is not one. */
export class LogFrames {
  private buf: Buffer = Buffer.alloc(0);
  broken = false;
  constructor(private readonly onPayload: (stream: LogStream, payload: Buffer) => void) {}

  push(chunk: Buffer): void {
    if (this.broken) return;
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    while (this.buf.length >= 8) {
      const type = this.buf[0];
      if ((type !== 1 && type !== 2) || this.buf[1] !== 0 || this.buf[2] !== 0 || this.buf[3] !== 0) { this.broken = true; return; }
      const end = 8 + this.buf.readUInt32BE(4);
      if (this.buf.length < end) return;
      this.onPayload(type === 1 ? 'stdout' : 'stderr', this.buf.subarray(8, end));
      this.buf = this.buf.subarray(end);
    }
  }

  /** The answer ended on a frame's end. */
  get whole(): boolean { return !this.broken && this.buf.length === 0; }
}

const bounded = <T>(p: Promise<T>, ms: number, otherwise: T): Promise<T> =>
  Promise.race([p, new Promise<T>((resolve) => setTimeout(() => resolve(otherwise), ms).unref())]);

/**
 * The logs read once without follow, as a stream: dockerode reads that answer whole into memory
 * (its `logs` streams only with follow), and a container may have printed gigabytes. The request
 * is dockerode's own (`Container.logs`), with its answer streamed.
 */
function logsOnce(container: Docker.Container): Promise<Readable> {
  return new Promise((resolve, reject) => {
    (container.modem as { dial: (o: unknown, cb: (err: Error | null, data: Readable) => void) => void }).dial({
      path: `/containers/${container.id}/logs?`, method: 'GET', isStream: true,
      statusCodes: { 200: true, 404: 'no such container', 500: 'server error' },
      options: { follow: false, stdout: true, stderr: true },
    }, (err, data) => (err ? reject(err) : resolve(data)));
  });
}

export interface LogFollower {
  /** After the container ended: the follow answer's end, or the rest of the logs read again. */
  finish(): Promise<void>;
  /** Stops reading (an error path); no line is delivered after it. */
  close(): void;
}

export function followContainerLogs(container: Docker.Container, onLog: (line: string, stream: LogStream) => void, log?: Logger): LogFollower {
  const delivered: Record<LogStream, number> = { stdout: 0, stderr: 0 };
  let current: Readable | undefined;
  let reading = 0;
  let closed = false;

  const stop = () => { reading++; current?.destroy(); current = undefined; };

  /** One answer read to its end; its first `delivered` lines of each stream were delivered before. */
  async function read(follow: boolean): Promise<Outcome> {
    const mine = ++reading;
    let stream: Readable;
    try {
      stream = follow ? await container.logs({ follow: true, stdout: true, stderr: true }) as Readable : await logsOnce(container);
    } catch (err) {
      log?.warn({ err: (err as Error).message, follow }, 'the container engine did not answer the logs');
      return 'failed';
    }
    if (mine !== reading || closed) { stream.destroy(); return 'failed'; }
    current = stream;
    const skip = { ...delivered };
    const seen: Record<LogStream, number> = { stdout: 0, stderr: 0 };
    const deliver = (s: LogStream) => (line: string) => {
      if (mine !== reading || ++seen[s] <= skip[s]) return;
      delivered[s]++;
      onLog(line, s);
    };
    const lines = { stdout: new LineSplitter(deliver('stdout')), stderr: new LineSplitter(deliver('stderr')) };
    const frames = new LogFrames((s, payload) => lines[s].push(payload));
    const outcome = await new Promise<Outcome>((resolve) => {
      stream.on('data', (c: Buffer) => {
        frames.push(c);
        if (frames.broken) {
          log?.warn({ start: c.toString('utf8').slice(0, 200) }, 'the container engine answered the logs with something else than its frames');
          resolve('failed');
        }
      });
      stream.on('end', () => resolve(frames.whole ? 'ended' : 'failed'));
      stream.on('close', () => resolve('failed'));
      stream.on('error', (err) => { log?.warn({ err: err.message }, 'the container log stream failed'); resolve('failed'); });
    });
    // A line cut short by a failure is read whole again; after a whole answer it is the last one.
    if (outcome === 'ended') { lines.stdout.end(); lines.stderr.end(); }
    if (mine === reading) stop();
    return outcome;
  }

  const following = read(true);
  return {
    async finish() {
      const outcome = await bounded(following, FOLLOW_END_MS, 'failed' as Outcome);
      stop();
      if (outcome === 'ended' || closed) return;
      if (await bounded(read(false), FOLLOW_END_MS, 'failed' as Outcome) !== 'ended') {
        stop();
        log?.warn('the container logs could not be read to their end');
      }
    },
    close() { closed = true; stop(); },
  };
}
