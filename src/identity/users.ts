// Users: local users have an email and a password; SSO users are found by `sub`.
import { sql } from 'kysely';
import type { Db, User } from '../db/index.js';
import { conflict, isUniqueViolation } from '../errors.js';
import { hashPassword } from './passwords.js';

export function normalizeEmail(email: string): string {
  return email.trim();
}

export async function findUserByEmail(db: Db, email: string): Promise<User | undefined> {
  return db.selectFrom('users').selectAll()
    .where(sql<string>`lower(email)`, '=', normalizeEmail(email).toLowerCase())
    .executeTakeFirst();
}

/** Creates a local user; an existing email is a conflict. */
export async function createLocalUser(db: Db, input: { email: string; password: string; name?: string | null }): Promise<User> {
  const email = normalizeEmail(input.email);
  if (await findUserByEmail(db, email)) throw conflict(`user already exists: ${email}`);
  const password_hash = await hashPassword(input.password);
  try {
    return await db.insertInto('users')
      .values({ email, name: input.name ?? null, password_hash, is_local: true, sub: null })
      .returningAll().executeTakeFirstOrThrow();
  } catch (err) {
    if (isUniqueViolation(err)) throw conflict(`user already exists: ${email}`);
    throw err;
  }
}
