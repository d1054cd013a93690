// The Helm chart (charts/svc) and the container image (Dockerfile), checked on a machine that has
// neither helm nor a container engine.
//
// Chart: every file is parsed as YAML with its template expressions masked (control lines
// dropped, `include` of the chart's own helpers expanded, other expressions replaced by
// placeholders whose text the checks can still read), so nothing is asserted about output the
// test cannot see. On top of that: the configuration under `config` in values.yaml is checked key
// by key against the zod schema, secrets are references only, and the manifests carry the
// probes, drain, hook, RBAC and routing the operator's guide (docs/operations.md) promises.
//
// Image: the Dockerfile's stages are replayed outside a container: COPY steps copy (through
// .dockerignore), RUN steps of the dependency stages run as written, the runtime stage's system
// steps (chmod, ln -s) are applied to the replayed tree, and the result runs `svc -V`,
// `svc openapi`, `svc migrate` (the hook Job's command, with svc.toml rendered from values.yaml)
// and `svc serve` with the image's HEALTHCHECK command.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync, lstatSync, readlinkSync, accessSync, constants as fsc } from 'node:fs';
import { mkdtemp, mkdir, rm, writeFile, chmod, symlink, cp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { stringify as toToml } from 'smol-toml';
import { configSchema, listLeaves, envName } from '../src/config/index.js';
import { createTestDatabase, type TestDatabase } from './helpers/db.js';
import { startS3, type TestS3 } from './helpers/s3.js';
import { cleanEnv } from './helpers/cli.js';
import { freePort } from './helpers/net.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const CHART = path.join(ROOT, 'charts/svc');
const TEMPLATES = path.join(CHART, 'templates');
const PKG = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
  version: string; dependencies: Record<string, string>; devDependencies: Record<string, string>;
};

// ---------------------------------------------------------------------------------------------
// What the chart must do with secrets: configuration key -> variable, values entry, and whether
// an install without a Secret reference must fail.

type Need = 'required' | 'when-enabled' | 'optional';
const SECRET_KEYS: { key: string; env: string; ref: string; need: Need }[] = [
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
const NEVER_IN_CONFIG = SECRET_KEYS.filter((s) => s.key !== 'redis.url').map((s) => s.key);
const INTERNAL_PATHS = ['/service', '/metrics', '/healthz', '/readyz', '/admin'];
const PUBLIC_PATHS = ['/api', '/oauth', '/.well-known', '/data-api', '/catalog', '/workflows/v1', '/'];

// ---------------------------------------------------------------------------------------------
// Go-template masking

const ACTION = /\{\{(-?)([\s\S]*?)(-?)\}\}/g;
const COMMENT = /\{\{-?\s*\/\*[\s\S]*?\*\/\s*-?\}\}/g;
const PLACEHOLDER = /__TPL(\d+)__/g;

type BlockKind = 'open' | 'else' | 'end' | 'other';
function blockKind(inner: string): BlockKind {
  const word = inner.trim().split(/\s+/)[0];
  if (['if', 'range', 'with', 'define', 'block'].includes(word)) return 'open';
  if (word === 'else') return 'else';
  if (word === 'end') return 'end';
  return 'other';
}

interface Include { name: string; mode: 'nindent' | 'indent' | 'none'; n: number }
function parseInclude(inner: string): Include | undefined {
  const m = /^\s*include\s+"([^"]+)"\s+(\$|\.)\s*(?:\|\s*(nindent|indent)\s+(\d+))?\s*$/.exec(inner);
  if (!m) return undefined;
  return { name: m[1], mode: (m[3] as Include['mode']) ?? 'none', n: Number(m[4] ?? 0) };
}

/** Defined helpers (name -> body) and a block-balance check of one template file. */
function scanBlocks(file: string, text: string): Map<string, string> {
  const defines = new Map<string, string>();
  const stack: { inner: string; bodyStart: number }[] = [];
  for (const m of text.replace(COMMENT, (c) => ' '.repeat(c.length)).matchAll(ACTION)) {
    const kind = blockKind(m[2]);
    if (kind === 'open') stack.push({ inner: m[2].trim(), bodyStart: m.index! + m[0].length });
    else if (kind === 'else') assert.ok(stack.length > 0, `${file}: {{ else }} outside a block`);
    else if (kind === 'end') {
      const open = stack.pop();
      assert.ok(open, `${file}: {{ end }} without an open block at offset ${m.index}`);
      const d = /^define\s+"([^"]+)"/.exec(open.inner);
      if (d) defines.set(d[1], text.slice(open.bodyStart, m.index).replace(/^[ \t]*\n/, '').replace(/\n[ \t]*$/, ''));
    }
  }
  assert.equal(stack.length, 0, `${file}: unclosed blocks: ${stack.map((s) => s.inner).join(', ')}`);
  return defines;
}

class Masker {
  readonly exprs: string[] = [];
  constructor(readonly defines: Map<string, string>) {}

  /** The text of the template expression a placeholder stands for. */
  expr(v: unknown): string | undefined {
    if (typeof v !== 'string') return undefined;
    const m = /^__TPL(\d+)__$/.exec(v.trim());
    return m ? this.exprs[Number(m[1])] : undefined;
  }

  /** Every expression inside a string (placeholders within a longer scalar). */
  exprsIn(v: unknown): string[] {
    if (typeof v !== 'string') return [];
    return [...v.matchAll(PLACEHOLDER)].map((m) => this.exprs[Number(m[1])]);
  }

  private placeholders(line: string): string {
    return line.replace(ACTION, (_all, _l, inner: string) => `__TPL${this.exprs.push(inner.trim()) - 1}__`);
  }

  private expand(inc: Include, firstIndent: string, depth: number): string[] {
    const body = this.defines.get(inc.name);
    assert.ok(body !== undefined, `include of an undefined template "${inc.name}"`);
    const lines = this.mask(body, depth + 1).split('\n').filter((l) => l.trim() !== '');
    if (inc.mode === 'none') return lines.map((l, i) => (i === 0 ? firstIndent + l : l));
    const pad = ' '.repeat(inc.n);
    return lines.map((l) => pad + l);
  }

  /** Masked text: parses as YAML whenever the template is written one construct per line. */
  mask(text: string, depth = 0): string {
    assert.ok(depth < 10, 'include nesting too deep');
    const out: string[] = [];
    for (const line of text.replace(COMMENT, '').split('\n')) {
      const acts = [...line.matchAll(ACTION)];
      if (acts.length === 0) { out.push(line); continue; }
      if (line.replace(ACTION, '').trim() === '') {
        // a line of template actions only: control flow and unknown output are dropped,
        // the chart's own helpers are expanded where they are included
        const inc = acts.length === 1 ? parseInclude(acts[0][2]) : undefined;
        if (inc) out.push(...this.expand(inc, /^\s*/.exec(line)![0], depth));
        continue;
      }
      const last = acts[acts.length - 1];
      const atEnd = line.slice(last.index! + last[0].length).trim() === '';
      if (atEnd && /\|\s*nindent\s+\d+\s*$/.test(last[2].trim())) {
        // `key: {{- something | nindent N }}`: the key, then the block below it
        const head = line.slice(0, last.index!).replace(/\s+$/, '');
        out.push(this.placeholders(head));
        const inc = parseInclude(last[2]);
        if (inc) out.push(...this.expand(inc, '', depth));
        continue;
      }
      out.push(this.placeholders(line));
    }
    return out.join('\n');
  }
}

