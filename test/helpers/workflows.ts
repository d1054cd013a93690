// Helpers for workflow tests: save a flow, run it, wait for it to end.
import assert from 'node:assert/strict';
import type { Browser, TestApp } from './app.js';

export async function saveFlow(b: Browser, ws: string, yaml: string): Promise<void> {
  const res = await b.request('POST', `/workflows/v1/${ws}/flows`, yaml, { headers: { 'content-type': 'application/x-yaml' } });
  assert.ok(res.statusCode === 201 || res.statusCode === 200, `save flow: ${res.statusCode} ${res.body}`);
}

export async function run(b: Browser, ws: string, ns: string, flow: string, inputs: Record<string, unknown> = {}): Promise<string> {
  const res = await b.post(`/workflows/v1/${ws}/executions/${ns}/${flow}`, { inputs });
  assert.equal(res.statusCode, 201, res.body);
  return res.json().id as string;
}

export async function waitEnded(t: TestApp, b: Browser, ws: string, id: string, timeoutMs = 30_000): Promise<Record<string, any>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await b.get(`/workflows/v1/${ws}/executions/${id}`);
    assert.equal(res.statusCode, 200, res.body);
    const e = res.json();
    if (e.ended_at) return e;
    if (Date.now() > deadline) assert.fail(`execution ${id} did not end: ${JSON.stringify(e)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function logsOf(b: Browser, ws: string, id: string): Promise<Array<{ level: string; line: string; attempt: number }>> {
  const res = await b.get(`/workflows/v1/${ws}/executions/${id}/logs`);
  assert.equal(res.statusCode, 200, res.body);
  return res.body.split('\n').filter(Boolean).map((l) => JSON.parse(l));
}
