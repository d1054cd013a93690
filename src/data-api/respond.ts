// The body of a Data API answer: JSON (default), CSV or NDJSON, one page of rows, with an ETag
// of the bytes. The format comes from `?format=` or else the Accept header.
import { createHash } from 'node:crypto';
import type { QueryColumn } from '../queries/types.js';

export const FORMATS = ['json', 'csv', 'ndjson'] as const;
export type Format = (typeof FORMATS)[number];

export const CONTENT_TYPES: Record<Format, string> = {
  json: 'application/json; charset=utf-8',
  csv: 'text/csv; charset=utf-8',
  ndjson: 'application/x-ndjson; charset=utf-8',
};

/** `?format=` wins; else the first of the Accept header's types we serve; else JSON. */
export function formatOf(query: unknown, accept: string | undefined): Format | null {
  if (typeof query === 'string') return (FORMATS as readonly string[]).includes(query) ? query as Format : null;
  if (query !== undefined) return null;
  for (const part of (accept ?? '').slice(0, 1024).split(',')) {
    const t = part.split(';')[0].trim().toLowerCase();
    if (t === 'text/csv') return 'csv';
    if (t === 'application/x-ndjson' || t === 'application/ndjson') return 'ndjson';
    if (t === 'application/json') return 'json';
  }
  return 'json';
}

export interface Page {
  endpoint: string;
  version: number;
  columns: QueryColumn[];
  rows: unknown[][];
  limit: number;
  offset: number;
  /** Whether rows exist after this page. */
  more: boolean;
  /** The engine stopped reading at engine.max_rows: rows beyond it are not reachable by paging. */
  truncated: boolean;
}

function csvCell(v: unknown): string {
  if (v === null || v === undefined) return '';
  const s = typeof v === 'object' ? JSON.stringify(v) : String(v);
  return /[",\r\n]/.test(s) || /^[=+\-@\t\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

const objectOf = (columns: QueryColumn[], row: unknown[]) => {
  const o: Record<string, unknown> = {};
  columns.forEach((c, i) => { o[c.name] = row[i] ?? null; });
  return o;
};

export function render(page: Page, format: Format): string {
  if (format === 'csv') {
    return [page.columns.map((c) => csvCell(c.name)).join(','), ...page.rows.map((r) => r.map(csvCell).join(','))].join('\r\n') + '\r\n';
  }
  if (format === 'ndjson') return page.rows.map((r) => JSON.stringify(objectOf(page.columns, r)) + '\n').join('');
  return JSON.stringify({
    endpoint: page.endpoint, version: page.version, meta: page.columns, data: page.rows.map((r) => objectOf(page.columns, r)),
    rows: page.rows.length, limit: page.limit, offset: page.offset, next_offset: page.more ? page.offset + page.rows.length : null, truncated: page.truncated,
  });
}

/** A strong ETag of the body (RFC 9110 8.8.3). */
export function etagOf(body: string): string {
  return `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
}

/** Whether If-None-Match names `etag` (or `*`): the client's copy is current. */
export function notModified(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  return ifNoneMatch.slice(0, 4096).split(',').map((t) => t.trim().replace(/^W\//, '')).some((t) => t === etag || t === '*');
}
