// Following the main container's log through the Kubernetes API (no exec, no port-forward).
import { Writable } from 'node:stream';
import type { Log } from '@kubernetes/client-node';
import type { Logger } from 'pino';

/** Comparable key of an RFC 3339 timestamp (fraction padded to nanoseconds), or null. */
function tsKey(ts: string): string | null {
  const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?Z$/.exec(ts);
  if (!m) return null;
  return `${m[1]}.${(m[2] ?? '').padEnd(9, '0')}`;
}

/**
 * Follows the log of one container with timestamps. A connection that ends early is reopened
 * with sinceTime; lines already delivered (same or earlier timestamp) are skipped.
 */
export class LogFollower {
  private lastKey = '';
  private lastTs = '';
  private countAtLast = 0;
  private partial = '';
  private current?: { controller?: AbortController; cancel: () => void; done: Promise<void> };
  connections = 0;

  constructor(
    private readonly logApi: Log,
    private readonly namespace: string,
    private readonly pod: string,
    private readonly container: string,
    private readonly emit: (line: string) => void,
    private readonly log?: Logger,
  ) {}

  get active(): boolean { return this.current !== undefined; }

  private deliver(raw: string, replay: { skip: number }): void {
    const sp = raw.indexOf(' ');
    const key = sp > 0 ? tsKey(raw.slice(0, sp)) : null;
    if (key === null) { this.emit(raw); return; }
    const text = raw.slice(sp + 1);
    if (key < this.lastKey) return;
    if (key === this.lastKey) {
      if (replay.skip > 0) { replay.skip--; return; }
      this.countAtLast++;
    } else {
      this.lastKey = key;
      this.lastTs = raw.slice(0, sp);
      this.countAtLast = 1;
      replay.skip = 0;
    }
    this.emit(text);
  }

  /** Opens one connection (follow or not); resolves when it ends, fails or is cancelled. */
  open(follow: boolean): Promise<void> {
    if (this.current) return this.current.done;
    this.partial = '';
    this.connections++;
    const replay = { skip: this.lastKey ? this.countAtLast : 0 };
    const decoder = new TextDecoder('utf-8');
    let buf = '';
    let resolveDone!: () => void;
    const done = new Promise<void>((r) => { resolveDone = r; });
    const sink = new Writable({
      write: (chunk: Buffer, _enc, cb) => {
        buf += decoder.decode(chunk, { stream: true });
        let nl = buf.indexOf('\n');
        while (nl >= 0) {
          const line = buf.slice(0, nl).replace(/\r$/, '');
          buf = buf.slice(nl + 1);
          this.deliver(line, replay);
          nl = buf.indexOf('\n');
        }
        cb();
      },
      final: (cb) => {
        buf += decoder.decode();
        // a last line without newline: delivered only once the container is known to have ended
        this.partial = buf;
        cb();
      },
    });
    const cur: NonNullable<LogFollower['current']> = { cancel: () => resolveDone(), done };
    this.current = cur;
    sink.on('finish', () => resolveDone());
    sink.on('error', () => resolveDone());
    const opts: Record<string, unknown> = { follow, timestamps: true };
    if (this.lastTs) opts.sinceTime = this.lastTs.replace(/\.\d+Z$/, 'Z');
    this.logApi
      .log(this.namespace, this.pod, this.container, sink, opts)
      .then((controller) => { cur.controller = controller; })
      .catch((err: unknown) => {
        const code = (err as { code?: number }).code;
        // 400: the container is not running yet; the caller retries on its next poll
        if (code !== 400) this.log?.debug({ pod: this.pod, err: String((err as Error).message ?? err) }, 'log request failed');
        resolveDone();
      });
    void done.then(() => {
      if (this.current === cur) this.current = undefined;
    });
    return done;
  }

  /** Closes the open connection, if any. */
  cancel(): void {
    const cur = this.current;
    if (!cur) return;
    cur.controller?.abort();
    cur.cancel();
    this.current = undefined;
  }

  /** Delivers a last line that had no trailing newline. */
  flush(): void {
    if (this.partial) {
      const p = this.partial;
      this.partial = '';
      this.deliver(p, { skip: 0 });
    }
  }
}
