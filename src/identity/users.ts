// Users: local users have an email and a password; SSO users are found by `sub`.
import { sql } from 'kysely';
import type { Db, User } from '../db/index.js';
import { badRequest, conflict, isUniqueViolation, notFound } from '../errors.js';
import { hashPassword } from './passwords.js';

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function normalizeEmail(email: string): string {
  return email.trim();
}

export function assertEmail(email: string): void {
  if (!/^[^\s@]{1,64}@[^\s@]{1,255}$/.test(email)) throw badRequest(`invalid email: ${JSON.stringify(email)}`);
}

export async function findUserByEmail(db: Db, email: string): Promise<User | undefined> {
  return db.selectFrom('users').selectAll()
    .where(sql<string>`lower(email)`, '=', normalizeEmail(email).toLowerCase())
    .executeTakeFirst();
}

/** A user named in a path: id or email. */
export async function resolveUserRef(db: Db, ref: string): Promise<User> {
  const u = UUID_RE.test(ref)
    ? await db.selectFrom('users').selectAll().where('id', '=', ref).executeTakeFirst()
    : await findUserByEmail(db, ref);
  if (!u) throw notFound(`user does not exist: ${ref}`);
  return u;
}

/** Creates a local user; an existing email is a conflict. */
export async function createLocalUser(db: Db, input: { email: string; password: string; name?: string | null }): Promise<User> {
  const email = normalizeEmail(input.email);
  assertEmail(email);
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

export async function listUsers(db: Db) {
  return db.selectFrom('users')
    .select(['id', 'email', 'name', 'sub', 'is_local', 'created_at', 'last_login_at'])
    .orderBy('email').execute();
}

/** Public view of a user: never the password hash. */
export function publicUser(u: Pick<User, 'id' | 'email' | 'name' | 'sub' | 'is_local'>) {
  return { id: u.id, email: u.email, name: u.name, sub: u.sub, is_local: u.is_local };
}
