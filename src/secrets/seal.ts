// Sealing of stored credentials (SPEC 2, 5.3, 8: secrets.master_key): AES-256-GCM under a key
// derived from the master key, a random 96-bit nonce per value, and additional authenticated data
// that binds the value to its place (table, row, column), so a sealed value copied to another row
// does not open. Format (versioned, ASCII, fits a text column):
//
//   v1.<key id: 16 hex>.<nonce: base64url>.<ciphertext || 16-byte tag: base64url>
//
// The key id is the first 8 bytes of SHA-256 of the derived key: it names the master key that
// sealed a value without revealing it, so a changed master key is reported as such, not as garbage.
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';
import { decodeBase64Strict } from '../config/index.js';
import { DomainError } from '../errors.js';

const VERSION = 'v1';
const HKDF_SALT = Buffer.from('svc/secrets/v1', 'utf8');
const HKDF_INFO = Buffer.from('svc sealed secrets: AES-256-GCM', 'utf8');

/** A sealed value cannot be opened: a changed or missing master key, or an altered value. */
export class UnsealError extends DomainError {
  constructor(message: string) {
    super('unavailable', `cannot unseal stored secret: ${message}`);
    this.name = 'UnsealError';
  }
}

export class Sealer {
  private readonly key: Buffer | null;
  /** Identifies the configured master key (null when none is configured). */
  readonly keyId: string | null;

  constructor(masterKeyBase64: string) {
    if (!masterKeyBase64) {
      this.key = null;
      this.keyId = null;
      return;
    }
    const ikm = decodeBase64Strict(masterKeyBase64);
    // The startup check refuses such keys; a direct caller gets the same message.
    if (!ikm || ikm.length < 32) throw new DomainError('unavailable', 'secrets.master_key must be base64 of >=32 bytes');
    this.key = Buffer.from(hkdfSync('sha256', ikm, HKDF_SALT, HKDF_INFO, 32));
    this.keyId = createHash('sha256').update(this.key).digest().subarray(0, 8).toString('hex');
  }

  get enabled(): boolean { return this.key !== null; }

  /** Seals `plaintext` for the place named by `context` (e.g. `connections:<ws id>:<name>:secret`). */
  seal(plaintext: string | Buffer, context: string): string {
    if (!this.key || !this.keyId) throw new DomainError('bad_request', 'secrets.master_key is not set: cannot seal a secret');
    const nonce = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, nonce);
    cipher.setAAD(aad(this.keyId, context));
    const body = Buffer.concat([cipher.update(typeof plaintext === 'string' ? Buffer.from(plaintext, 'utf8') : plaintext), cipher.final(), cipher.getAuthTag()]);
    return [VERSION, this.keyId, nonce.toString('base64url'), body.toString('base64url')].join('.');
  }

  /** Opens a value sealed by `seal` for the same context; UnsealError (503) when it cannot. */
  unseal(sealed: string, context: string): Buffer {
    const parts = sealed.split('.');
    if (parts.length !== 4 || parts[0] !== VERSION || !/^[0-9a-f]{16}$/.test(parts[1])) {
      throw new UnsealError('unknown format (expected v1.<key id>.<nonce>.<ciphertext>)');
    }
    const [, kid, nonceB64, bodyB64] = parts;
    if (!this.key || !this.keyId) throw new UnsealError(`it was sealed with master key ${kid} and secrets.master_key is not set`);
    if (kid !== this.keyId) throw new UnsealError(`it was sealed with master key ${kid}, the configured key is ${this.keyId}`);
    const nonce = Buffer.from(nonceB64, 'base64url');
    const body = Buffer.from(bodyB64, 'base64url');
    if (nonce.length !== 12 || body.length < 16) throw new UnsealError('the sealed value is truncated');
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, nonce);
      decipher.setAAD(aad(kid, context));
      decipher.setAuthTag(body.subarray(body.length - 16));
      return Buffer.concat([decipher.update(body.subarray(0, body.length - 16)), decipher.final()]);
    } catch {
      throw new UnsealError('authentication failed: the value was altered or belongs to another record');
    }
  }

  /** The key id of a sealed value, or null when the value is not in the sealed format. */
  static keyIdOf(sealed: string): string | null {
    const m = /^v1\.([0-9a-f]{16})\./.exec(sealed);
    return m ? m[1] : null;
  }
}

function aad(kid: string, context: string): Buffer {
  return Buffer.from(`${VERSION}.${kid}.${context}`, 'utf8');
}
