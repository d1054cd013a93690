import net from 'node:net';

/**
 * `n` distinct free ports: each is held until all are taken, so two picks cannot return the same
 * port (freePort() twice can: CI once had the API and the apps listener both given 43747).
 */
export async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(Array.from({ length: n }, () => new Promise<net.Server>((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => resolve(srv));
  })));
  const ports = servers.map((srv) => (srv.address() as net.AddressInfo).port);
  await Promise.all(servers.map((srv) => new Promise((r) => srv.close(r))));
  return ports;
}

export async function freePort(): Promise<number> {
  return (await freePorts(1))[0];
}

/**
 * A TCP proxy in front of PostgreSQL (or any TCP port or unix socket): closing it makes the
 * database unreachable for the service under test (connections refused, open ones reset)
 * without stopping the shared server.
 */
export async function startTcpProxy(target: { host: string; port: number } | { path: string }): Promise<{ port: number; stop(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    // a TCP port or a unix socket (e.g. the container engine's, reached as tcp:// or http://)
    const upstream = net.connect(target);
    sockets.add(client); sockets.add(upstream);
    client.pipe(upstream).pipe(client);
    const end = () => { client.destroy(); upstream.destroy(); sockets.delete(client); sockets.delete(upstream); };
    client.on('error', end); upstream.on('error', end); client.on('close', end); upstream.on('close', end);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    stop: () => new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    }),
  };
}