/** For each line of a template, the block actions (if/range/with) enclosing it. */
function enclosing(text: string): string[][] {
  const stack: string[] = [];
  return text.split('\n').map((line) => {
    const here = [...stack];
    for (const m of line.matchAll(ACTION)) {
      const kind = blockKind(m[2]);
      if (kind === 'open') stack.push(m[2].trim());
      else if (kind === 'else') stack[stack.length - 1] = `${stack[stack.length - 1]} ELSE ${m[2].trim()}`;
      else if (kind === 'end') stack.pop();
    }
    return here;
  });
}

// ---------------------------------------------------------------------------------------------
// The chart, loaded once

interface Resource { file: string; kind: string; doc: any }
interface Chart {
  chartYaml: any;
  values: any;
  valuesText: string;
  helpers: Map<string, string>;
  masker: Masker;
  raw: Map<string, string>;
  resources: Resource[];
}

function loadChart(): Chart {
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

const chart = loadChart();
const expr = (v: unknown) => chart.masker.expr(v);
/** A masked scalar with its placeholders written back as `{{ expression }}`. */
const canon = (v: unknown) => String(v).replace(PLACEHOLDER, (_m, n) => `{{ ${chart.masker.exprs[Number(n)]} }}`);
const ofKind = (kind: string) => chart.resources.filter((r) => r.kind === kind);
const component = (r: Resource) => r.doc.metadata?.labels?.['app.kubernetes.io/component'];
const deployment = (c: string) => {
  const d = ofKind('Deployment').find((r) => component(r) === c);
  assert.ok(d, `a Deployment labelled app.kubernetes.io/component=${c}`);
  return d;
};
const migrateJob = () => {
  const j = ofKind('Job').find((r) => r.doc.metadata.annotations?.['helm.sh/hook']);
  assert.ok(j, 'a hook Job');
  return j;
};

function leafMatches(leaf: string[], p: string[]): boolean {
  return leaf.length === p.length && leaf.every((s, i) => s === p[i] || /^<.*>$/.test(s));
}
function isPrefix(leaf: string[], p: string[]): boolean {
  return leaf.length > p.length && p.every((s, i) => s === leaf[i] || /^<.*>$/.test(leaf[i]));
}
const LEAVES = listLeaves().map((l) => l.path);
const isLeaf = (p: string[]) => LEAVES.some((l) => leafMatches(l, p));
const isSection = (p: string[]) => LEAVES.some((l) => isPrefix(l, p));

function get(obj: any, p: string[]): { found: boolean; value: any } {
  let node = obj;
  for (const seg of p) {
    if (node === null || typeof node !== 'object' || !(seg in node)) return { found: false, value: undefined };
    node = node[seg];
  }
  return { found: true, value: node };
}

function podSpecs(): { what: string; spec: any }[] {
  return [
    { what: 'api Deployment', spec: deployment('api').doc.spec.template.spec },
    { what: 'worker Deployment', spec: deployment('worker').doc.spec.template.spec },
    { what: 'migrate Job', spec: migrateJob().doc.spec.template.spec },
  ];
}

// ---------------------------------------------------------------------------------------------

describe('Helm chart charts/svc, checked without helm', () => {
  test('every chart file parses as YAML with template expressions masked; blocks balance; includes resolve', () => {
    assert.ok(chart.resources.length >= 10, `resources found: ${chart.resources.map((r) => r.kind).join(', ')}`);
    for (const f of readdirSync(TEMPLATES)) {
      assert.ok(/\.(yaml|tpl|txt)$/.test(f), `unexpected file in templates/: ${f}`);
    }
    scanBlocks('NOTES.txt', readFileSync(path.join(TEMPLATES, 'NOTES.txt'), 'utf8'));
    // every include, in templates, helpers and NOTES, names a defined helper
    const all = [...chart.raw.values(), readFileSync(path.join(TEMPLATES, '_helpers.tpl'), 'utf8'),
      readFileSync(path.join(TEMPLATES, 'NOTES.txt'), 'utf8')].join('\n');
    for (const m of all.matchAll(/include\s+"([^"]+)"/g)) assert.ok(chart.helpers.has(m[1]), `include "${m[1]}" is not defined`);
    // no template renders a Secret: the chart only references existing ones
    assert.deepEqual(ofKind('Secret'), []);
    assert.doesNotMatch(all, /kind:\s*Secret\b/);
  });

  test('Chart.yaml is a Helm 3 application chart whose appVersion is the package version', () => {
    const c = chart.chartYaml;
    assert.equal(c.apiVersion, 'v2');
    assert.equal(c.name, 'svc');
    assert.equal(c.type, 'application');
    assert.match(c.version, /^\d+\.\d+\.\d+$/);
    assert.equal(c.appVersion, PKG.version);
  });

  test('every .Values path a template reads exists in values.yaml', () => {
    const files = [...chart.raw.entries(), ['_helpers.tpl', readFileSync(path.join(TEMPLATES, '_helpers.tpl'), 'utf8')],
      ['NOTES.txt', readFileSync(path.join(TEMPLATES, 'NOTES.txt'), 'utf8')]];
    let n = 0;
    for (const [f, text] of files) {
      for (const m of text.matchAll(/\.Values((?:\.[A-Za-z_][A-Za-z0-9_]*)+)/g)) {
        const p = m[1].slice(1).split('.');
        assert.ok(get(chart.values, p).found, `${f}: .Values.${p.join('.')} is not in values.yaml`);
        if (p[0] === 'config') {
          const key = p.slice(1);
          assert.ok(isLeaf(key) || isSection(key), `${f}: .Values.config.${key.join('.')} is not a configuration key`);
        }
        n++;
      }
    }
    assert.ok(n > 50);
  });

  test('every key under config in values.yaml is a key of the configuration schema, and config parses', () => {
    const config = chart.values.config;
    assert.ok(config && typeof config === 'object');
    const seen: string[] = [];
    const walk = (node: any, p: string[]) => {
      for (const [k, v] of Object.entries(node)) {
        const q = [...p, k];
        if (isLeaf(q)) { seen.push(q.join('.')); continue; }
        assert.ok(isSection(q), `values.yaml config.${q.join('.')} is not a configuration key (see docs/configuration.md)`);
        assert.ok(v !== null && typeof v === 'object' && !Array.isArray(v), `config.${q.join('.')} is a table`);
        walk(v, q);
      }
    };
    walk(config, []);
    assert.ok(seen.length >= 15, `leaves: ${seen.join(', ')}`);
    // values (types, enums, rules) as the server would read them from svc.toml
    const parsed = configSchema.safeParse(config);
    assert.ok(parsed.success, parsed.success ? '' : parsed.error.message);
    for (const key of NEVER_IN_CONFIG) assert.ok(!seen.includes(key), `config.${key} must come from a Secret`);
  });

  test('secrets in values.yaml are references only: an existing Secret name (empty) and a key name', () => {
    const s = chart.values.secrets;
    assert.equal(s.existingSecret, '');
    assert.deepEqual(Object.keys(s).filter((k) => k !== 'existingSecret').sort(), SECRET_KEYS.map((x) => x.ref).sort());
    for (const { ref } of SECRET_KEYS) {
      assert.deepEqual(Object.keys(s[ref]).sort(), ['existingSecret', 'key'], `secrets.${ref}`);
      assert.equal(s[ref].existingSecret, '', `secrets.${ref}.existingSecret has no default`);
      assert.match(s[ref].key, /^[a-z0-9-]{3,40}$/, `secrets.${ref}.key is a key name`);
    }
    // nothing in values.yaml looks like secret material
    const scan = (node: any, p: string) => {
      if (typeof node === 'string') {
        assert.doesNotMatch(node, /^[A-Za-z0-9+/_=-]{32,}$/, `${p} looks like a key or token`);
        assert.doesNotMatch(node, /:\/\/[^/\s]*:[^/\s]*@/, `${p} carries credentials in a URL`);
      } else if (node && typeof node === 'object') {
        for (const [k, v] of Object.entries(node)) scan(v, p ? `${p}.${k}` : k);
      }
    };
    scan(chart.values, '');
    assert.doesNotMatch(chart.valuesText, /BEGIN [A-Z ]*PRIVATE KEY/);
  });

  test('every secret reaches the API, worker and migrate pods through secretKeyRef; required ones use `required`', () => {
    for (const { what, spec } of podSpecs()) {
      const env: any[] = spec.containers[0].env;
      for (const s of SECRET_KEYS) {
        const entries = env.filter((e) => e.name === s.env);
        assert.equal(entries.length, 1, `${what}: one ${s.env}`);
        const e = entries[0];
        assert.equal(e.value, undefined, `${what}: ${s.env} has no literal value`);
        const ref = e.valueFrom?.secretKeyRef;
        assert.ok(ref, `${what}: ${s.env} comes from secretKeyRef`);
        const nameExpr = expr(ref.name) ?? '';
        const keyExpr = expr(ref.key) ?? '';
        assert.match(keyExpr, new RegExp(`\\.Values\\.secrets\\.${s.ref}\\.key\\b`), `${what}: ${s.env} key`);
        if (s.need === 'required') {
          assert.match(nameExpr, /^required "/, `${what}: ${s.env} Secret name is required`);
          assert.match(nameExpr, new RegExp(`coalesce \\.Values\\.secrets\\.${s.ref}\\.existingSecret \\.Values\\.secrets\\.existingSecret`));
          assert.equal(ref.optional, undefined, `${what}: ${s.env} is not optional`);
        } else if (s.need === 'when-enabled') {
          assert.match(nameExpr, /^required "/);
          assert.equal(expr(ref.optional), 'not .Values.config.catalog.enabled');
        } else {
          assert.equal(ref.optional, true, `${what}: ${s.env} is optional`);
        }
      }
    }
    // the conditions around the optional entries, read from the helper itself
    const body = chart.helpers.get('svc.env')!;
    const lines = body.split('\n');
    const conds = enclosing(body);
    for (const s of SECRET_KEYS.filter((x) => x.need !== 'required')) {
      const i = lines.findIndex((l) => l.includes(`- name: ${s.env}`));
      const c = conds[i].join(' ');
      assert.ok(s.need === 'when-enabled' ? /\.Values\.config\.catalog\.enabled/.test(c) : c.includes(`.Values.secrets.${s.ref}.existingSecret`), `${s.env} rendered when: ${c}`);
    }
  });

  test('API and worker Deployments: same image running serve, probes, drain above 55 s, non-root, worker loops by env', () => {
    const v = chart.values;
    assert.ok(v.terminationGracePeriodSeconds > 55 + v.preStopSleepSeconds,
      `terminationGracePeriodSeconds ${v.terminationGracePeriodSeconds} > 55 s drain + ${v.preStopSleepSeconds} s preStop`);
    const api = deployment('api');
    const worker = deployment('worker');
    assert.ok(chart.raw.get(worker.file)!.trimStart().startsWith('{{- if .Values.worker.enabled }}'));
    for (const d of [api, worker]) {
      const spec = d.doc.spec.template.spec;
      const c = spec.containers[0];
      const what = `${component(d)} Deployment`;
      assert.equal(expr(d.doc.spec.replicas), `.Values.${component(d)}.replicaCount`, what);
      assert.equal(expr(spec.terminationGracePeriodSeconds), '.Values.terminationGracePeriodSeconds', what);
      assert.equal(expr(c.image), 'include "svc.image" . | quote', what);
      assert.deepEqual(c.args, ['serve'], what);
      assert.equal(c.workingDir, '/etc/svc', what);
      const http = c.ports.find((p: any) => p.name === 'http');
      assert.equal(expr(http.containerPort), '.Values.config.server.port', what);
      assert.equal(c.livenessProbe.httpGet.path, '/healthz', what);
      assert.equal(c.livenessProbe.httpGet.port, 'http', what);
      assert.equal(c.readinessProbe.httpGet.path, '/readyz', what);
      assert.equal(c.readinessProbe.httpGet.port, 'http', what);
      assert.equal(c.startupProbe.httpGet.path, '/healthz', what);
      assert.deepEqual(c.lifecycle.preStop.exec.command.map((x: string) => chart.masker.exprsIn(x)[0] ?? x), ['sleep', '.Values.preStopSleepSeconds']);
      assert.equal(spec.enableServiceLinks, false, `${what}: no SVC_* service-link variables`);
      assert.equal(expr(spec.serviceAccountName), 'include "svc.serviceAccountName" .');
      assert.ok(expr(d.doc.spec.template.metadata.annotations['checksum/config'])?.includes('include "svc.configToml" . | sha256sum'), `${what} rolls on config change`);
      // selector and pod labels agree
      for (const [k, val] of Object.entries(d.doc.spec.selector.matchLabels)) assert.equal(canon(d.doc.spec.template.metadata.labels[k]), canon(val));
      // svc.toml from the release ConfigMap in the working directory
      const vol = spec.volumes.find((x: any) => x.name === 'config');
      assert.equal(expr(vol.configMap.name), 'include "svc.fullname" .');
      assert.deepEqual(c.volumeMounts.find((m: any) => m.name === 'config'), { name: 'config', mountPath: '/etc/svc', readOnly: true });
    }
    // the worker pool runs the loops; the API runs them only when there is no pool
    const envOf = (d: Resource) => Object.fromEntries(d.doc.spec.template.spec.containers[0].env.filter((e: any) => 'value' in e).map((e: any) => [e.name, e.value]));
    const we = envOf(worker);
    assert.equal(we.SVC_WORKFLOW__WORKER_ENABLED, 'true');
    assert.equal(expr(we.SVC_WORKFLOW__SCHEDULER_ENABLED), '.Values.worker.scheduler | quote');
    const ae = envOf(api);
    assert.equal(expr(ae.SVC_WORKFLOW__WORKER_ENABLED), 'not .Values.worker.enabled | quote');
    assert.equal(expr(ae.SVC_WORKFLOW__SCHEDULER_ENABLED), 'and (not .Values.worker.enabled) .Values.worker.scheduler | quote');
    // resources and replicas of their own
    assert.equal(typeof v.api.replicaCount, 'number');
    assert.equal(typeof v.worker.replicaCount, 'number');
    assert.ok(v.api.resources.requests && v.worker.resources.requests);
  });

  test('every pod runs non-root with a read-only root filesystem, as the image user', () => {
    const dockerUser = /^USER\s+(\d+):(\d+)\s*$/m.exec(readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8'));
    assert.ok(dockerUser);
    assert.equal(chart.values.podSecurityContext.runAsUser, Number(dockerUser[1]));
    assert.equal(chart.values.podSecurityContext.runAsGroup, Number(dockerUser[2]));
    for (const { what, spec } of podSpecs()) {
      assert.equal(spec.securityContext.runAsNonRoot, true, what);
      assert.equal(expr(spec.securityContext.runAsUser), '.Values.podSecurityContext.runAsUser', what);
      assert.equal(spec.securityContext.seccompProfile.type, 'RuntimeDefault', what);
      const sc = spec.containers[0].securityContext;
      assert.equal(sc.runAsNonRoot, true, what);
      assert.equal(sc.allowPrivilegeEscalation, false, what);
      assert.equal(sc.readOnlyRootFilesystem, true, what);
      assert.deepEqual(sc.capabilities.drop, ['ALL'], what);
      assert.ok(spec.volumes.some((x: any) => x.name === 'tmp' && x.emptyDir), `${what}: writable /tmp`);
    }
  });

  test('the migrate Job runs `svc migrate` as a pre-install,pre-upgrade hook with its own svc.toml', () => {
    const job = migrateJob();
    const a = job.doc.metadata.annotations;
    assert.equal(a['helm.sh/hook'], 'pre-install,pre-upgrade');
    assert.match(a['helm.sh/hook-delete-policy'], /before-hook-creation/);
    const spec = job.doc.spec.template.spec;
    assert.deepEqual(spec.containers[0].args, ['migrate']);
    assert.equal(spec.restartPolicy, 'Never');
    assert.equal(spec.automountServiceAccountToken, false);
    assert.equal(spec.serviceAccountName, undefined, 'the release ServiceAccount does not exist yet before install');
    // hooks run before the release's ConfigMap exists: a hook ConfigMap, created first
    const cm = ofKind('ConfigMap').find((r) => r.file === job.file);
    assert.ok(cm);
    assert.equal(cm.doc.metadata.annotations['helm.sh/hook'], 'pre-install,pre-upgrade');
    assert.ok(Number(cm.doc.metadata.annotations['helm.sh/hook-weight']) < Number(a['helm.sh/hook-weight']));
    assert.equal(canon(spec.volumes.find((x: any) => x.name === 'config').configMap.name), canon(cm.doc.metadata.name));
    assert.equal(canon(cm.doc.metadata.name), '{{ include "svc.fullname" . }}-migrate');
    assert.ok('svc.toml' in cm.doc.data);
    assert.equal(chart.raw.get(job.file)!.trimStart().split('\n')[0], '{{- if .Values.migrations.enabled }}');
  });

  test('the ConfigMap renders svc.toml from .Values.config and refuses secret-bearing keys', () => {
    const cm = ofKind('ConfigMap').find((r) => !r.doc.metadata.annotations?.['helm.sh/hook']);
    assert.ok(cm);
    assert.equal(expr(cm.doc.metadata.name), 'include "svc.fullname" .');
    assert.ok('svc.toml' in cm.doc.data);
    assert.match(chart.raw.get(cm.file)!, /svc\.toml: \|\n\s+\{\{- include "svc\.configToml" \. \| nindent 4 \}\}/);
    const body = chart.helpers.get('svc.configToml')!;
    assert.match(body, /\$config := \.Values\.config/);
    assert.match(body, /\{\{ toToml \$config \}\}/);
    const refused = /range \$path := list ((?:"[^"]+"\s*)+)/.exec(body);
    assert.ok(refused);
    assert.deepEqual([...refused[1].matchAll(/"([^"]+)"/g)].map((m) => m[1]).sort(), [...NEVER_IN_CONFIG].sort());
    assert.match(body, /fail \(printf "config\.%s must not be set in values/);
    // the validation helper runs with every install
    assert.match(chart.raw.get(cm.file)!, /^\{\{- include "svc\.validate" \. \}\}/);
  });

  test('the Service is internal; the example Ingress routes only public paths', () => {
    assert.equal(chart.values.service.type, 'ClusterIP');
    const svc = ofKind('Service').find((r) => component(r) === 'api');
    assert.ok(svc);
    assert.equal(expr(svc.doc.spec.type), '.Values.service.type');
    assert.equal(svc.doc.spec.selector['app.kubernetes.io/component'], 'api');
    assert.deepEqual(svc.doc.spec.ports.map((p: any) => [p.name, p.targetPort]), [['http', 'http'], ['apps', 'apps']]);

    const ing = ofKind('Ingress');
    assert.equal(ing.length, 1);
    assert.equal(chart.values.ingress.enabled, false, 'the Ingress is an example, off by default');
    const rules = ing[0].doc.spec.rules;
    const paths = rules[0].http.paths;
    const text = chart.raw.get(ing[0].file)!;
    const conds = enclosing(text);
    const lines = text.split('\n');
    const condOf = (needle: string) => {
      const i = lines.findIndex((l) => l.trim() === needle || l.includes(needle));
      assert.ok(i >= 0, `ingress.yaml has ${needle}`);
      return conds[i].join(' | ');
    };
    for (const p of paths) {
      const e = chart.masker.exprsIn(p.path);
      assert.equal(p.backend.service.port.name, 'http');
      if (e.length === 0) {
        assert.ok(PUBLIC_PATHS.includes(p.path), `Ingress routes ${p.path}`);
        if (p.path === '/') assert.equal(p.pathType, 'Exact', 'the UI root is routed exactly, never as a prefix');
        else assert.equal(p.pathType, 'Prefix');
      } else {
        assert.ok(
          e[0] === 'printf "/workflows/v1/%s/executions/webhook" . | quote' || e[0] === '. | quote',
          `Ingress path expression ${e[0]}`,
        );
      }
    }
    for (const internal of INTERNAL_PATHS) assert.doesNotMatch(text, new RegExp(`path:\\s*"?${internal.replace('/', '\\/')}\\b`));
    assert.match(condOf('- path: /catalog'), /\.Values\.config\.catalog\.enabled/);
    assert.match(condOf('/executions/webhook'), /\.Values\.config\.workflow\.webhooks_enabled.*range \.Values\.ingress\.webhookWorkspaces/);
    assert.match(conds[lines.findIndex((l) => l.trim() === '- path: /workflows/v1')].join(' | '), /\.Values\.ingress\.workflowApi/);
    assert.match(condOf('- path: {{ . | quote }}'), /range \.Values\.ingress\.uiPaths/);
    // ingress.uiPaths are refused when internal: the helper's pattern, applied here
    const validate = chart.helpers.get('svc.validate')!;
    const re = /regexMatch "([^"]+)" \(toString \.\)\) -\}\}\n\{\{- fail \(printf "ingress\.uiPaths/.exec(validate);
    assert.ok(re, 'svc.validate checks ingress.uiPaths');
    const internalRe = new RegExp(re[1]);
    for (const p of ['/service', '/service/plugins/services', '/metrics', '/healthz', '/readyz', '/admin', '/admin/queues']) assert.match(p, internalRe);
    for (const p of ['/assets', '/ui', '/servicex', '/administration']) assert.doesNotMatch(p, internalRe);
    // the default UI prefixes (the UI's static assets under /ui) pass that check
    assert.deepEqual(chart.values.ingress.uiPaths, ['/ui']);
    for (const p of chart.values.ingress.uiPaths) assert.ok(p !== '/' && !internalRe.test(p));
    // the data-apps origin: its own host, its own port, only when config.apps.origin is set
    const apps = rules[1];
    assert.equal(expr(apps.host), '(urlParse .Values.config.apps.origin).hostname | quote');
    assert.equal(apps.http.paths[0].backend.service.port.name, 'apps');
    assert.match(condOf('name: apps'), /if \.Values\.config\.apps\.origin/);
  });

  test('a ServiceAccount and Roles let the cluster runner manage pods in workflow.cluster.namespace', () => {
    assert.equal(ofKind('ServiceAccount').length, 1);
    const roles = ofKind('Role');
    const task = roles.find((r) => expr(r.doc.metadata.namespace) === '.Values.config.workflow.cluster.namespace | quote');
    assert.ok(task, 'a Role in workflow.cluster.namespace');
    const rules = task.doc.rules.map((r: any) => ({ ...r, verbs: [...r.verbs].sort() }));
    assert.deepEqual(rules, [
      { apiGroups: [''], resources: ['pods'], verbs: ['create', 'delete', 'get', 'list', 'patch', 'watch'] },
      { apiGroups: [''], resources: ['pods/log'], verbs: ['get'] },
      { apiGroups: [''], resources: ['secrets'], verbs: ['create', 'delete', 'patch'] },
    ]);
    // what docs/runners.md says the cluster runner needs, granted
    const runners = readFileSync(path.join(ROOT, 'docs/runners.md'), 'utf8').replace(/\s+/g, ' ');
    const needs = /service account needs, in the task namespace: (.*?)\./.exec(runners);
    if (needs) {
      for (const m of needs[1].matchAll(/`([a-z/]+)` ([a-z/]+(?:\/[a-z]+)*)/g)) {
        const rule = rules.find((r: any) => r.resources.includes(m[1]));
        assert.ok(rule, `a rule for ${m[1]}`);
        for (const verb of m[2].split('/')) assert.ok(rule.verbs.includes(verb), `${m[1]} ${verb} (docs/runners.md)`);
      }
    }
    const binding = ofKind('RoleBinding').find((r) => expr(r.doc.metadata.namespace) === expr(task.doc.metadata.namespace));
    assert.ok(binding);
    assert.equal(binding.doc.roleRef.kind, 'Role');
    assert.equal(canon(binding.doc.roleRef.name), canon(task.doc.metadata.name));
    assert.equal(binding.doc.subjects[0].kind, 'ServiceAccount');
    assert.equal(expr(binding.doc.subjects[0].name), 'include "svc.serviceAccountName" .');
    assert.equal(expr(binding.doc.subjects[0].namespace), '.Release.Namespace | quote');
    assert.match(chart.raw.get(task.file)!, /^\{\{- if and \.Values\.rbac\.create \(eq \.Values\.config\.workflow\.container_runner "cluster"\) \}\}/);
    assert.equal(chart.values.config.workflow.cluster.namespace, 'svc-tasks');
  });

  test('the ServiceMonitor is optional and scrapes /metrics of API and worker pods', () => {
    assert.equal(chart.values.serviceMonitor.enabled, false);
    const sm = ofKind('ServiceMonitor');
    assert.equal(sm.length, 1);
    assert.equal(sm[0].doc.apiVersion, 'monitoring.coreos.com/v1');
    assert.deepEqual(sm[0].doc.spec.endpoints.map((e: any) => [e.port, e.path]), [['http', '/metrics']]);
    assert.match(chart.raw.get(sm[0].file)!, /^\{\{- if \.Values\.serviceMonitor\.enabled \}\}/);
    const metricsSvc = ofKind('Service').find((r) => component(r) === 'metrics');
    assert.ok(metricsSvc);
    assert.equal(metricsSvc.doc.spec.clusterIP, 'None');
    assert.equal(metricsSvc.doc.spec.selector['svc-metrics'], 'true');
    for (const c of ['api', 'worker']) assert.equal(deployment(c).doc.spec.template.metadata.labels['svc-metrics'], 'true');
  });

  test('every SVC_ variable the chart names is a configuration key', () => {
    const names = new Set(LEAVES.filter((l) => !l.some((s) => /^</.test(s))).map((l) => envName(l)));
    const all = [...chart.raw.values(), readFileSync(path.join(TEMPLATES, '_helpers.tpl'), 'utf8')].join('\n');
    const used = new Set([...all.matchAll(/\bSVC_[A-Z0-9_]+__[A-Z0-9_]+\b/g)].map((m) => m[0]));
    assert.ok(used.size >= 10);
    for (const n of used) assert.ok(names.has(n), `${n} is not a configuration key`);
    assert.ok(all.includes('SVC_ENGINE_TLS_INSECURE'), 'the chart refuses SVC_ENGINE_TLS_INSECURE in extraEnv');
    for (const { spec } of podSpecs()) {
      assert.ok(!spec.containers[0].env.some((e: any) => e.name === 'SVC_ENGINE_TLS_INSECURE'));
    }
  });
});

// ---------------------------------------------------------------------------------------------
// Dockerfile

interface Instr { op: string; flags: Record<string, string>; args: string; line: number }
interface Stage { name: string; from: string; instrs: Instr[] }

function parseDockerfile(text: string): { args: Record<string, string>; stages: Stage[] } {
  const logical: { text: string; line: number }[] = [];
  let buf = '';
  let start = 0;
  text.split('\n').forEach((raw, i) => {
    const l = raw.trimEnd();
    if (buf === '' && (l.trim() === '' || l.trimStart().startsWith('#'))) return;
    if (buf === '') start = i + 1;
    if (l.endsWith('\\')) { buf += `${l.slice(0, -1)} `; return; }
    logical.push({ text: (buf + l).trim(), line: start });
    buf = '';
  });
  const args: Record<string, string> = {};
  const stages: Stage[] = [];
  const subst = (s: string) => s.replace(/\$\{(\w+)\}|\$(\w+)/g, (_a, x, y) => args[x ?? y] ?? '');
  for (const { text: t, line } of logical) {
    const m = /^(\w+)\s+([\s\S]*)$/.exec(t);
    assert.ok(m, `Dockerfile line ${line}: ${t}`);
    const op = m[1].toUpperCase();
    let rest = m[2];
    const flags: Record<string, string> = {};
    if (['COPY', 'RUN', 'HEALTHCHECK'].includes(op)) {
      let f: RegExpExecArray | null;
      while ((f = /^--([\w-]+)=(\S+)\s+/.exec(rest))) { flags[f[1]] = f[2]; rest = rest.slice(f[0].length); }
    }
    if (op === 'ARG' && stages.length === 0) {
      const [k, v = ''] = rest.split('=');
      args[k.trim()] = v.trim();
      continue;
    }
    if (op === 'FROM') {
      const fm = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(rest);
      assert.ok(fm, `FROM ${rest}`);
      stages.push({ name: fm[2] ?? String(stages.length), from: subst(fm[1]), instrs: [] });
      continue;
    }
    assert.ok(stages.length > 0, `Dockerfile line ${line}: ${op} before FROM`);
    stages[stages.length - 1].instrs.push({ op, flags, args: rest, line });
  }
  return { args, stages };
}

/** .dockerignore with Docker's semantics: last matching pattern wins, a match on a parent
 * directory applies to everything under it, `!` re-includes. */
function dockerignore(text: string): (rel: string) => boolean {
  const rules = text.split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#')).map((l) => {
    const neg = l.startsWith('!');
    const pat = (neg ? l.slice(1) : l).replace(/^\/+|\/+$/g, '');
    let re = '';
    for (let i = 0; i < pat.length; i++) {
      const ch = pat[i];
      if (ch === '*' && pat[i + 1] === '*') { re += '.*'; i++; if (pat[i + 1] === '/') { re = re.slice(0, -2) + '(?:.*/)?'; i++; } }
      else if (ch === '*') re += '[^/]*';
      else if (ch === '?') re += '[^/]';
      else re += ch.replace(/[.+^${}()|[\]\\]/g, '\\$&');
    }
    return { neg, re: new RegExp(`^${re}$`) };
  });
  return (rel: string) => {
    const parts = rel.split('/');
    const candidates = parts.map((_p, i) => parts.slice(0, i + 1).join('/'));
    let ignored = false;
    for (const r of rules) if (candidates.some((c) => r.re.test(c))) ignored = !r.neg;
    return ignored;
  };
}

function run(cmd: string, args: string[], opts: { cwd: string; env: Record<string, string>; timeoutMs?: number; input?: string }): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`${cmd} ${args.join(' ')} timed out\n${stderr}`)); }, opts.timeoutMs ?? 30_000);
    child.on('error', (err) => { clearTimeout(timer); reject(err); });
    child.on('close', (code) => { clearTimeout(timer); resolve({ code, stdout, stderr }); });
  });
}

