// A FAKE Kubernetes API server for the engines' cluster provisioner (no Kubernetes runs on these
// machines): an object store for Secrets, ConfigMaps, Services (core/v1) and Deployments
// (apps/v1) in namespaces, with the API server's answers the provisioner relies on (201, 409
// AlreadyExists, 404 NotFound, merge patches, label selectors on lists) and a few of its
// validations (names, label values, kind and apiVersion of the body, namespace of the body,
// ConfigMap keys, a Deployment selector that matches its template). Every request is recorded.
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { KubeConfig } from '@kubernetes/client-node';
import { readBody } from './fake-k8s.js';

export interface RecordedCall { method: string; path: string; contentType: string; body: any }

const KINDS: Record<string, { kind: string; apiVersion: string }> = {
  secrets: { kind: 'Secret', apiVersion: 'v1' }, configmaps: { kind: 'ConfigMap', apiVersion: 'v1' },
  services: { kind: 'Service', apiVersion: 'v1' }, deployments: { kind: 'Deployment', apiVersion: 'apps/v1' },
};
const DNS1123 = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$/;
const CONFIG_KEY = /^[-._a-zA-Z0-9]+$/;

function mergePatch(target: any, patch: any): void {
  for (const [k, v] of Object.entries(patch ?? {})) {
    if (v === null) delete target[k];
    else if (typeof v === 'object' && !Array.isArray(v) && typeof target[k] === 'object' && target[k] !== null) mergePatch(target[k], v);
    else target[k] = structuredClone(v);
  }
}

export class FakeKubernetesObjects {
  readonly calls: RecordedCall[] = [];
  /** `<resource>/<namespace>/<name>` -> object */
  readonly objects = new Map<string, any>();
  private server = http.createServer((req, res) => void this.handle(req, res));
  private version = 1;
  port = 0;

