// An in-test Trino protocol server (not Trino: Trino cannot run here). It speaks the client
// protocol the way a coordinator does: POST /v1/statement answers QUEUED with a nextUri and no
// data; each GET on a nextUri answers the next page (columns, up to `pageSize` rows) and the next
// nextUri; DELETE on a nextUri cancels; errors travel in the `error` field. It records every
// request with its headers so tests check what the driver sent. With `tls` it serves HTTPS
// (a self-signed certificate: what SVC_ENGINE_TLS_INSECURE is for).
//   SQL `SELECT n FROM rows(<N>)`  N rows of one bigint column, in pages
//   SQL `SLOW`                      runs until cancelled (each GET answers an empty page)
//   SQL `FAIL`                      ends with a SYNTAX_ERROR
//   SQL `EXECUTE ...`               echoes the X-Trino-Prepared-Statement header and the USING list as one row
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest { method: string; path: string; headers: http.IncomingHttpHeaders; body: string }
interface Query { id: string; sql: string; token: number; sent: number; total: number; cancelled: boolean; user: string; prepared?: string }

export interface TrinoProtocolServer {
  url: string;
  requests: RecordedRequest[];
  /** Ids of queries that received a DELETE. */
  cancelled(): string[];
  stop(): Promise<void>;
}

export async function startTrinoProtocolServer(opts: { pageSize?: number; tls?: { key: string; cert: string } } = {}): Promise<TrinoProtocolServer> {
  const pageSize = opts.pageSize ?? 10;
  const requests: RecordedRequest[] = [];
  const queries = new Map<string, Query>();
  let seq = 0;
  let base = '';
  const next = (q: Query) => `${base}/v1/statement/executing/${q.id}/y${q.token}/${q.token}`;
  const stats = (state: string) => ({ state, queued: state === 'QUEUED', scheduled: true, nodes: 1, totalSplits: 0, queuedSplits: 0, runningSplits: 0, completedSplits: 0, cpuTimeMillis: 0, wallTimeMillis: 0, queuedTimeMillis: 0, elapsedTimeMillis: 0, processedRows: 0, processedBytes: 0, physicalInputBytes: 0, peakMemoryBytes: 0, spilledBytes: 0 });

  const handler: http.RequestListener = (req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => { body += c.toString(); });
    req.on('end', () => {
      const path = req.url ?? '/';
      requests.push({ method: req.method ?? '', path, headers: req.headers, body });
      const send = (status: number, json: unknown) => { res.writeHead(status, { 'content-type': 'application/json' }); res.end(JSON.stringify(json)); };
      if (req.method === 'POST' && path === '/v1/statement') {
        const user = req.headers['x-trino-user'];
        if (typeof user !== 'string' || user === '') return send(401, { message: 'X-Trino-User required' });
        const id = `20260601_000000_${String(++seq).padStart(5, '0')}_svc`;
        const rowsMatch = /rows\((\d+)\)/.exec(body);
        const q: Query = { id, sql: body, token: 0, sent: 0, total: rowsMatch ? Number(rowsMatch[1]) : 1, cancelled: false, user, prepared: req.headers['x-trino-prepared-statement'] as string | undefined };
        queries.set(id, q);
        return send(200, { id, infoUri: `${base}/ui/query.html?${id}`, nextUri: next(q), stats: stats('QUEUED'), warnings: [] });
      }
      const m = /^\/v1\/statement\/executing\/([^/]+)\/y(\d+)\/(\d+)$/.exec(path);
      const q = m ? queries.get(m[1]!) : undefined;
      if (!q || Number(m![3]) !== q.token) return send(404, { message: 'no such query or stale token' });
      if (req.method === 'DELETE') { q.cancelled = true; res.writeHead(204); return res.end(); }
      if (q.cancelled) return send(200, { id: q.id, stats: stats('FAILED'), error: { message: 'Query was canceled', errorCode: 3, errorName: 'USER_CANCELED', errorType: 'USER_ERROR' } });
      q.token++;
      if (q.sql === 'FAIL') {
        return send(200, { id: q.id, stats: stats('FAILED'), error: { message: "line 1:1: mismatched input 'FAIL'", errorCode: 1, errorName: 'SYNTAX_ERROR', errorType: 'USER_ERROR', failureInfo: { type: 'x', message: 'x', suppressed: [], stack: ['at io.trino.internal.Secret'] } } });
      }
      if (q.sql === 'SLOW') return setTimeout(() => send(200, { id: q.id, nextUri: next(q), stats: stats('RUNNING'), data: [] }), 20);
      if (q.sql.startsWith('EXECUTE')) {
        return send(200, { id: q.id, columns: [{ name: 'prepared', type: 'varchar' }, { name: 'execute', type: 'varchar' }], data: [[q.prepared ?? null, q.sql]], stats: stats('FINISHED') });
      }
      const columns = [{ name: 'n', type: 'bigint', typeSignature: { rawType: 'bigint', arguments: [] } }];
      const data: number[][] = [];
      while (data.length < pageSize && q.sent < q.total) data.push([q.sent++]);
      const done = q.sent >= q.total;
      return send(200, { id: q.id, columns, data, stats: stats(done ? 'FINISHED' : 'RUNNING'), ...(done ? {} : { nextUri: next(q) }) });
    });
  };
  const server = opts.tls ? https.createServer(opts.tls, handler) : http.createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `${opts.tls ? 'https' : 'http'}://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: base,
    requests,
    cancelled: () => [...queries.values()].filter((q) => q.cancelled).map((q) => q.id),
    stop: () => new Promise((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}
