// Local passwords are hashed with argon2id (OWASP parameters: 19 MiB, 2 passes).
import { createRequire } from 'node:module';
import { randomBytes } from 'node:crypto';

// The native module loads on the first hash or check (a sign-in, `svc init`), not at every start.
const require = createRequire(import.meta.url);
let argon2: typeof import('@node-rs/argon2') | undefined;
const lib = () => (argon2 ??= require('@node-rs/argon2') as typeof import('@node-rs/argon2'));

const options = () => ({ algorithm: lib().Algorithm.Argon2id, memoryCost: 19_456, timeCost: 2, parallelism: 1 });

export function hashPassword(password: string): Promise<string> {
  return lib().hash(password, options());
}

export async function verifyPassword(hashed: string, password: string): Promise<boolean> {
  // loaded outside the try: a module that cannot load is the server's fault, not a wrong password
  const { verify } = lib();
  try {
    return await verify(hashed, password);
  } catch {
    return false;
  }
}

/** 144 random bits, URL-safe: printed once by `svc init`. */
export function generatePassword(): string {
  return randomBytes(18).toString('base64url');
}