const DOCKERFILE = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
const DF = parseDockerfile(DOCKERFILE);
const IGNORED = dockerignore(readFileSync(path.join(ROOT, '.dockerignore'), 'utf8'));
const finalStage = DF.stages[DF.stages.length - 1];
const instr = (stage: Stage, op: string) => stage.instrs.filter((i) => i.op === op);
const execForm = (s: string): string[] => { const v = JSON.parse(s); assert.ok(Array.isArray(v)); return v; };

describe('Dockerfile, replayed outside a container', () => {
  test('multi-stage, slim Node 20 runtime, non-root, svc on PATH, HEALTHCHECK on /healthz, no secrets in the context', () => {
    assert.ok(DF.stages.length >= 2, 'multi-stage');
    for (const s of DF.stages) assert.equal(s.from, 'node:20-bookworm-slim', `stage ${s.name}`);
    const user = instr(finalStage, 'USER');
    assert.equal(user.length, 1);
    assert.match(user[0].args, /^[1-9]\d{3,}:[1-9]\d{3,}$/, 'a numeric non-root uid:gid');
    assert.deepEqual(execForm(instr(finalStage, 'ENTRYPOINT')[0].args), ['svc']);
    assert.deepEqual(execForm(instr(finalStage, 'CMD')[0].args), ['serve']);
    const hc = instr(finalStage, 'HEALTHCHECK')[0];
    assert.ok(hc && hc.args.startsWith('CMD '));
    assert.match(hc.args, /\/healthz/);
    assert.match(hc.args, /SVC_SERVER__PORT\|\|8080/);
    assert.ok(instr(finalStage, 'EXPOSE')[0].args.split(/\s+/).includes(String(chart.values.config.server.port)));
    assert.ok(instr(finalStage, 'EXPOSE')[0].args.split(/\s+/).includes(chart.values.config.apps.listen.split(':').pop()));
    assert.ok(instr(finalStage, 'ENV').some((e) => e.args === 'NODE_ENV=production'));
    // RUN steps are plain shell; the only mount is npm's cache, which stays out of the layers
    for (const s of DF.stages) {
      for (const r of instr(s, 'RUN')) {
        assert.ok(!r.args.startsWith('['), `RUN at line ${r.line} is a shell command`);
        for (const [k, v] of Object.entries(r.flags)) assert.ok(k === 'mount' && v.startsWith('type=cache,'), `RUN flag --${k}=${v}`);
        assert.doesNotMatch(r.args, /npm install\b/, 'npm ci installs exactly the lock (scripts/setup.sh)');
      }
    }
    assert.ok(instr(DF.stages.find((s) => s.name === 'deps')!, 'RUN').some((r) => r.args === 'npm ci --omit=dev --no-audit --no-fund'));
    // the context: what the Dockerfile copies is in it; secrets and build output are not
    for (const s of DF.stages) {
      for (const c of instr(s, 'COPY').filter((c) => !c.flags.from)) {
        for (const src of c.args.split(/\s+/).slice(0, -1)) {
          assert.ok(existsSync(path.join(ROOT, src)), `COPY ${src}: exists`);
          assert.ok(!IGNORED(src), `COPY ${src}: not excluded by .dockerignore`);
        }
      }
    }
    for (const p of ['svc.toml', 'src/svc.toml', '.env', 'node_modules', 'dist', '.git', 'test/cli.test.ts', 'charts/svc/values.yaml', 'npm-debug.log']) {
      assert.ok(IGNORED(p), `.dockerignore excludes ${p}`);
    }
    for (const p of ['src/cli/main.ts', 'bin/svc.js', 'migrations/0001_base.sql', 'package-lock.json', 'ui/index.html']) assert.ok(!IGNORED(p), `${p} is in the context`);
  });

  describe('replay', () => {
    let work: string;
    let db: TestDatabase;
    let s3: TestS3;
    const roots = new Map<string, string>();
    const replayed: string[] = [];

    before(async () => {
      work = await mkdtemp(path.join(tmpdir(), 'svc-image-'));
      [db, s3] = await Promise.all([createTestDatabase('svc_image'), startS3()]);
    });
    after(async () => {
      await Promise.all([db?.drop(), s3?.stop(), work && rm(work, { recursive: true, force: true })]);
    });

    /** A stage whose RUN steps are the very commands CI runs in the checkout (scripts/setup.sh)
     * is mapped onto the checkout instead of being run a second time. */
    function inCheckout(stage: Stage): boolean {
      if (process.env.SVC_IMAGE_REPLAY_ALL === '1' || stage === finalStage) return false;
      const setup = readFileSync(path.join(ROOT, 'scripts/setup.sh'), 'utf8').split('\n').map((l) => l.trim().replace(/^npm run --silent /, 'npm run '));
      const runs = instr(stage, 'RUN').map((r) => r.args.trim());
      return runs.length > 0 && runs.every((r) => setup.includes(r)) && existsSync(path.join(ROOT, 'dist/cli/main.js'));
    }

    test('replaying the stages yields a runtime tree without dev dependencies', { timeout: 240_000 }, async (t) => {
      const workdirs = new Map<string, string>();
      /** Where a path of a stage's filesystem is on this machine. */
      const hostPath = (stage: string, abs: string) => {
        const root = roots.get(stage)!;
        return root === ROOT ? path.join(ROOT, path.relative(workdirs.get(stage)!, abs)) : path.join(root, abs);
      };
      const stageRuns: Promise<void>[] = [];
      const done = new Map<string, Promise<void>>();
      for (const stage of DF.stages) {
        const checkout = inCheckout(stage);
        roots.set(stage.name, checkout ? ROOT : path.join(work, stage.name));
        const deps = instr(stage, 'COPY').map((c) => c.flags.from).filter(Boolean);
        const p = (async () => {
          await Promise.all(deps.map((d) => done.get(d)));
          let wd = '/';
          const env: Record<string, string> = {};
          for (const i of stage.instrs) {
            if (i.op === 'WORKDIR') {
              wd = path.posix.resolve(wd, i.args);
              workdirs.set(stage.name, wd);
              if (!checkout) await mkdir(hostPath(stage.name, wd), { recursive: true });
            } else if (i.op === 'ENV') {
              const [k, ...v] = i.args.split('=');
              env[k] = v.join('=');
            } else if (i.op === 'COPY') {
              const parts = i.args.split(/\s+/);
              const rawDest = parts.pop()!;
              const dest = path.posix.resolve(wd, rawDest);
              const intoDir = rawDest.endsWith('/') || parts.length > 1;
              for (const src of parts) {
                const from = i.flags.from ? hostPath(i.flags.from, path.posix.resolve('/', src)) : path.join(ROOT, src);
                // a directory's contents go to dest; a file goes into dest/ or becomes dest
                const finalTarget = !statSync(from).isDirectory() && intoDir
                  ? path.join(hostPath(stage.name, dest), path.basename(src))
                  : hostPath(stage.name, dest);
                if (checkout) {
                  assert.equal(finalTarget, path.join(ROOT, src), `stage ${stage.name}: COPY ${src} maps onto the checkout`);
                  continue;
                }
                await mkdir(path.dirname(finalTarget), { recursive: true });
                if (i.flags.from) {
                  // between stages: the same tree, hard-linked (a copy of node_modules is slow)
                  const r = await run('cp', ['-al', from, finalTarget], { cwd: work, env: cleanEnv() });
                  assert.equal(r.code, 0, r.stderr);
                } else {
                  await cp(from, finalTarget, {
                    recursive: true,
                    verbatimSymlinks: true,
                    filter: (s) => !IGNORED(path.relative(ROOT, s) || '.'),
                  });
                }
              }
            } else if (i.op === 'RUN') {
              if (checkout) continue; // CI ran these very commands in the checkout (scripts/setup.sh)
              if (stage === finalStage) { await emulateSystemSteps(stage.name, i.args, hostPath); continue; }
              const t0 = Date.now();
              const r = await run('sh', ['-c', i.args], {
                cwd: hostPath(stage.name, wd),
                env: cleanEnv({ ...env, npm_config_prefer_offline: 'true', npm_config_update_notifier: 'false' }),
                timeoutMs: 200_000,
              });
              assert.equal(r.code, 0, `stage ${stage.name}: RUN ${i.args}\n${r.stderr}`);
              replayed.push(`${stage.name}: ${i.args} (${Math.round((Date.now() - t0) / 1000)} s)`);
            }
          }
        })();
        done.set(stage.name, p);
        stageRuns.push(p);
      }
      await Promise.all(stageRuns);
      const app = path.join(roots.get(finalStage.name)!, workdirs.get(finalStage.name)!);
      assert.deepEqual(readdirSync(app).sort(), ['bin', 'dist', 'migrations', 'node_modules', 'package-lock.json', 'package.json', 'ui']);
      // nothing the lock marks dev-only (the devDependencies and what only they need)
      const lock = JSON.parse(readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { dev?: boolean }> };
      const devOnly = Object.entries(lock.packages).filter(([p, v]) => p.startsWith('node_modules/') && v.dev).map(([p]) => p);
      assert.ok(devOnly.length > 0);
      for (const p of devOnly) assert.ok(!existsSync(path.join(app, p)), `dev-only ${p} is not in the image`);
      for (const dev of Object.keys(PKG.devDependencies)) {
        if (!lock.packages[`node_modules/${dev}`]?.dev) continue; // also needed at run time by a dependency
        assert.ok(!existsSync(path.join(app, 'node_modules', dev)), `dev dependency ${dev} is not in the image`);
      }
      for (const dep of Object.keys(PKG.dependencies)) {
        assert.ok(existsSync(path.join(app, 'node_modules', dep, 'package.json')), `dependency ${dep} is in the image`);
      }
      assert.ok(existsSync(path.join(app, 'dist/cli/main.js')));
      assert.ok(replayed.some((r) => r.includes('npm ci --omit=dev')), replayed.join('\n'));
      t.diagnostic(`replayed: ${replayed.join('; ')}`);
    });

    async function emulateSystemSteps(stage: string, cmd: string, hostPath: (s: string, abs: string) => string) {
      const sh = await run('sh', ['-n', '-c', cmd], { cwd: work, env: cleanEnv() });
      assert.equal(sh.code, 0, `RUN ${cmd} is valid shell`);
      for (const step of cmd.split('&&').map((s) => s.trim())) {
        const w = step.split(/\s+/);
        if (w[0] === 'chmod' && w.length === 3) {
          await chmod(hostPath(stage, w[2]), parseInt(w[1], 8));
        } else if (w[0] === 'ln' && w[1] === '-s' && w.length === 4) {
          assert.ok(existsSync(hostPath(stage, w[2])), `ln -s target ${w[2]} exists`);
          await mkdir(path.dirname(hostPath(stage, w[3])), { recursive: true });
          await symlink(hostPath(stage, w[2]), hostPath(stage, w[3]));
        } else if (w[0] === 'groupadd' || w[0] === 'useradd') {
          // the image's user database: checked against USER instead of replayed
          const uid = /--(?:uid|gid)\s+(\d+)/.exec(step)?.[1];
          const [u, g] = instr(finalStage, 'USER')[0].args.split(':');
          assert.ok(uid === (w[0] === 'useradd' ? u : g), `${w[0]} creates the id USER names`);
        } else {
          assert.fail(`runtime stage step cannot be replayed outside a container: ${step}`);
        }
      }
    }

    /** The image's environment: `svc` resolved through PATH in the replayed root. */
    function image() {
      const root = roots.get(finalStage.name)!;
      const link = path.join(root, 'usr/local/bin', execForm(instr(finalStage, 'ENTRYPOINT')[0].args)[0]);
      assert.ok(lstatSync(link).isSymbolicLink(), 'svc on PATH is a link');
      accessSync(readlinkSync(link), fsc.X_OK);
      const imageEnv = Object.fromEntries(instr(finalStage, 'ENV').map((e) => e.args.split('=')));
      return { root, link, imageEnv };
    }

    /** The variables the chart gives the API pods, with values from a stand-in secret store. */
    function chartEnv(store: Record<string, string>): Record<string, string> {
      const out: Record<string, string> = {};
      for (const e of deployment('api').doc.spec.template.spec.containers[0].env) {
        const ref = e.valueFrom?.secretKeyRef;
        if (ref) {
          if (e.name in store) out[e.name] = store[e.name];
          else assert.ok(ref.optional === true || expr(ref.optional), `a value for the required ${e.name}`);
        } else if (typeof e.value === 'string' && !expr(e.value)) {
          out[e.name] = e.value;
        }
      }
      return out;
    }

    test('the runtime tree runs svc -V, openapi, migrate (hook command) and serve; HEALTHCHECK passes', { timeout: 120_000 }, async () => {
      const { root, link, imageEnv } = image();
      const wd = path.join(root, 'etc/svc'); // the chart's workingDir, holding svc.toml
      await mkdir(wd, { recursive: true });
      await writeFile(path.join(wd, 'svc.toml'), toToml(chart.values.config));
      const store = {
        SVC_SECURITY__SECRET_KEY: randomBytes(64).toString('base64'),
        SVC_SECRETS__MASTER_KEY: randomBytes(32).toString('base64'),
        SVC_DATABASE__URL: db.url,
        SVC_STORAGE__ACCESS_KEY: s3.accessKey,
        SVC_STORAGE__SECRET_KEY: s3.secretKey,
        SVC_REDIS__URL: 'redis://127.0.0.1:6379',
      };
      const port = await freePort();
      const env = cleanEnv({
        ...imageEnv,
        ...chartEnv(store),
        // this machine's stand-ins for the cluster's object store and listener
        SVC_STORAGE__ENDPOINT: s3.endpoint,
        SVC_STORAGE__PATH_STYLE: 'true',
        SVC_SERVER__HOST: '127.0.0.1',
        SVC_SERVER__PORT: String(port),
        PATH: `${path.dirname(process.execPath)}:${process.env.PATH ?? ''}`,
      });
      const svc = (args: string[], timeoutMs = 30_000) => run(link, args, { cwd: wd, env, timeoutMs });

      const v = await svc(['-V']);
      assert.equal(v.code, 0, v.stderr);
      assert.equal(v.stdout.trim(), PKG.version);
      const o = await svc(['openapi']);
      assert.equal(o.code, 0, o.stderr);
      assert.match(JSON.parse(o.stdout).openapi, /^3\.1\./);
      const m = await svc(['migrate']);
      assert.equal(m.code, 0, `svc migrate from the replayed image:\n${m.stderr}`);
      assert.match(m.stdout, /applied: 0001_base/);

      const hc = execForm(instr(finalStage, 'HEALTHCHECK')[0].args.replace(/^CMD\s+/, ''));
      const healthcheck = () => run(hc[0], hc.slice(1), { cwd: wd, env, timeoutMs: 10_000 });
      assert.equal((await healthcheck()).code, 1, 'HEALTHCHECK fails while nothing listens');

      const child = spawn(link, execForm(instr(finalStage, 'CMD')[0].args), { cwd: wd, env });
      let out = '';
      child.stdout.on('data', (d) => { out += d; });
      child.stderr.on('data', (d) => { out += d; });
      const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
      try {
        let ok = false;
        for (let i = 0; i < 100 && !ok && child.exitCode === null; i++) {
          ok = (await healthcheck()).code === 0;
          if (!ok) await new Promise((r) => setTimeout(r, 200));
        }
        assert.ok(ok, `HEALTHCHECK passes once svc serve listens:\n${out}`);
        const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
        assert.equal(ready.status, 200);
        // the browser UI's files are in the image (ui/, read relative to dist/)
        const page = await fetch(`http://127.0.0.1:${port}/`);
        assert.equal(page.status, 200, 'GET / serves the UI from the image');
        assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
      } finally {
        child.kill('SIGTERM');
      }
      assert.equal(await exited, 0, `svc serve stops cleanly on SIGTERM:\n${out}`);
    });
  });
});
