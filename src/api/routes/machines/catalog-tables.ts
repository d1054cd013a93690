// Iceberg REST table routes under /catalog/v1/{prefix}: list, create (and stage-create), load
// (ETag / If-None-Match, snapshots=refs), HEAD, commit, drop, rename, register, metrics and the
// multi-table transaction. Table answers are written as JSON text (json.ts): 64-bit snapshot ids
// go out digit for digit.
import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { FastifyReply } from 'fastify';
import type { AppContext } from '../../context.js';
import type { Services } from '../../../services.js';
import { catalogErrors, checkTargetPolicies, nameParam, namespaceParam, prefixParam, scope } from './catalog-common.js';
import { checkName, checkNamespace, parseNamespace } from '../../../catalog/names.js';
import { createTable, dropTable, getTable, listTables, registerTable, renameTable } from '../../../catalog/tables.js';
import { commit, parseChange } from '../../../catalog/commit.js';
import { onlyRefSnapshots, type Json, type TableMetadata } from '../../../catalog/metadata.js';
import { parseJson, stringifyJson } from '../../../catalog/json.js';
import { badRequest } from '../../../catalog/errors.js';
import { checkSignRequest, signRequest } from '../../../catalog/signer.js';
import { locationKey } from '../../../catalog/warehouse.js';
import { authorize } from '../../../storage/ownership.js';
import { requireRight } from '../../../catalog/access.js';
import type { TableRow } from '../../../catalog/tables.js';
import { locationOf } from '../../../catalog/purge.js';

const tableLocation = (row: TableRow) => locationOf(row.metadata_location, row.metadata);

const tags = ['catalog'];
const loose = (description: string) => z.looseObject({}).meta({ description });
const pNs = z.object({ prefix: prefixParam, namespace: namespaceParam });
const pTable = z.object({ prefix: prefixParam, namespace: namespaceParam, table: nameParam });
const listQuery = z.object({ pageToken: z.string().max(8192).optional(), pageSize: z.coerce.number().int().optional() });
const identifiers = z.object({ identifiers: z.array(z.object({ namespace: z.array(z.string()), name: z.string() })), 'next-page-token': z.string().optional() });
const loadResult = loose('LoadTableResult: metadata-location, metadata, config');
const identifier = z.object({ namespace: z.array(z.string()), name: z.string() });

/** The storage settings a client needs to read and write the files (no keys: see signing). */
export function storageConfig(s: Services, table?: { prefix: string; namespace: string; name: string }): Record<string, string> {
  const st = s.config.storage;
  const signing: Record<string, string> = {};
  if (table) {
    const uri = `${s.config.catalog.public_url.replace(/\/+$/, '')}/catalog`;
    const endpoint = `v1/${table.prefix}/namespaces/${encodeURIComponent(table.namespace)}/tables/${encodeURIComponent(table.name)}/sign`;
    Object.assign(signing, { 's3.remote-signing-enabled': 'true', 'signer.uri': uri, 'signer.endpoint': endpoint, 's3.signer.uri': uri, 's3.signer.endpoint': endpoint });
  }
  return {
    ...(st.endpoint ? { 's3.endpoint': st.endpoint } : {}),
    's3.path-style-access': String(st.path_style),
    'client.region': st.region,
    's3.region': st.region,
    ...signing,
  };
}

export function sendJson(reply: FastifyReply, status: number, text: string) {
  return reply.status(status).type('application/json; charset=utf-8').send(text);
}

export function loadResultText(location: string | null, metadataText: string, config: Record<string, string>): string {
  return `{${location ? `"metadata-location":${JSON.stringify(location)},` : ''}"metadata":${metadataText},"config":${JSON.stringify(config)}}`;
}

