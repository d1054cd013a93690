// The Helm chart charts/svc loaded once for the chart and image checks: every template masked
// (./chart-template.ts) and parsed, values.yaml, and accessors for the resources the checks read;
// the secrets the chart must handle and the paths the example Ingress may route.
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { listLeaves } from '../../src/config/index.js';
import { Masker, scanBlocks, PLACEHOLDER } from './chart-template.js';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const CHART = path.join(ROOT, 'charts/svc');
export const TEMPLATES = path.join(CHART, 'templates');
export const PKG = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
  version: string; dependencies: Record<string, string>; devDependencies: Record<string, string>;
};

// ---------------------------------------------------------------------------------------------
// What the chart must do with secrets: configuration key -> variable, values entry, and whether
// an install without a Secret reference must fail.

export type Need = 'required' | 'when-enabled' | 'optional';
export const SECRET_KEYS: { key: string; env: string; ref: string; need: Need }[] = [
  { key: 'security.secret_key', env: 'SVC_SECURITY__SECRET_KEY', ref: 'securitySecretKey', need: 'required' },
  { key: 'secrets.master_key', env: 'SVC_SECRETS__MASTER_KEY', ref: 'secretsMasterKey', need: 'required' },
  { key: 'database.url', env: 'SVC_DATABASE__URL', ref: 'databaseUrl', need: 'required' },
  { key: 'storage.access_key', env: 'SVC_STORAGE__ACCESS_KEY', ref: 'storageAccessKey', need: 'required' },
  { key: 'storage.secret_key', env: 'SVC_STORAGE__SECRET_KEY', ref: 'storageSecretKey', need: 'required' },
  { key: 'catalog.auth_token', env: 'SVC_CATALOG__AUTH_TOKEN', ref: 'catalogAuthToken', need: 'when-enabled' },
  { key: 'redis.url', env: 'SVC_REDIS__URL', ref: 'redisUrl', need: 'optional' },
  { key: 'oidc.client_secret', env: 'SVC_OIDC__CLIENT_SECRET', ref: 'oidcClientSecret', need: 'optional' },
  { key: 'policy_service.auth_token', env: 'SVC_POLICY_SERVICE__AUTH_TOKEN', ref: 'policyServiceAuthToken', need: 'optional' },
];
/** Keys that must never be rendered into the ConfigMap (redis.url may: it may carry no password). */
export const NEVER_IN_CONFIG = SECRET_KEYS.filter((s) => s.key !== 'redis.url').map((s) => s.key);
export const INTERNAL_PATHS = ['/service', '/metrics', '/healthz', '/readyz', '/admin'];
export const PUBLIC_PATHS = ['/api', '/oauth', '/.well-known', '/data-api', '/catalog', '/workflows/v1', '/'];

// ---------------------------------------------------------------------------------------------
// The chart, loaded once

export interface Resource { file: string; kind: string; doc: any }
export interface Chart {
  chartYaml: any;
  values: any;
  valuesText: string;
  helpers: Map<string, string>;
  masker: Masker;
  raw: Map<string, string>;
  resources: Resource[];
}

export function loadChart(): Chart {
  const chartYaml = parseYaml(readFileSync(path.join(CHART, 'Chart.yaml'), 'utf8'));
  const valuesText = readFileSync(path.join(CHART, 'values.yaml'), 'utf8');
  const values = parseYaml(valuesText);
  const helpersText = readFileSync(path.join(TEMPLATES, '_helpers.tpl'), 'utf8');
  const helpers = scanBlocks('_helpers.tpl', helpersText);
  const masker = new Masker(helpers);
  const raw = new Map<string, string>();
  const resources: Resource[] = [];
  for (const f of readdirSync(TEMPLATES).filter((f) => f.endsWith('.yaml')).sort()) {
    const text = readFileSync(path.join(TEMPLATES, f), 'utf8');
    raw.set(f, text);
    scanBlocks(f, text);
    const masked = masker.mask(text);
    // what the checks below read, for a chart author: SVC_CHART_MASKED_DIR=/tmp/masked
    if (process.env.SVC_CHART_MASKED_DIR) writeFileSync(path.join(process.env.SVC_CHART_MASKED_DIR, f), masked);
    for (const doc of parseAllDocuments(masked)) {
      assert.deepEqual(doc.errors.map((e) => e.message), [], `${f} (masked) does not parse:\n${masked}`);
      const js = doc.toJS();
      if (js === null || js === undefined) continue;
      assert.equal(typeof js.kind, 'string', `${f}: a document without kind`);
      resources.push({ file: f, kind: js.kind, doc: js });
    }
  }
  return { chartYaml, values, valuesText, helpers, masker, raw, resources };
}

export const chart = loadChart();
export const expr = (v: unknown) => chart.masker.expr(v);
/** A masked scalar with its placeholders written back as `{{ expression }}`. */
export const canon = (v: unknown) => String(v).replace(PLACEHOLDER, (_m, n) => `{{ ${chart.masker.exprs[Number(n)]} }}`);
export const ofKind = (kind: string) => chart.resources.filter((r) => r.kind === kind);
export const component = (r: Resource) => r.doc.metadata?.labels?.['app.kubernetes.io/component'];
export const deployment = (c: string) => {
  const d = ofKind('Deployment').find((r) => component(r) === c);
  assert.ok(d, `a Deployment labelled app.kubernetes.io/component=${c}`);
  return d;
};
export const migrateJob = () => {
  const j = ofKind('Job').find((r) => r.doc.metadata.annotations?.['helm.sh/hook']);
  assert.ok(j, 'a hook Job');
  return j;
};

export function leafMatches(leaf: string[], p: string[]): boolean {
  return leaf.length === p.length && leaf.every((s, i) => s === p[i] || /^<.*>$/.test(s));
}
export function isPrefix(leaf: string[], p: string[]): boolean {
  return leaf.length > p.length && p.every((s, i) => s === leaf[i] || /^<.*>$/.test(leaf[i]));
}
export const LEAVES = listLeaves().map((l) => l.path);
export const isLeaf = (p: string[]) => LEAVES.some((l) => leafMatches(l, p));
export const isSection = (p: string[]) => LEAVES.some((l) => isPrefix(l, p));

export function get(obj: any, p: string[]): { found: boolean; value: any } {
  let node = obj;
  for (const seg of p) {
    if (node === null || typeof node !== 'object' || !(seg in node)) return { found: false, value: undefined };
    node = node[seg];
  }
  return { found: true, value: node };
}

export function podSpecs(): { what: string; spec: any }[] {
  return [
    { what: 'api Deployment', spec: deployment('api').doc.spec.template.spec },
    { what: 'worker Deployment', spec: deployment('worker').doc.spec.template.spec },
    { what: 'migrate Job', spec: migrateJob().doc.spec.template.spec },
  ];
}