  async start(): Promise<this> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.port = (this.server.address() as { port: number }).port;
    return this;
  }

  kubeConfig(): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 't', server: `http://127.0.0.1:${this.port}`, skipTLSVerify: true }],
      users: [{ name: 'u', token: 't' }], contexts: [{ name: 'c', cluster: 't', user: 'u' }], currentContext: 'c',
    });
    return kc;
  }

  get(resource: string, ns: string, name: string): any { return this.objects.get(`${resource}/${ns}/${name}`); }
  list(resource: string): any[] { return [...this.objects.entries()].filter(([k]) => k.startsWith(`${resource}/`)).map(([, v]) => v); }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  private send(res: http.ServerResponse, code: number, body: unknown): void {
    res.writeHead(code, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  }

  private fail(res: http.ServerResponse, code: number, reason: string, message: string): void {
    this.send(res, code, { kind: 'Status', apiVersion: 'v1', status: 'Failure', message, reason, code });
  }

  private invalid(resource: string, ns: string, b: any): string | null {
    const want = KINDS[resource]!;
    if (b?.kind !== want.kind || b?.apiVersion !== want.apiVersion) return `expected ${want.apiVersion} ${want.kind}, got ${b?.apiVersion} ${b?.kind}`;
    if (b.metadata?.namespace && b.metadata.namespace !== ns) return 'the namespace of the object does not match the namespace on the request';
    if (!DNS1123.test(b.metadata?.name ?? '')) return `metadata.name: Invalid value: ${JSON.stringify(b.metadata?.name)}`;
    for (const [k, v] of Object.entries(b.metadata?.labels ?? {})) if (!LABEL_VALUE.test(String(v))) return `metadata.labels: Invalid value: ${k}=${v}`;
    if (resource === 'configmaps') for (const k of Object.keys(b.data ?? {})) if (!CONFIG_KEY.test(k)) return `data[${k}]: Invalid value: a valid config key must consist of alphanumeric characters, '-', '_' or '.'`;
    if (resource === 'deployments') {
      const sel = b.spec?.selector?.matchLabels ?? {};
      const labels = b.spec?.template?.metadata?.labels ?? {};
      if (!Object.keys(sel).length || Object.entries(sel).some(([k, v]) => labels[k] !== v)) return 'spec.template.metadata.labels: Invalid value: `selector` does not match template `labels`';
    }
    return null;
  }

  private stored(resource: string, ns: string, b: any, old?: any): any {
    const obj = structuredClone(b);
    obj.metadata = { ...obj.metadata, namespace: ns, uid: old?.metadata?.uid ?? randomUUID(), resourceVersion: String(++this.version) };
    if (resource === 'secrets' && obj.stringData) {
      obj.data = { ...obj.data, ...Object.fromEntries(Object.entries(obj.stringData).map(([k, v]) => [k, Buffer.from(String(v)).toString('base64')])) };
      delete obj.stringData;
    }
    return obj;
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://x');
    const body = await readBody(req);
    const method = req.method ?? 'GET';
    this.calls.push({ method, path: url.pathname, contentType: String(req.headers['content-type'] ?? ''), body });
    if (req.headers.authorization !== 'Bearer t') return this.fail(res, 401, 'Unauthorized', 'Unauthorized');
    const m = /^\/(?:api\/v1|apis\/apps\/v1)\/namespaces\/([^/]+)\/(secrets|configmaps|services|deployments)(?:\/([^/]+))?$/.exec(url.pathname);
    const group = url.pathname.startsWith('/apis/apps/v1') ? 'apps/v1' : 'v1';
    if (!m || KINDS[m[2]!]!.apiVersion !== group) return this.fail(res, 404, 'NotFound', `no route ${method} ${url.pathname}`);
    const [, ns, resource, name] = m as unknown as [string, string, string, string | undefined];
    const key = (n: string) => `${resource}/${ns}/${n}`;
    if (!name) {
      if (method === 'GET') {
        const sel = (url.searchParams.get('labelSelector') ?? '').split(',').filter(Boolean).map((s) => s.split('='));
        const items = this.list(resource).filter((o) => o.metadata.namespace === ns && sel.every(([k, v]) => o.metadata.labels?.[k!] === v));
        return this.send(res, 200, { kind: `${KINDS[resource]!.kind}List`, apiVersion: group, metadata: {}, items });
      }
      if (method !== 'POST') return this.fail(res, 405, 'MethodNotAllowed', method);
      const bad = this.invalid(resource, ns, body);
      if (bad) return this.fail(res, 422, 'Invalid', bad);
      if (this.objects.has(key(body.metadata.name))) return this.fail(res, 409, 'AlreadyExists', `${resource} "${body.metadata.name}" already exists`);
      const obj = this.stored(resource, ns, body);
      this.objects.set(key(body.metadata.name), obj);
      return this.send(res, 201, obj);
    }
    const cur = this.objects.get(key(name));
    if (!cur) return this.fail(res, 404, 'NotFound', `${resource} "${name}" not found`);
    if (method === 'GET') return this.send(res, 200, cur);
    if (method === 'DELETE') { this.objects.delete(key(name)); return this.send(res, 200, { kind: 'Status', status: 'Success' }); }
    if (method === 'PUT') {
      const bad = this.invalid(resource, ns, body);
      if (bad) return this.fail(res, 422, 'Invalid', bad);
      if (body.metadata.name !== name) return this.fail(res, 400, 'BadRequest', 'the name of the object does not match the name on the URL');
      if (body.metadata.resourceVersion && body.metadata.resourceVersion !== cur.metadata.resourceVersion) return this.fail(res, 409, 'Conflict', 'the object has been modified');
      const obj = this.stored(resource, ns, body, cur);
      this.objects.set(key(name), obj);
      return this.send(res, 200, obj);
    }
    if (method === 'PATCH') {
      if (!String(req.headers['content-type']).startsWith('application/merge-patch+json')) return this.fail(res, 415, 'UnsupportedMediaType', 'merge patches only');
      mergePatch(cur, body);
      cur.metadata.resourceVersion = String(++this.version);
      return this.send(res, 200, cur);
    }
    return this.fail(res, 405, 'MethodNotAllowed', method);
  }
}

export async function startFakeKubernetesObjects(): Promise<FakeKubernetesObjects> {
  return new FakeKubernetesObjects().start();
}
