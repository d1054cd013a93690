// The SSRF gate of alert and report webhooks (SPEC 5.3.7, issue 16 point 5): every non-public
// range refused with the reason, on the address actually connected to, on every redirect, unless
// the host or a CIDR is listed in automation.webhook_allow_hosts. Real HTTP servers on loopback;
// names resolved by an injected resolver where a test needs a name to answer a given address.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { validAllowEntry } from '../src/config/sections/automation.js';
import { loadConfig } from '../src/config/index.js';
import { nonPublicReason, parseAllowList, addressAllowed, hostAllowed } from '../src/automation/addresses.js';
import { createGate, checkTarget, send, TargetRefused, MAX_REDIRECTS, type Resolver } from '../src/automation/outbound.js';

describe('address rules', () => {
  const refused: Array<[string, RegExp]> = [
    ['127.0.0.1', /loopback/], ['127.255.255.254', /loopback/], ['::1', /loopback/],
    ['10.1.2.3', /private/], ['172.16.0.1', /private/], ['172.31.255.255', /private/], ['192.168.1.1', /private/],
    ['169.254.169.254', /link-local.*metadata/], ['fe80::1', /link-local/],
    ['100.64.0.1', /carrier-grade NAT/], ['100.127.255.255', /carrier-grade NAT/],
    ['fc00::1', /unique-local/], ['fd12:3456::1', /unique-local/],
    ['::ffff:127.0.0.1', /IPv4-mapped.*loopback/], ['::ffff:7f00:1', /IPv4-mapped.*loopback/],
    ['::ffff:169.254.169.254', /IPv4-mapped.*link-local/], ['::ffff:10.0.0.1', /IPv4-mapped.*private/],
    ['64:ff9b::a9fe:a9fe', /NAT64.*link-local/], ['2002:7f00:1::', /6to4.*loopback/],
    ['0.0.0.0', /unspecified/], ['::', /unspecified/], ['0.1.2.3', /unspecified/],
    ['224.0.0.1', /multicast/], ['239.255.255.250', /multicast/], ['ff02::1', /multicast/],
    ['255.255.255.255', /broadcast/], ['240.0.0.1', /reserved/],
    ['192.0.2.5', /documentation/], ['2001:db8::1', /documentation/], ['198.18.0.1', /benchmarking/],
    ['fec0::1', /site-local/], ['2001::1', /IETF/], ['::127.0.0.1', /IPv4-compatible/],
    ['fe80::1%eth0', /link-local/], ['[::1]', /loopback/],
  ];
  for (const [ip, why] of refused) {
    test(`${ip} is refused`, () => assert.match(nonPublicReason(ip) ?? 'public', why));
  }
  for (const ip of ['8.8.8.8', '1.1.1.1', '172.32.0.1', '100.128.0.1', '169.253.1.1', '2606:4700::1111', '::ffff:8.8.8.8', '64:ff9b::808:808']) {
    test(`${ip} is public`, () => assert.equal(nonPublicReason(ip), null));
  }
  test('no address at all is refused', () => assert.equal(nonPublicReason('example.com'), 'not an IP address'));

  test('allow list: host names, addresses and CIDRs (IPv4-mapped counts as IPv4)', () => {
    const list = parseAllowList(['Hooks.Internal.', '10.0.0.0/8', 'fd00::/8', '192.168.1.7', '::ffff:172.16.0.0/108']);
    assert.ok(hostAllowed(list, 'hooks.internal'));
    assert.ok(!hostAllowed(list, 'other.internal'));
    assert.ok(addressAllowed(list, '10.200.0.1'));
    assert.ok(addressAllowed(list, '::ffff:10.0.0.9'));
    assert.ok(addressAllowed(list, 'fd00::5'));
    assert.ok(addressAllowed(list, '192.168.1.7'));
    assert.ok(!addressAllowed(list, '192.168.1.8'));
    assert.ok(addressAllowed(list, '172.16.3.4'));
    assert.ok(!addressAllowed(list, '127.0.0.1'));
  });
  test('an unusable allow-list entry stops the configuration with the key named', () => {
    for (const bad of ['10.0.0.0/33', 'http://x/', 'example.com/8', '']) assert.equal(validAllowEntry(bad), false, bad);
    for (const good of ['hooks.example.com', 'localhost', '2001:db8::/32', '10.0.0.0/8', '::1', '[::1]']) assert.equal(validAllowEntry(good), true, good);
    assert.throws(() => parseAllowList(['http://x/']), /neither a host name nor a CIDR/);
    assert.throws(() => loadConfig({ env: { SVC_AUTOMATION__WEBHOOK_ALLOW_HOSTS: '["10.0.0.0/40"]' }, cwd: '/nonexistent' }),
      /automation\.webhook_allow_hosts.*must be a host name, an IP address or a CIDR/);
  });
});

