// The browser tests and the container tests run side by side: a container started meanwhile must
// not fail the browser's requests. Chromium takes a host address change for a network change and
// fails every request still waiting for a connection (net::ERR_NETWORK_CHANGED); netavark added
// and deleted addresses with each container (its network's bridge, the veth's link-local one),
// and the console showed "The server cannot be reached" after a sign-in (test/ui.test.ts).
// scripts/podman.sh runs the engine in a network namespace of its own; with the engine in the
// machine's, 4 or 5 of these 10 requests failed on every run.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Docker from 'dockerode';
import { launchBrowser, type TestBrowser } from './helpers/browser.js';
import { ensurePodman, TEST_IMAGE } from './helpers/podman.js';

/** Chromium opens at most 6 connections to a host: the other requests wait for one. */
const REQUESTS = 10;
const PER_HOST = 6;

describe('a container started while the browser waits for answers', () => {
  let docker: Docker;
  let browser: TestBrowser;
  let server: http.Server;
  // Answers are held until the container has come and gone; `full` resolves when the browser
  // has every connection it may open busy (the other requests wait for one).
  const held: http.ServerResponse[] = [];
  let holding = true;
  let full: () => void;
  const busy = new Promise<void>((resolve) => { full = resolve; });

  before(async () => {
    docker = new Docker({ socketPath: (await ensurePodman()).slice('unix://'.length) });
    browser = await launchBrowser();
    server = http.createServer((req, res) => {
      if (req.url === '/' || !holding) { res.setHeader('content-type', 'text/html'); res.end('<!doctype html><title>t</title>'); return; }
      held.push(res);
      if (held.length === PER_HOST) full();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });
  after(async () => {
    for (const res of held) res.end();
    await browser?.close();
    server?.close();
  });

  test('a container on a network of its own: every request waiting for a connection is answered', async () => {
    const { page } = await browser.newPage();
    await page.goto(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    const results = page.evaluate((n) => Promise.all(Array.from({ length: n }, (_, i) => fetch(`/held/${i}`).then((r) => String(r.status), (e: Error) => `${e.name}: ${e.message}`))), REQUESTS);
    await busy;
    // A network of its own, so its bridge comes and goes with this container whatever else runs;
    // the container lives past its veth's duplicate address detection (about a second), whose end
    // adds the veth's link-local address.
    const network = `svc-netcheck-${process.pid}`;
    await docker.createNetwork({ Name: network });
    const c = await docker.createContainer({ Image: TEST_IMAGE, Cmd: ['sleep', '3'], HostConfig: { NetworkMode: network } });
    try {
      await c.start();
      await c.wait();
    } finally {
      await c.remove({ force: true });
      await docker.getNetwork(network).remove();
    }
    // Only now the answers: the waiting requests go out as connections come free.
    holding = false;
    for (const res of held.splice(0)) res.end('ok');
    try {
      assert.deepEqual(await results, Array(REQUESTS).fill('200'));
    } finally {
      await page.close();
    }
  });
});