export function catalogTableRoutes(ctx: AppContext): FastifyPluginAsyncZod {
  return async (app) => {
    const base = '/catalog/v1/:prefix/namespaces/:namespace/tables';

    app.get(base, {
      config: { csrf: false },
      schema: { operationId: 'listTables', tags, summary: 'List the tables of a namespace, by pages (Iceberg REST listTables)', params: pNs, querystring: listQuery, response: { 200: identifiers, ...catalogErrors } },
    }, async (req) => {
      const { s, wh } = await scope(ctx, req, req.params.prefix, 'read', 'listing tables');
      return listTables(s.db, wh, parseNamespace(req.params.namespace), 'table', req.query.pageToken, req.query.pageSize);
    });

    app.post(base, {
      config: { csrf: false },
      schema: { operationId: 'createTable', tags, summary: 'Create a table, or stage it (`stage-create`: nothing is stored until a commit with assert-create)', params: pNs, body: loose('CreateTableRequest'), response: { 200: loadResult, ...catalogErrors } },
    }, async (req, reply) => {
      const { s, wh, caller } = await scope(ctx, req, req.params.prefix, 'write', 'creating a table', { namespace: req.params.namespace, name: (req.body as Json).name, op: 'create' });
      const t = await createTable(s, wh, caller, parseNamespace(req.params.namespace), req.body as Json);
      const name = String((req.body as Json).name);
      return sendJson(reply, 200, loadResultText(t.location, t.text, storageConfig(s, { prefix: wh.slug, namespace: req.params.namespace, name })));
    });

    app.get(`${base}/:table`, {
      config: { csrf: false }, exposeHeadRoute: false,
      schema: { operationId: 'loadTable',
        tags, summary: 'Load a table (Iceberg REST loadTable); `snapshots=refs` keeps only referenced snapshots; an ETag answers If-None-Match with 304', params: pTable,
        querystring: z.object({ snapshots: z.enum(['all', 'refs']).optional() }),
        response: { 200: loadResult, 304: z.null().meta({ description: 'not modified' }), ...catalogErrors },
      },
    }, async (req, reply) => {
      const { s, wh } = await scope(ctx, req, req.params.prefix, 'read', 'loading a table', { namespace: req.params.namespace, name: req.params.table, op: 'read' });
      const row = await getTable(s.db, wh, parseNamespace(req.params.namespace), checkName(req.params.table), 'table');
      const mode = req.query.snapshots ?? 'all';
      const etag = `"${createHash('sha256').update(`${row.metadata_location}\n${mode}`).digest('base64url')}"`;
      reply.header('etag', etag);
      const inm = req.headers['if-none-match'];
      if (inm && inm.split(',').some((t) => t.trim() === etag || t.trim() === '*')) return reply.status(304).send(null);
      const text = mode === 'refs' ? stringifyJson(onlyRefSnapshots(parseJson(row.metadata) as TableMetadata)) : row.metadata;
      return sendJson(reply, 200, loadResultText(row.metadata_location, text, storageConfig(s, { prefix: wh.slug, namespace: req.params.namespace, name: row.name })));
    });

    app.head(`${base}/:table`, {
      config: { csrf: false, swagger: { exposeHeadRoute: true } },
      schema: { operationId: 'tableExists', tags, summary: 'Whether a table exists: 204 or 404 (Iceberg REST tableExists)', params: pTable, response: { 204: z.null(), ...catalogErrors } },
    }, async (req, reply) => {
      const { s, wh } = await scope(ctx, req, req.params.prefix, 'read', 'checking a table', { namespace: req.params.namespace, name: req.params.table, op: 'read' });
      await getTable(s.db, wh, parseNamespace(req.params.namespace), checkName(req.params.table), 'table');
      return reply.status(204).send(null);
    });

    app.post(`${base}/:table`, {
      config: { csrf: false },
      schema: { operationId: 'updateTable', tags, summary: 'Commit requirements and updates to a table: compare-and-swap, 409 CommitFailedException when a requirement no longer holds', params: pTable, body: loose('CommitTableRequest'), response: { 200: loose('CommitTableResponse'), ...catalogErrors } },
    }, async (req, reply) => {
      const { s, wh, caller } = await scope(ctx, req, req.params.prefix, 'write', 'committing to a table', { namespace: req.params.namespace, name: req.params.table, op: 'commit' });
      const change = parseChange(req.body as Json, { namespace: parseNamespace(req.params.namespace), name: checkName(req.params.table) });
      const [done] = await commit(s, wh, caller, [change]);
      return sendJson(reply, 200, `{"metadata-location":${JSON.stringify(done.location)},"metadata":${done.text}}`);
    });

    app.delete(`${base}/:table`, {
      config: { csrf: false },
      schema: { operationId: 'dropTable', tags, summary: 'Drop a table; `purgeRequested=true` also removes its files', params: pTable, querystring: z.object({ purgeRequested: z.enum(['true', 'false']).optional() }), response: { 204: z.null(), ...catalogErrors } },
    }, async (req, reply) => {
      const { s, wh, caller } = await scope(ctx, req, req.params.prefix, 'manage', 'dropping a table', { namespace: req.params.namespace, name: req.params.table, op: 'drop' });
      await dropTable(s, wh, caller, parseNamespace(req.params.namespace), checkName(req.params.table), 'table', req.query.purgeRequested === 'true');
      return reply.status(204).send(null);
    });

    app.post(`${base}/:table/metrics`, {
      config: { csrf: false },
      schema: { operationId: 'reportMetrics', tags, summary: 'Accept a scan or commit report (Iceberg REST reportMetrics); nothing is kept', params: pTable, body: loose('ReportMetricsRequest'), response: { 204: z.null(), ...catalogErrors } },
    }, async (req, reply) => {
      const { s, wh } = await scope(ctx, req, req.params.prefix, 'read', 'reporting metrics');
      await getTable(s.db, wh, parseNamespace(req.params.namespace), checkName(req.params.table), 'table');
      return reply.status(204).send(null);
    });

    app.get(`${base}/:table/credentials`, {
      config: { csrf: false },
      schema: { operationId: 'loadCredentials', tags, summary: 'Storage access for a table: no keys are vended; the config names the remote signer (Iceberg REST loadCredentials)', params: pTable, response: { 200: z.object({ 'storage-credentials': z.array(z.object({ prefix: z.string(), config: z.record(z.string(), z.string()) })) }), ...catalogErrors } },
    }, async (req) => {
      const { s, wh } = await scope(ctx, req, req.params.prefix, 'read', 'loading table credentials', { namespace: req.params.namespace, name: req.params.table, op: 'read' });
      const row = await getTable(s.db, wh, parseNamespace(req.params.namespace), checkName(req.params.table), 'table');
      const location = tableLocation(row);
      authorize(s.storage.layout, { tenant: wh }, { name: 'Vend', prefix: `${locationKey(s, location)}/` });
      return { 'storage-credentials': [{ prefix: location, config: storageConfig(s, { prefix: wh.slug, namespace: req.params.namespace, name: row.name }) }] };
    });

    app.post(`${base}/:table/sign`, {
      config: { csrf: false },
      schema: { operationId: 'signRequest',
        tags, summary: 'Sign an object-store request inside the table location with the service\'s keys (SigV4; Iceberg REST signRequest): object reads and writes, multipart uploads, ListObjectsV2 with a prefix inside, DeleteObject and DeleteObjects with its body. Reads need ws_viewer, writes ws_editor', params: pTable,
        body: z.object({ region: z.string().max(64), uri: z.string().max(8192), method: z.enum(['PUT', 'GET', 'HEAD', 'POST', 'DELETE', 'PATCH', 'OPTIONS']), headers: z.record(z.string().max(256), z.array(z.string().max(8192)).max(64)), properties: z.record(z.string(), z.string()).optional(), body: z.string().max(1024 * 1024).optional(), provider: z.string().optional() }),
        response: { 200: z.object({ uri: z.string(), headers: z.record(z.string(), z.array(z.string())) }), ...catalogErrors },
      },
    }, async (req) => {
      const { s, wh, caller } = await scope(ctx, req, req.params.prefix, 'read', 'signing a storage request', { namespace: req.params.namespace, name: req.params.table, op: 'read' });
      if (req.body.provider !== undefined && req.body.provider !== 's3') throw badRequest(`only s3 requests are signed, not ${req.body.provider}`);
      const row = await getTable(s.db, wh, parseNamespace(req.params.namespace), checkName(req.params.table), 'table');
      const { access, request } = checkSignRequest(s, wh, tableLocation(row), req.body);
      if (access === 'write') await requireRight(caller, wh.slug, 'write', 'writing table files');
      return signRequest(s, req.body, request);
    });

    app.post('/catalog/v1/:prefix/namespaces/:namespace/register', {
      config: { csrf: false },
      schema: { operationId: 'registerTable', tags, summary: 'Register a table from a metadata file in the warehouse (Iceberg REST registerTable)', params: pNs, body: loose('RegisterTableRequest'), response: { 200: loadResult, ...catalogErrors } },
    }, async (req, reply) => {
      const { s, wh, caller } = await scope(ctx, req, req.params.prefix, 'write', 'registering a table', { namespace: req.params.namespace, name: (req.body as Json).name, op: 'create' });
      const t = await registerTable(s, wh, caller, parseNamespace(req.params.namespace), req.body as Json);
      const name = String((req.body as Json).name);
      return sendJson(reply, 200, loadResultText(t.location, t.text, storageConfig(s, { prefix: wh.slug, namespace: req.params.namespace, name })));
    });

    app.post('/catalog/v1/:prefix/tables/rename', {
      config: { csrf: false },
      schema: { operationId: 'renameTable', tags, summary: 'Rename or move a table (Iceberg REST renameTable)', params: z.object({ prefix: prefixParam }), body: z.object({ source: identifier, destination: identifier }), response: { 204: z.null(), ...catalogErrors } },
    }, async (req, reply) => {
      const sc = await scope(ctx, req, req.params.prefix, 'write', 'renaming a table');
      const id = (x: { namespace: string[]; name: string }) => ({ namespace: checkNamespace(x.namespace), name: checkName(x.name) });
      const [from, to] = [id(req.body.source), id(req.body.destination)];
      await checkTargetPolicies(sc, from.namespace, from.name, 'rename');
      await checkTargetPolicies(sc, to.namespace, to.name, 'create');
      await renameTable(sc.s, sc.wh, sc.caller, 'table', from, to);
      return reply.status(204).send(null);
    });

    app.post('/catalog/v1/:prefix/transactions/commit', {
      config: { csrf: false },
      schema: { operationId: 'commitTransaction', tags, summary: 'Commit changes to several tables atomically: all or nothing (Iceberg REST commitTransaction)', params: z.object({ prefix: prefixParam }), body: loose('CommitTransactionRequest'), response: { 204: z.null(), ...catalogErrors } },
    }, async (req, reply) => {
      const sc = await scope(ctx, req, req.params.prefix, 'write', 'committing a transaction');
      const raw = (req.body as Json)['table-changes'];
      if (!Array.isArray(raw)) throw badRequest('table-changes must be an array');
      const changes = raw.map((c) => parseChange((c ?? {}) as Json));
      for (const c of changes) await checkTargetPolicies(sc, c.namespace, c.name, 'commit');
      await commit(sc.s, sc.wh, sc.caller, changes);
      return reply.status(204).send(null);
    });
  };
}
