// The decision logic of alerts, pure: a condition judged on a query result, and the state machine
// (ok, triggered, error) with its grace period. No I/O; unit-tested on given rows.
import type { AlertState } from '../db/automation-types.js';

export const OPS = ['>', '>=', '<', '<=', '==', '!='] as const;
export type Op = (typeof OPS)[number];

/**
 * row_count: the number of rows compared to the threshold.
 * value: the one row's `column` (or its first column) compared to the threshold, as Superset does.
 */
export type Condition =
  | { type: 'row_count'; op: Op; threshold: number }
  | { type: 'value'; op: Op; threshold: number; column?: string };

export interface Rows { columns: Array<{ name: string }>; rows: unknown[][]; truncated?: boolean }

export class ConditionError extends Error {}

function compare(a: number, op: Op, b: number): boolean {
  switch (op) {
    case '>': return a > b;
    case '>=': return a >= b;
    case '<': return a < b;
    case '<=': return a <= b;
    case '==': return a === b;
    case '!=': return a !== b;
  }
}

/** Whether the condition holds on the result, and the value compared; ConditionError when it cannot be judged. */
export function judge(cond: Condition, result: Rows): { triggered: boolean; value: number } {
  if (cond.type === 'row_count') {
    if (result.truncated) throw new ConditionError(`the query returned more rows than engine.max_rows: the count is unknown (count in SQL instead: SELECT count(*) ...)`);
    const n = result.rows.length;
    return { triggered: compare(n, cond.op, cond.threshold), value: n };
  }
  if (result.rows.length !== 1) throw new ConditionError(`a value condition needs exactly one row; the query returned ${result.rows.length}${result.truncated ? ' or more' : ''}`);
  const idx = cond.column === undefined ? 0 : result.columns.findIndex((c) => c.name === cond.column);
  if (idx < 0 || idx >= result.columns.length) throw new ConditionError(`the query result has no column ${JSON.stringify(cond.column ?? '')}`);
  const raw = result.rows[0]![idx];
  // 64-bit integers and decimals arrive as strings.
  const v = typeof raw === 'number' ? raw : typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : NaN;
  if (!Number.isFinite(v)) throw new ConditionError(`the value of column ${JSON.stringify(result.columns[idx]!.name)} is not a number: ${JSON.stringify(raw)?.slice(0, 100)}`);
  return { triggered: compare(v, cond.op, cond.threshold), value: v };
}

export type Outcome = 'ok' | 'triggered' | 'error';
export type Notification = 'triggered' | 'recovered' | 'error' | null;

export interface AlertMemory { state: AlertState; lastNotifiedAt: Date | null }

/**
 * The next state and the notification to send. A `triggered` notification goes out when the alert
 * starts firing and again while it keeps firing, but never within `graceSecs` of the last one (so
 * a flapping alert does not notify at every flap either). Recovery (triggered -> ok) notifies once;
 * entering error notifies once; error -> ok is silent.
 */
export function transition(prev: AlertMemory, outcome: Outcome, now: Date, graceSecs: number): { state: AlertState; notify: Notification } {
  if (outcome === 'error') return { state: 'error', notify: prev.state === 'error' ? null : 'error' };
  if (outcome === 'ok') return { state: 'ok', notify: prev.state === 'triggered' ? 'recovered' : null };
  const inGrace = prev.lastNotifiedAt !== null && now.getTime() - prev.lastNotifiedAt.getTime() < graceSecs * 1000;
  return { state: 'triggered', notify: inGrace ? null : 'triggered' };
}
