// What an engine is given: its rendered configuration (files by path), its labels and the hash
// that names the configuration. Pure. The configuration points the Iceberg catalog at
// `<callback_url>/catalog` (OAuth2 client credentials of the engine's own client against
// `<callback_url>/oauth/token`, the workspace's warehouse) and access control at
// `<callback_url>/service`. The client secret is never rendered: the files name the environment
// variable SVC_ENGINE_CLIENT_SECRET, which the provisioner sets from the sealed secret.
import { createHash } from 'node:crypto';
import type { EngineKind, EngineResources } from '../db/engine-types.js';
import type { ResolvedImage } from './images.js';

export const SECRET_ENV = 'SVC_ENGINE_CLIENT_SECRET';
/** where the files go inside the engine container */
export const CONFIG_DIR: Record<EngineKind, string> = { trino: '/etc/trino', olap: '/opt/starrocks/svc' };

export interface RenderInput {
  kind: EngineKind;
  workspace: string;
  engine: string;
  engineId: string;
  image: ResolvedImage;
  resources: EngineResources;
  callbackUrl: string;
  clientId: string;
  /** `aud` the catalog requires (oidc.catalog_audience) */
  catalogAudience: string;
  /** olap only: dialect -> driver the engine loads (already verified) */
  jdbcDrivers?: Record<string, { url: string; sha256: string; driver_class: string }>;
}

export interface Rendered {
  files: Record<string, string>;
  /** sha256 of image, resources and files: a change is drift */
  hash: string;
}

const props = (o: Record<string, string | number | boolean>) => Object.entries(o).map(([k, v]) => `${k}=${v}`).join('\n') + '\n';

/** JVM heap: 70% of the memory limit (Trino's guidance), in MiB. */
export function heapOf(memory: string): string {
  const m = /^(\d+)(Mi|Gi|M|G)$/.exec(memory);
  if (!m) return '1G';
  const mib = Number(m[1]) * (m[2]!.startsWith('G') ? 1024 : 1);
  return `${Math.max(256, Math.floor(mib * 0.7))}M`;
}

function rangerXml(service: string, prefix: string, callbackUrl: string): string {
  const p = (name: string, value: string) => `  <property><name>${name}</name><value>${value}</value></property>`;
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<configuration>',
    p(`ranger.plugin.${prefix}.service.name`, service),
    p(`ranger.plugin.${prefix}.policy.rest.url`, `${callbackUrl}/service`),
    p(`ranger.plugin.${prefix}.policy.pollIntervalMs`, '30000'),
    p(`ranger.plugin.${prefix}.policy.cache.dir`, '/tmp/ranger-policy-cache'),
    '</configuration>',
    '',
  ].join('\n');
}

