// Times as the console shows them: to the second, in the person's locale and time zone, with the
// time zone named where a schedule's own zone matters, and to the millisecond on hover (title).
export function precise(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return `${d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' })}.${String(d.getMilliseconds()).padStart(3, '0')} (${Intl.DateTimeFormat().resolvedOptions().timeZone})`;
}

/** A <time> to the second; its title holds the millisecond and the time zone. */
export function Time({ iso, zone }: { iso: string | null | undefined; zone?: string }) {
  if (!iso) return <span class="muted">—</span>;
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return <>{iso}</>;
  const opts: Intl.DateTimeFormatOptions = { dateStyle: 'medium', timeStyle: 'medium', ...(zone ? { timeZone: zone } : {}) };
  let text: string;
  try { text = d.toLocaleString(undefined, opts); } catch { text = d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' }); }
  return <time dateTime={iso} title={precise(iso)}>{text}{zone ? <small class="muted"> {zone}</small> : null}</time>;
}

/** A span of milliseconds in words: 850 ms, 12.4 s, 3 min 5 s, 2 h 4 min. */
export function span(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '—';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${Math.round(s % 60)} s`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}
