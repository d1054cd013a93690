// Task log lines of one task-run attempt, capped by workflow.log_run_max_lines and
// log_run_max_bytes: past a cap the task goes on, further lines are withheld, and one warning line
// at the end states how many. Lines are written in batches; the last batch goes with the outcome.
import type { Db } from '../db/index.js';
import type { Clock } from '../clock.js';
import { storableText } from './storable.js';

export type Level = 'DEBUG' | 'INFO' | 'WARN' | 'ERROR';
const MAX_LINE = 16_384;
/** Where a batch that could not be written is reported (the server log). */
export interface LogSink { warn(obj: Record<string, unknown>, msg: string): void }

export class TaskLog {
  lines = 0;
  bytes = 0;
  withheld = 0;
  private buffer: Array<{ at: Date; level: Level; line: string }> = [];
  private flushing: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  /** Secret values the task's templates read: replaced by ****** in every line. */
  readonly masked = new Set<string>();

  constructor(
    private readonly db: Db, private readonly clock: Clock,
    private readonly ids: { executionId: string; taskRunId: string; attempt: number },
    private readonly caps: { maxLines: number; maxBytes: number },
    private readonly sink: LogSink,
  ) {}

  write(level: Level, text: string): void {
    text = storableText(text);
    for (const secret of this.masked) if (text.includes(secret)) text = text.split(secret).join('******');
    for (const raw of text.split('\n')) {
      const line = raw.length > MAX_LINE ? `${raw.slice(0, MAX_LINE)}… [line cut at ${MAX_LINE} characters]` : raw;
      const size = Buffer.byteLength(line);
      if (this.lines + 1 > this.caps.maxLines || this.bytes + size > this.caps.maxBytes) { this.withheld++; continue; }
      this.lines++;
      this.bytes += size;
      this.buffer.push({ at: this.clock.now(), level, line });
    }
    if (this.buffer.length >= 200) this.flush();
    else if (!this.timer) this.timer = setTimeout(() => this.flush(), 200);
  }

  /** System lines (retries, hand-backs, the withheld count) are never capped. */
  system(level: Level, line: string): void {
    this.buffer.push({ at: this.clock.now(), level, line: storableText(line) });
    this.flush();
  }

  flush(): Promise<void> {
    if (this.timer) { clearTimeout(this.timer); this.timer = undefined; }
    const batch = this.buffer.splice(0);
    if (batch.length === 0) return this.flushing;
    this.flushing = this.flushing.then(() => this.db.insertInto('task_logs').values(batch.map((b) => ({
      execution_id: this.ids.executionId, task_run_id: this.ids.taskRunId, attempt: this.ids.attempt, at: b.at, level: b.level, line: b.line,
    }))).execute().then(() => undefined, (err: Error) => this.lost(batch.length, err)));
    return this.flushing;
  }

  /**
   * A batch the database refused is dropped (the task goes on; retrying could hold lines without
   * bound) and said in the server log: how many lines and why, never the lines themselves.
   */
  private lost(count: number, err: Error): void {
    this.sink.warn({ execution: this.ids.executionId, taskRun: this.ids.taskRunId, attempt: this.ids.attempt, lines: count, err: String(err?.message ?? err).slice(0, 500) },
      'task log lines lost: the database refused a batch');
  }

  /**
   * Ends the attempt's log: adds the withheld-count line, waits for batches already sent, and
   * returns the lines not yet written, which the caller writes with the attempt's outcome.
   */
  async finish(): Promise<Array<{ at: Date; level: Level; line: string }>> {
    if (this.timer) { clearTimeout(this.timer); this.timer = undefined; }
    if (this.withheld > 0) {
      this.buffer.push({ at: this.clock.now(), level: 'WARN', line: `${this.withheld} log lines withheld: this attempt reached workflow.log_run_max_lines (${this.caps.maxLines}) or log_run_max_bytes (${this.caps.maxBytes})` });
    }
    await this.flushing;
    return this.buffer.splice(0);
  }
}
