// A webhook receiver on loopback for the automation tests: records each request's Svc-Event and
// JSON body, answers 200.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received<B> { event: string; body: B }
export interface Receiver<B> { url: string; received: Array<Received<B>>; close(): void }

export async function startReceiver<B = Record<string, unknown>>(): Promise<Receiver<B>> {
  const received: Array<Received<B>> = [];
  const server = createServer((req, res) => {
    let t = ''; req.setEncoding('utf8');
    req.on('data', (d) => { t += d; });
    req.on('end', () => { received.push({ event: String(req.headers['svc-event']), body: JSON.parse(t) as B }); res.end('ok'); });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, received, close: () => server.close() };
}
