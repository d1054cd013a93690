// A connection URL for messages, apart from the pool so that the CLI's error path (loaded by
// every command, `svc -V` too) does not load kysely and pg.

/** A connection URL for messages: the password replaced by ***. */
export function describeUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '<unparsable url>';
  }
}
