// SHA-256 of a short string, as a Buffer. Session tokens and client secrets are hashed on every
// request that carries one; node's one-shot crypto.hash (node 20.12 and later) does it in about
// a third of the time of createHash().update().digest(), which builds a Hash object each time.
// Older nodes (package.json allows 20.11) take the createHash path.
import crypto from 'node:crypto';

type OneShot = (algorithm: string, data: string, outputEncoding: 'buffer') => Buffer;
const oneShot = (crypto as unknown as { hash?: OneShot }).hash;

export const sha256: (data: string) => Buffer = typeof oneShot === 'function'
  ? (data) => oneShot('sha256', data, 'buffer')
  : (data) => crypto.createHash('sha256').update(data, 'utf8').digest();
