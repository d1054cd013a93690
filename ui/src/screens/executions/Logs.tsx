// Live logs of an execution: NDJSON from `GET .../logs?follow=true`, read as a stream and appended
// as lines arrive, until the execution ends (the server closes the stream then). Filters by
// level, task run and text; the view follows the newest line unless the reader scrolled up.
// At most MAX_LINES lines are kept in the page.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from '../../api/client';
import { precise } from '../../lib/time';

/** A log line's time: the clock to the millisecond (the date is on hover). */
const clock = (iso: string) => { const d = new Date(iso); return Number.isNaN(d.getTime()) ? iso : `${d.toLocaleTimeString(undefined, { hour12: false })}.${String(d.getMilliseconds()).padStart(3, '0')}`; };

const MAX_LINES = 20_000;
const LEVELS = ['DEBUG', 'INFO', 'WARN', 'ERROR'] as const;
export interface LogLine { id: string; task_run_id: string | null; attempt: number; at: string; level: string; line: string }

export function Logs({ ws, id, running, taskNames }: { ws: string; id: string; running: boolean; taskNames: Map<string, string> }) {
  const [lines, setLines] = useState<LogLine[]>([]);
  const [streaming, setStreaming] = useState(false);
  const [level, setLevel] = useState<string>('DEBUG');
  const [task, setTask] = useState('');
  const [text, setText] = useState('');
  const [follow, setFollow] = useState(true);
  const box = useRef<HTMLDivElement>(null);
  const last = useRef('0');

  // One reader per (execution, running): when the execution ends the stream ends by itself; a
  // finished execution is read once without follow.
  useEffect(() => {
    const abort = new AbortController();
    let cancelled = false;
    (async () => {
      setStreaming(true);
      try {
        const res = await api.GET('/workflows/v1/{ws}/executions/{id}/logs', {
          params: { path: { ws, id }, query: { follow: running ? 'true' : 'false', after: last.current === '0' ? undefined : last.current, limit: 10_000 } },
          parseAs: 'stream', signal: abort.signal,
        });
        const body = res.response.body;
        if (!res.response.ok || !body) return;
        const reader = body.pipeThrough(new TextDecoderStream()).getReader();
        let rest = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done || cancelled) break;
          rest += value;
          const parts = rest.split('\n');
          rest = parts.pop() ?? '';
          const fresh: LogLine[] = [];
          for (const p of parts) {
            if (!p.trim()) continue;
            try { fresh.push(JSON.parse(p) as LogLine); } catch { /* a torn line cannot happen: split on newlines */ }
          }
          if (fresh.length) {
            last.current = fresh[fresh.length - 1].id;
            setLines((old) => { const all = old.concat(fresh); return all.length > MAX_LINES ? all.slice(all.length - MAX_LINES) : all; });
          }
        }
      } catch (err) {
        if (!cancelled) console.warn('log stream ended', err);
      } finally {
        if (!cancelled) setStreaming(false);
      }
    })();
    return () => { cancelled = true; abort.abort(); };
  }, [ws, id, running]);

  useEffect(() => {
    const el = box.current;
    if (el && follow) el.scrollTop = el.scrollHeight;
  }, [lines, follow]);

  const minLevel = LEVELS.indexOf(level as (typeof LEVELS)[number]);
  const needle = text.trim().toLowerCase();
  const shown = lines.filter((l) => LEVELS.indexOf(l.level as (typeof LEVELS)[number]) >= minLevel
    && (!task || l.task_run_id === task) && (!needle || l.line.toLowerCase().includes(needle)));

  return (
    <section aria-labelledby="h-logs">
      <h2 id="h-logs">Logs</h2>
      <div class="row filters">
        <div><label for="log-level">Level</label>
          <select id="log-level" value={level} onChange={(e) => setLevel(e.currentTarget.value)}>{LEVELS.map((l) => <option key={l} value={l}>{l} and above</option>)}</select>
        </div>
        <div><label for="log-task">Task run</label>
          <select id="log-task" value={task} onChange={(e) => setTask(e.currentTarget.value)}>
            <option value="">all</option>
            {[...taskNames].map(([tid, name]) => <option key={tid} value={tid}>{name}</option>)}
          </select>
        </div>
        <div class="grow"><label for="log-search">Search</label><input id="log-search" type="search" value={text} onInput={(e) => setText(e.currentTarget.value)} /></div>
        <label class="check"><input id="log-follow" type="checkbox" checked={follow} onChange={(e) => setFollow(e.currentTarget.checked)} /> Follow</label>
      </div>
      <p class="hint" id="log-count">{shown.length} of {lines.length} lines{streaming && running ? ' · following live' : ''}</p>
      <div ref={box} class="logs" id="logs" role="log" aria-label="Log lines" tabIndex={0}>
        {shown.length === 0 ? <p class="muted">{streaming ? 'Waiting for log lines…' : 'No log lines.'}</p> : shown.map((l) => (
          <div key={l.id} class={`log-line level-${l.level.toLowerCase()}`}>
            <time dateTime={l.at} title={precise(l.at)}>{clock(l.at)}</time> <span class="lvl">{l.level}</span> <span class="task">{l.task_run_id ? taskNames.get(l.task_run_id) ?? '' : ''}{l.attempt > 1 ? ` #${l.attempt}` : ''}</span> <span class="msg">{l.line}</span>
          </div>
        ))}
      </div>
    </section>
  );
}
