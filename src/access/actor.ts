// Who makes a change, recorded with its governance event: a signed-in person (user id and email),
// or an operator at the command line (no user). The one actor type of every domain.
export interface Actor {
  /** The user's id; null for the command line. */
  id: string | null;
  /** The user's email, or a label naming the operator's tool (`svc-cli`). */
  email: string | null;
}

/** Changes made with `svc client ...` and other commands that run without a user. */
export const CLI_ACTOR: Actor = { id: null, email: 'svc-cli' };

/** The actor fields of a governance event. */
export const auditActor = (a: Actor) => ({ actorId: a.id, actor: a.email });
