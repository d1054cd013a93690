// The rules of token exchange (RFC 8693), as pure functions of the verified subject token, the
// requesting client and what it asked for. Keycloak's standard token exchange enforces the same:
// - A token of the OpenID provider is exchanged only when its `aud` names this service (one of
//   `idp.subject_token_audiences`, by default `oidc.client_id`): checked where it is verified.
// - A token this service issued is re-exchanged only by the client it was issued to (`client_id`)
//   or by a client named in its `aud`, and only while it acts for a person (it has `act`).
// - A re-exchanged token never gains: its scopes are a subset of the subject token's, its
//   audiences too, its workspace is the subject token's (a client bound to another workspace is
//   refused), and its `exp` is never later than the subject token's.
// - No delegated token outlives its subject token (a provider token included), so revoking the
//   person at the provider ends the chain when their token expires.
// - `act` names the requesting client and nests the previous actor (RFC 8693 4.1), at most
//   MAX_ACT_DEPTH deep.
import { OAuthError } from './oauth-error.js';

export const MAX_ACT_DEPTH = 8;

/** The `act` claim (RFC 8693 4.1): the current actor, and the one before it. */
export interface ActClaim { sub: string; act?: ActClaim }

/** What a subject token this service issued allows: it bounds whatever is exchanged for it. */
export interface IssuedHere {
  /** The client the token was issued to (`client_id`). */
  clientId: string;
  audiences: string[];
  scopes: string[];
  workspace: string | null;
  act: ActClaim;
}

export interface Subject {
  /** `exp` of the subject token, seconds since the epoch. */
  exp: number;
  /** Set when the subject token is one of this service's. */
  issuedHere?: IssuedHere;
}

export interface Requester {
  clientId: string;
  /** The client's allowed scopes; empty: any well-formed scope. */
  scopes: string[];
  workspace: string | null;
}

export interface Asked {
  /** Scopes asked for, or undefined when the request named none. */
  scopes: string[] | undefined;
  /** Audiences already checked against the client's allowed list. */
  audiences: string[];
}

export interface DelegatedGrant { scopes: string[]; audiences: string[]; workspace: string | null; exp: number; act: ActClaim }

export function actDepth(a: ActClaim | undefined): number {
  let depth = 0;
  for (let cur = a; cur; cur = cur.act) depth++;
  return depth;
}

/** The `act` claim of a token of this service, or null when it is not a well-formed chain. */
export function readAct(v: unknown): ActClaim | null {
  const walk = (x: unknown, depth: number): ActClaim | null => {
    if (depth > MAX_ACT_DEPTH || typeof x !== 'object' || x === null || typeof (x as ActClaim).sub !== 'string') return null;
    const inner = (x as { act?: unknown }).act;
    if (inner === undefined) return { sub: (x as ActClaim).sub };
    const nested = walk(inner, depth + 1);
    return nested ? { sub: (x as ActClaim).sub, act: nested } : null;
  };
  return walk(v, 1);
}

/** The rights of the token minted for `requester` acting for the subject's person. Throws OAuthError. */
export function delegatedGrant(subject: Subject, requester: Requester, asked: Asked, now: number, ttlSecs: number): DelegatedGrant {
  const exp = Math.min(now + ttlSecs, subject.exp);
  const own = subject.issuedHere;
  if (!own) {
    const scopes = asked.scopes ?? requester.scopes;
    return { scopes, audiences: asked.audiences, workspace: requester.workspace, exp, act: { sub: requester.clientId } };
  }
  if (requester.clientId !== own.clientId && !own.audiences.includes(requester.clientId)) {
    throw new OAuthError('invalid_grant', 'subject_token was not issued to this client: only the client it was issued to, or a client named in its aud, may exchange it');
  }
  if (actDepth(own.act) >= MAX_ACT_DEPTH) {
    throw new OAuthError('invalid_grant', `subject_token has a delegation chain of ${MAX_ACT_DEPTH} actors: it cannot be exchanged again`);
  }
  let scopes: string[];
  if (asked.scopes === undefined) {
    // The client's default, within what the subject token carries.
    scopes = requester.scopes.length ? requester.scopes.filter((s) => own.scopes.includes(s)) : own.scopes;
  } else {
    const beyond = asked.scopes.filter((s) => !own.scopes.includes(s));
    if (beyond.length) throw new OAuthError('invalid_scope', `scope beyond the subject token's: ${beyond.join(' ')}`);
    scopes = asked.scopes;
  }
  const wider = asked.audiences.filter((a) => !own.audiences.includes(a));
  if (wider.length) throw new OAuthError('invalid_target', `audience beyond the subject token's: ${wider.join(', ')}`);
  if (own.workspace && requester.workspace && requester.workspace !== own.workspace) {
    throw new OAuthError('invalid_grant', `subject_token is bound to workspace ${own.workspace}; this client belongs to workspace ${requester.workspace}`);
  }
  return {
    scopes, audiences: asked.audiences, workspace: own.workspace ?? requester.workspace, exp,
    act: { sub: requester.clientId, act: own.act },
  };
}
