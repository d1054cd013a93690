// The six JDBC drivers the `olap` kind (StarRocks) loads for its JDBC catalogs, pinned by URL,
// SHA-256 and class (docs/engines.md). `olap.jdbc_drivers.<dialect>.driver_url/driver_class`
// repoint one to an internal mirror (`https://`) or a file (`file:///`); a repointed driver is
// fetched and checked against the pinned checksum before any engine uses it (at provisioning,
// not at the engine's first query). The checksum never changes: a mirror must serve the same bytes.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { fileURLToPath } from 'node:url';

export interface PinnedDriver { dialect: string; url: string; sha256: string; driver_class: string }

const MAVEN = 'https://repo1.maven.org/maven2';
export const PINNED_DRIVERS: readonly PinnedDriver[] = [
  { dialect: 'mysql', url: `${MAVEN}/com/mysql/mysql-connector-j/9.0.0/mysql-connector-j-9.0.0.jar`, sha256: 'a221c4106b7fe68a45912cdbf8351f1b43ad3c53a43c3bc966181cc14f86fa30', driver_class: 'com.mysql.cj.jdbc.Driver' },
  { dialect: 'mariadb', url: `${MAVEN}/org/mariadb/jdbc/mariadb-java-client/2.7.6/mariadb-java-client-2.7.6.jar`, sha256: 'd3e448b1e8799ccc06c7ad2745aa03e72f19e13124b676b9656a54a833af7a93', driver_class: 'org.mariadb.jdbc.Driver' },
  { dialect: 'postgresql', url: `${MAVEN}/org/postgresql/postgresql/42.7.3/postgresql-42.7.3.jar`, sha256: 'a2644cbfba1baa145ff7e8c8ef582a6eed7a7ec4ca792f7f054122bdec756268', driver_class: 'org.postgresql.Driver' },
  { dialect: 'sqlserver', url: `${MAVEN}/com/microsoft/sqlserver/mssql-jdbc/12.8.0.jre11/mssql-jdbc-12.8.0.jre11.jar`, sha256: '8515160c7c0ba5d9c043dff22de8206acf6dbdb99659da9bfcfc6bd935f20704', driver_class: 'com.microsoft.sqlserver.jdbc.SQLServerDriver' },
  { dialect: 'oracle', url: `${MAVEN}/com/oracle/database/jdbc/ojdbc10/19.13.0.0.1/ojdbc10-19.13.0.0.1.jar`, sha256: '9979082359bd2e61058790683e8e9f82416a5ad673ff6e12ca522ba3131707ed', driver_class: 'oracle.jdbc.OracleDriver' },
  { dialect: 'db2', url: `${MAVEN}/com/ibm/db2/jcc/11.5.7.0/jcc-11.5.7.0.jar`, sha256: '1dbc8dc93441890f242be66983f1d1363fe6a80f8d1f0b7ca0e1063f42054bb0', driver_class: 'com.ibm.db2.jcc.DB2Driver' },
];

export interface EffectiveDriver extends PinnedDriver { repointed: boolean }

export class DriverError extends Error {}

/** The drivers as configured: the pinned ones with their repointed URL and class. */
export function effectiveDrivers(config: { olap: { jdbc_drivers: Record<string, { driver_url?: string; driver_class?: string }> } }): EffectiveDriver[] {
  const known = new Set(PINNED_DRIVERS.map((d) => d.dialect));
  for (const d of Object.keys(config.olap.jdbc_drivers)) {
    if (!known.has(d)) throw new DriverError(`olap.jdbc_drivers.${d}: no pinned driver of that dialect (pinned: ${[...known].join(', ')})`);
  }
  return PINNED_DRIVERS.map((p) => {
    const o = config.olap.jdbc_drivers[p.dialect];
    const url = o?.driver_url ?? p.url;
    return { ...p, url, driver_class: o?.driver_class ?? p.driver_class, repointed: url !== p.url };
  });
}

/** Most bytes a driver archive may have (the largest pinned one is a few MiB). */
export const MAX_DRIVER_BYTES = 256 * 1024 * 1024;

export interface FetchOptions { timeoutMs?: number; maxBytes?: number; fetch?: typeof fetch }

/** The SHA-256 (hex) of a driver at an `https://` or `file:///` URL, read as a stream, bounded. */
export async function driverChecksum(url: string, opts: FetchOptions = {}): Promise<string> {
  const max = opts.maxBytes ?? MAX_DRIVER_BYTES;
  const h = createHash('sha256');
  let n = 0;
  const add = (chunk: Uint8Array) => {
    n += chunk.byteLength;
    if (n > max) throw new DriverError(`${url}: larger than ${max} bytes`);
    h.update(chunk);
  };
  if (url.startsWith('file:///')) {
    for await (const c of createReadStream(fileURLToPath(url))) add(c as Buffer);
  } else if (url.startsWith('https://')) {
    const res = await (opts.fetch ?? fetch)(url, { signal: AbortSignal.timeout(opts.timeoutMs ?? 120_000), redirect: 'follow' });
    if (!res.ok || !res.body) throw new DriverError(`${url}: HTTP ${res.status}`);
    for await (const c of res.body as unknown as AsyncIterable<Uint8Array>) add(c);
  } else {
    throw new DriverError(`${url}: a driver is fetched from an https:// mirror or a file:/// path`);
  }
  return h.digest('hex');
}

/** Verified (url, sha256) pairs: a mirror is read once per process. Bounded: 64 entries. */
const verified = new Set<string>();

/** Fetches every repointed driver and checks it against its pinned checksum; throws DriverError naming the first mismatch. */
export async function verifyRepointedDrivers(drivers: EffectiveDriver[], opts: FetchOptions = {}): Promise<void> {
  for (const d of drivers) {
    if (!d.repointed) continue;
    const key = `${d.url} ${d.sha256}`;
    if (verified.has(key)) continue;
    let got: string;
    try {
      got = await driverChecksum(d.url, opts);
    } catch (err) {
      throw new DriverError(`olap.jdbc_drivers.${d.dialect}.driver_url: ${(err as Error).message}`);
    }
    if (got !== d.sha256) throw new DriverError(`olap.jdbc_drivers.${d.dialect}.driver_url ${d.url}: sha256 ${got} does not match the pinned ${d.sha256}`);
    if (verified.size >= 64) verified.clear();
    verified.add(key);
  }
}