export function render(i: RenderInput): Rendered {
  const cb = i.callbackUrl.replace(/\/+$/, '');
  const service = `${i.workspace}.${i.engine}`;
  const files: Record<string, string> = {};
  if (i.kind === 'trino') {
    files['config.properties'] = props({
      coordinator: true, 'node-scheduler.include-coordinator': true,
      'http-server.http.port': i.image.port, 'discovery.uri': `http://localhost:${i.image.port}`,
    });
    files['jvm.config'] = ['-server', `-Xmx${heapOf(i.resources.memory)}`, '-XX:+UseG1GC', '-XX:+ExitOnOutOfMemoryError', ''].join('\n');
    files['catalog/iceberg.properties'] = props({
      'connector.name': 'iceberg',
      'iceberg.catalog.type': 'rest',
      'iceberg.rest-catalog.uri': `${cb}/catalog`,
      'iceberg.rest-catalog.warehouse': i.workspace,
      'iceberg.rest-catalog.security': 'OAUTH2',
      'iceberg.rest-catalog.oauth2.server-uri': `${cb}/oauth/token`,
      'iceberg.rest-catalog.oauth2.credential': `${i.clientId}:\${ENV:${SECRET_ENV}}`,
      'iceberg.rest-catalog.oauth2.scope': `audience:${i.catalogAudience}`,
      'iceberg.rest-catalog.vended-credentials-enabled': true,
      'fs.native-s3.enabled': true,
    });
    files['access-control.properties'] = props({
      'access-control.name': 'ranger',
      'ranger.service.name': service,
      'ranger.plugin.config.resource': `${CONFIG_DIR.trino}/ranger-trino-security.xml`,
    });
    files['ranger-trino-security.xml'] = rangerXml(service, 'trino', cb);
  } else {
    files['fe.conf'] = props({ http_port: i.image.port, query_port: 9030, access_control: 'ranger', ranger_config_dir: CONFIG_DIR.olap });
    files['ranger-starrocks-security.xml'] = rangerXml(service, 'starrocks', cb);
    const q = (s: string) => `"${s.replace(/["\\]/g, '\\$&')}"`;
    files['init.sql'] = [
      'CREATE EXTERNAL CATALOG IF NOT EXISTS iceberg PROPERTIES (',
      [
        ['type', 'iceberg'], ['iceberg.catalog.type', 'rest'], ['iceberg.catalog.uri', `${cb}/catalog`],
        ['iceberg.catalog.warehouse', i.workspace], ['iceberg.catalog.security', 'oauth2'],
        ['iceberg.catalog.oauth2.server-uri', `${cb}/oauth/token`],
        ['iceberg.catalog.oauth2.credential', `${i.clientId}:\${${SECRET_ENV}}`],
        ['iceberg.catalog.oauth2.scope', `audience:${i.catalogAudience}`],
      ].map(([k, v]) => `  ${q(k!)} = ${q(v!)}`).join(',\n'),
      ');',
      '',
    ].join('\n');
    const drivers = Object.entries(i.jdbcDrivers ?? {}).sort(([a], [b]) => a.localeCompare(b));
    files['jdbc-drivers.properties'] = drivers.map(([d, v]) => `${d}.driver_url=${v.url}\n${d}.driver_class=${v.driver_class}\n${d}.checksum=${v.sha256}`).join('\n') + '\n';
  }
  const h = createHash('sha256');
  h.update(JSON.stringify({ image: i.image.image, resources: i.resources, files: Object.entries(files).sort(([a], [b]) => a.localeCompare(b)) }));
  return { files, hash: h.digest('hex').slice(0, 16) };
}

/** Labels on every object of an engine (container, Deployment, Service, pods). */
export function engineLabels(i: { project?: string; workspace: string; engine: string; engineId: string; hash: string; kind: EngineKind }): Record<string, string> {
  const l: Record<string, string> = {
    'svc.managed-by': 'svc', 'svc.component': 'engine', 'svc.workspace': i.workspace, 'svc.engine': i.engine,
    'svc.engine-id': i.engineId, 'svc.engine-kind': i.kind, 'svc.config-hash': i.hash,
  };
  if (i.project !== undefined) l['svc.project'] = i.project;
  return l;
}

/** A unified diff-like list of changed lines between two file sets (explain's "diff against what runs"). */
export function diffFiles(running: Record<string, string> | null, next: Record<string, string>): string[] {
  if (!running) return Object.keys(next).sort().map((f) => `+ ${f} (new)`);
  const out: string[] = [];
  for (const f of [...new Set([...Object.keys(running), ...Object.keys(next)])].sort()) {
    const a = running[f]; const b = next[f];
    if (a === b) continue;
    if (a === undefined) { out.push(`+ ${f} (new)`); continue; }
    if (b === undefined) { out.push(`- ${f} (removed)`); continue; }
    const al = new Set(a.split('\n')); const bl = new Set(b.split('\n'));
    for (const l of a.split('\n')) if (l && !bl.has(l)) out.push(`- ${f}: ${l}`);
    for (const l of b.split('\n')) if (l && !al.has(l)) out.push(`+ ${f}: ${l}`);
  }
  return out;
}