interface Receiver { url: string; hits: string[]; close(): Promise<void> }
async function receiver(handler?: (req: http.IncomingMessage, res: http.ServerResponse) => void): Promise<Receiver> {
  const hits: string[] = [];
  const srv = http.createServer((req, res) => {
    hits.push(`${req.method} ${req.url}`);
    req.resume();
    req.on('end', () => (handler ? handler(req, res) : res.end('ok')));
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as AddressInfo).port;
  return { url: `http://127.0.0.1:${port}`, hits, close: () => new Promise((r) => { srv.closeAllConnections(); srv.close(() => r()); }) };
}

describe('the gate on real connections', () => {
  let target: Receiver;
  before(async () => { target = await receiver(); });
  after(async () => { await target.close(); });
  const port = () => new URL(target.url).port;
  /** A name server in a box: these names answer these addresses, nothing else resolves. */
  const names = (map: Record<string, string>): Resolver => async (host) => {
    const a = map[host];
    if (!a) throw Object.assign(new Error('ENOTFOUND'), { code: 'ENOTFOUND' });
    return [{ address: a, family: a.includes(':') ? 6 : 4 }];
  };

  test('a loopback IP literal is refused on save and on send, and nothing reaches it', async () => {
    const gate = createGate([]);
    await assert.rejects(checkTarget(gate, `${target.url}/hook`), (e: Error) => e instanceof TargetRefused && /127\.0\.0\.1 is a loopback address; list the host in automation\.webhook_allow_hosts/.test(e.message));
    await assert.rejects(send(gate, { url: `${target.url}/hook`, method: 'POST', body: '{}', timeoutMs: 5000 }), TargetRefused);
    await assert.rejects(send(gate, { url: `http://[::ffff:127.0.0.1]:${port()}/hook`, method: 'POST', body: '{}', timeoutMs: 5000 }), /IPv4-mapped IPv6 address carrying a loopback/);
    assert.deepEqual(target.hits, []);
  });

  test('a DNS name resolving to 127.0.0.1 is refused at connect time (localhost through the system resolver too)', async () => {
    const gate = createGate([], names({ 'innocent.example': '127.0.0.1' }));
    await assert.rejects(checkTarget(gate, `http://innocent.example:${port()}/`), /innocent\.example resolves to 127\.0\.0\.1, a loopback address/);
    await assert.rejects(send(gate, { url: `http://innocent.example:${port()}/`, method: 'POST', body: '{}', timeoutMs: 5000 }), /innocent\.example resolves to 127\.0\.0\.1/);
    await assert.rejects(send(createGate([]), { url: `http://localhost:${port()}/`, method: 'GET', timeoutMs: 5000 }), /localhost resolves to (127\.0\.0\.1|::1), a loopback address/);
    assert.deepEqual(target.hits, []);
  });

  test('DNS rebinding: a name public at save time and loopback at connect time is refused when sending', async () => {
    let calls = 0;
    const rebinding: Resolver = async () => (calls++ === 0 ? [{ address: '93.184.216.34', family: 4 }] : [{ address: '127.0.0.1', family: 4 }]);
    const gate = createGate([], rebinding);
    await checkTarget(gate, `http://rebind.example:${port()}/`); // passes: public at save time
    await assert.rejects(send(gate, { url: `http://rebind.example:${port()}/`, method: 'POST', body: '{}', timeoutMs: 5000 }), /rebind\.example resolves to 127\.0\.0\.1/);
    assert.deepEqual(target.hits, []);
  });

  test('a name answering one public and one private address is refused', async () => {
    const both: Resolver = async () => [{ address: '93.184.216.34', family: 4 }, { address: '169.254.169.254', family: 4 }];
    await assert.rejects(checkTarget(createGate([], both), 'http://mixed.example/'), /169\.254\.169\.254, a link-local address/);
  });

  test('allowed by host name, by address and by CIDR; the allowed request arrives', async () => {
    const byName = createGate(['hooks.internal'], names({ 'hooks.internal': '127.0.0.1' }));
    const r1 = await send(byName, { url: `http://hooks.internal:${port()}/a`, method: 'POST', body: '{}', timeoutMs: 5000 });
    assert.equal(r1.status, 200);
    const byCidr = createGate(['127.0.0.0/8']);
    await checkTarget(byCidr, `${target.url}/b`);
    assert.equal((await send(byCidr, { url: `${target.url}/b`, method: 'POST', body: '{}', timeoutMs: 5000 })).status, 200);
    // The name is not listed and its address is not in the range: refused.
    const other = createGate(['10.0.0.0/8'], names({ 'hooks.internal': '127.0.0.1' }));
    await assert.rejects(send(other, { url: `http://hooks.internal:${port()}/c`, method: 'POST', body: '{}', timeoutMs: 5000 }), TargetRefused);
    assert.deepEqual(target.hits, ['POST /a', 'POST /b']);
  });

  test('a redirect to a private address is refused (the first hop allowed, the second not)', async () => {
    target.hits.length = 0;
    const redirector = await receiver((_req, res) => { res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' }); res.end(); });
    const toLoopback = await receiver((_req, res) => { res.writeHead(307, { location: `http://localhost:${port()}/stolen` }); res.end(); });
    try {
      const gate = createGate([new URL(redirector.url).hostname + '/32']);
      await assert.rejects(send(gate, { url: `${redirector.url}/start`, method: 'POST', body: '{}', timeoutMs: 5000 }),
        /refused after a redirect to http:\/\/169\.254\.169\.254: 169\.254\.169\.254 is a link-local address/);
      assert.deepEqual(redirector.hits, ['POST /start']);
      // 127.0.0.1 is allowed by address; the redirect names localhost, resolved by the gate again.
      const gate2 = createGate(['127.0.0.1'], names({ localhost: '::1' }));
      await assert.rejects(send(gate2, { url: `${toLoopback.url}/start`, method: 'POST', body: '{}', timeoutMs: 5000 }), /localhost resolves to ::1, a loopback address/);
      assert.deepEqual(target.hits, []);
    } finally {
      await redirector.close();
      await toLoopback.close();
    }
  });

  test('redirects within the allow list are followed, a bounded number of times', async () => {
    const endless = await receiver((req, res) => { res.writeHead(307, { location: `${req.url}x` }); res.end(); });
    const short = await receiver((req, res) => {
      if (req.url === '/start') res.writeHead(303, { location: '/mid' });
      else if (req.url === '/mid') res.writeHead(307, { location: '/final' });
      else return res.end('arrived');
      res.end();
    });
    try {
      const gate = createGate(['127.0.0.1']);
      await assert.rejects(send(gate, { url: `${endless.url}/start`, method: 'POST', body: '{}', timeoutMs: 5000 }), new RegExp(`more than ${MAX_REDIRECTS} redirects`));
      assert.equal(endless.hits.length, MAX_REDIRECTS + 1);
      const ok = await send(gate, { url: `${short.url}/start`, method: 'POST', body: '{}', timeoutMs: 5000 });
      assert.equal(ok.body, 'arrived');
      assert.equal(ok.redirects, 2);
      // The 303 turned the POST into a GET, which the 307 kept.
      assert.deepEqual(short.hits, ['POST /start', 'GET /mid', 'GET /final']);
    } finally {
      await endless.close();
      await short.close();
    }
  });

  test('unusable URLs are refused with the reason', async () => {
    const gate = createGate([]);
    await assert.rejects(checkTarget(gate, 'ftp://example.com/x'), /scheme must be http or https, not ftp/);
    await assert.rejects(checkTarget(gate, 'http://user:pw@example.com/'), /must not carry a user name or password/);
    await assert.rejects(checkTarget(gate, 'not a url'), /is not an absolute URL/);
    await assert.rejects(checkTarget(gate, `http://example.com/${'a'.repeat(3000)}`), /longer than 2048/);
    // Decimal and hex spellings of 127.0.0.1 are the same address to the URL parser and the gate.
    await assert.rejects(checkTarget(gate, 'http://2130706433/'), /127\.0\.0\.1 is a loopback address/);
    await assert.rejects(checkTarget(gate, 'http://0x7f.1/'), /127\.0\.0\.1 is a loopback address/);
    await assert.rejects(checkTarget(createGate([], names({}), ), 'http://nowhere.example/'), /nowhere\.example does not resolve/);
  });
});
