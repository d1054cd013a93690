// Local passwords are hashed with argon2id (OWASP parameters: 19 MiB, 2 passes).
import { hash, verify, Algorithm } from '@node-rs/argon2';
import { randomBytes } from 'node:crypto';

const OPTIONS = { algorithm: Algorithm.Argon2id, memoryCost: 19_456, timeCost: 2, parallelism: 1 };

export function hashPassword(password: string): Promise<string> {
  return hash(password, OPTIONS);
}

export async function verifyPassword(hashed: string, password: string): Promise<boolean> {
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
