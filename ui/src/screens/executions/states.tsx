// Execution and task-run states as tags a colour-blind reader can tell apart (the word, always).
export const TERMINAL = new Set(['SUCCESS', 'FAILED', 'KILLED']);
export const STATES = ['CREATED', 'RUNNING', 'SUCCESS', 'FAILED', 'KILLING', 'KILLED'] as const;

export function StateTag({ state }: { state: string }) {
  return <span class={`state state-${state.toLowerCase()}`}>{state}</span>;
}

export function duration(start: string | null, end: string | null, now = Date.now()): string {
  if (!start) return '—';
  const ms = (end ? Date.parse(end) : now) - Date.parse(start);
  if (!Number.isFinite(ms) || ms < 0) return '—';
  if (ms < 1000) return `${ms} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  return `${m} min ${Math.round(s % 60)} s`;
}
