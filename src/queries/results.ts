// Query results in the object store: Parquet under engine.results_prefix/<workspace id>/, each
// read, write and delete through the storage rule for that workspace (src/storage). Written through a
// scratch DuckDB (never the sandboxed workspace databases, and never running user SQL) into a
// temporary file that is then uploaded. CSV and JSON downloads are converted from the Parquet on
// the fly, file to file, so no result is held whole in memory twice.
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import type { Logger } from 'pino';
import type { Storage } from '../storage/tenant-store.js';
import type { QueryColumn } from './types.js';
import { loadDuckDB } from './embedded.js';

export type ResultFormat = 'parquet' | 'csv' | 'json';
export const CONTENT_TYPE: Record<ResultFormat, string> = {
  parquet: 'application/vnd.apache.parquet',
  csv: 'text/csv; charset=utf-8',
  json: 'application/json; charset=utf-8',
};

export interface Download { body: Readable; contentType: string; size: number }

const quote = (p: string) => `'${p.replace(/'/g, "''")}'`;
const ident = (s: string) => `"${s.replace(/"/g, '""')}"`;

export class ResultStore {
  private scratch: Promise<DuckDBInstance> | undefined;

  constructor(private readonly storage: Storage, private readonly log: Logger) {}

  private store(workspaceId: string) { return this.storage.of({ tenant: { id: workspaceId } }); }

  /** Object key of a query's result. */
  key(workspaceId: string, queryId: string): string {
    return `${this.storage.root('results', { id: workspaceId })}${queryId}.parquet`;
  }

  /** Writes the rows as Parquet under key; returns its size in bytes. */
  async write(workspaceId: string, key: string, columns: QueryColumn[], rows: unknown[][]): Promise<number> {
    return this.withTemp(async (dir) => {
      const file = await this.toParquet(dir, columns, rows);
      const { size } = await stat(file);
      await this.store(workspaceId).putStream(key, createReadStream(file), CONTENT_TYPE.parquet);
      return size;
    });
  }

  /**
   * The result in a format: from the stored Parquet when there is one (key), else from rows kept
   * with the query (results that fit in the preview). The temporary files go when the body ends.
   */
  async download(workspaceId: string, source: { key: string } | { columns: QueryColumn[]; rows: unknown[][] }, format: ResultFormat): Promise<Download | null> {
    const dir = await mkdtemp(path.join(tmpdir(), 'svc-result-'));
    const cleanup = () => rm(dir, { recursive: true, force: true }).catch((err: Error) => this.log.warn({ err: err.message }, 'removing a result download\'s temporary files failed'));
    try {
      let parquet: string;
      if ('key' in source) {
        const obj = await this.store(workspaceId).getStream(source.key);
        if (!obj) { await cleanup(); return null; }
        parquet = path.join(dir, 'result.parquet');
        await pipeline(obj.body, createWriteStream(parquet));
      } else {
        parquet = await this.toParquet(dir, source.columns, source.rows);
      }
      let file = parquet;
      if (format === 'csv') {
        file = path.join(dir, 'result.csv');
        await this.withScratch((c) => c.run(`COPY (SELECT * FROM read_parquet(${quote(parquet)})) TO ${quote(file)} (FORMAT csv, HEADER true)`));
      } else if (format === 'json') {
        file = path.join(dir, 'result.json');
        await this.toJson(parquet, file);
      }
      const { size } = await stat(file);
      const body = createReadStream(file);
      body.once('close', () => { void cleanup(); });
      return { body, contentType: CONTENT_TYPE[format], size };
    } catch (err) {
      await cleanup();
      throw err;
    }
  }

  async delete(workspaceId: string, key: string): Promise<void> { await this.store(workspaceId).delete(key); }

  /**
   * The rows as a JSON array of objects, valued as the API answers them (the engine's JSON
   * converter): 64-bit integers, decimals, dates and timestamps as strings, so no reader loses a
   * digit (DuckDB's own JSON writer writes BIGINT 9007199254740993 as a number, which JavaScript
   * and jq read as ...992). Written chunk by chunk.
   */
  private async toJson(parquet: string, out: string): Promise<void> {
    const { JsonDuckDBValueConverter } = await loadDuckDB();
    const file = createWriteStream(out);
    const write = (text: string) => new Promise<void>((resolve, reject) => { file.write(text, (err) => (err ? reject(err) : resolve())); });
    try {
      await this.withScratch(async (c) => {
        const result = await c.stream(`SELECT * FROM read_parquet(${quote(parquet)})`);
        const names = result.columnNames();
        let first = true;
        await write('[');
        for (;;) {
          const chunk = await result.fetchChunk();
          if (!chunk || chunk.rowCount === 0) break;
          const lines: string[] = [];
          for (const row of chunk.convertRows(JsonDuckDBValueConverter)) {
            const o: Record<string, unknown> = {};
            names.forEach((n, i) => { o[n] = row[i] ?? null; });
            lines.push(`${first ? '' : ','}${JSON.stringify(o)}`);
            first = false;
          }
          await write(lines.join('\n'));
        }
        await write(']\n');
      });
    } finally {
      await new Promise<void>((resolve) => file.end(resolve));
    }
  }

  /** Rows to a Parquet file in dir, typed as the engine typed them (JSON when a type does not read back). */
  private async toParquet(dir: string, columns: QueryColumn[], rows: unknown[][]): Promise<string> {
    const ndjson = path.join(dir, 'rows.ndjson');
    const out = path.join(dir, 'result.parquet');
    const keys = columns.map((_, i) => `c${i}`);
    // Positional keys: result columns may share a name (SELECT 1 AS a, 2 AS a).
    await writeFile(ndjson, rows.map((r) => JSON.stringify(Object.fromEntries(keys.map((k, i) => [k, r[i] ?? null])))).join('\n'));
    const copy = (types: string[]) => {
      const spec = `{${keys.map((k, i) => `${k}: ${quote(types[i]!)}`).join(', ')}}`;
      const select = columns.length === 0 ? 'SELECT 1 WHERE false'
        : `SELECT ${keys.map((k, i) => `${k} AS ${ident(columns[i]!.name)}`).join(', ')} FROM read_json(${quote(ndjson)}, format = 'newline_delimited', columns = ${spec})`;
      return this.withScratch((c) => c.run(`COPY (${select}) TO ${quote(out)} (FORMAT parquet)`));
    };
    try {
      await copy(columns.map((c) => c.type));
    } catch (err) {
      this.log.info({ err: (err as Error).message }, 'result types did not read back from JSON: writing the columns as JSON');
      await copy(columns.map(() => 'JSON'));
    }
    return out;
  }

  private async withScratch<T>(fn: (c: DuckDBConnection) => Promise<T>): Promise<T> {
    this.scratch ??= loadDuckDB().then(({ DuckDBInstance }) => DuckDBInstance.create(':memory:', {
      threads: '1', memory_limit: '256MB', autoinstall_known_extensions: 'false', autoload_known_extensions: 'false',
    }));
    const conn = await (await this.scratch).connect();
    try { return await fn(conn); } finally { conn.closeSync(); }
  }

  private async withTemp<T>(fn: (dir: string) => Promise<T>): Promise<T> {
    const dir = await mkdtemp(path.join(tmpdir(), 'svc-result-'));
    try { return await fn(dir); } finally {
      await rm(dir, { recursive: true, force: true }).catch((err: Error) => this.log.warn({ err: err.message }, 'removing a result\'s temporary files failed'));
    }
  }

  async close(): Promise<void> {
    const s = this.scratch;
    this.scratch = undefined;
    if (s) (await s).closeSync();
  }
}
