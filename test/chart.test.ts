// The Helm chart (charts/svc), checked on a machine that has no helm (the container image is
// test/image.test.ts; the template masker is test/helpers/chart-template.ts).
//
// Chart: every file is parsed as YAML with its template expressions masked (control lines
// dropped, `include` of the chart's own helpers expanded, other expressions replaced by
// placeholders whose text the checks can still read), so nothing is asserted about output the
// test cannot see. On top of that: the configuration under `config` in values.yaml is checked key
// by key against the zod schema, secrets are references only, and the manifests carry the
// probes, drain, hook, RBAC and routing the operator's guide (docs/operations.md) promises.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { configSchema, envName } from '../src/config/index.js';
import { scanBlocks, enclosing } from './helpers/chart-template.js';
import { ROOT, TEMPLATES, LEAVES, PKG, SECRET_KEYS, NEVER_IN_CONFIG, INTERNAL_PATHS, PUBLIC_PATHS, chart, expr, canon, ofKind, component, deployment, migrateJob, isLeaf, isSection, get, podSpecs, type Resource } from './helpers/chart.js';

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
