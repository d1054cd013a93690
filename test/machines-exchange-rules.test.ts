// The token-exchange rules (src/idp/exchange.ts) as a table, without services: what a delegated
// token may carry given its subject token, the requesting client and what it asked for.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { delegatedGrant, readAct, actDepth, MAX_ACT_DEPTH, type Subject, type Requester, type Asked, type ActClaim } from '../src/idp/exchange.js';
import { OAuthError } from '../src/idp/oauth-error.js';

const NOW = 1_800_000_000;
const TTL = 3600;
const requester: Requester = { clientId: 'svc-b', scopes: [], workspace: null };
const issuedHere = (o: Partial<NonNullable<Subject['issuedHere']>> = {}): Subject => ({
  exp: NOW + 1200,
  issuedHere: { clientId: 'svc-a', audiences: ['svc-b', 'svc-catalog'], scopes: ['read', 'write'], workspace: null, act: { sub: 'svc-a' }, ...o },
});

describe('a provider token (first exchange)', () => {
  test('the client\'s audience, scopes and workspace; act is the client; exp never after the subject token\'s', () => {
    const g = delegatedGrant({ exp: NOW + 300 }, { clientId: 'svc-a', scopes: ['read'], workspace: 'default' }, { scopes: undefined, audiences: ['engine-a'] }, NOW, TTL);
    assert.deepEqual(g, { scopes: ['read'], audiences: ['engine-a'], workspace: 'default', exp: NOW + 300, act: { sub: 'svc-a' } });
    assert.equal(delegatedGrant({ exp: NOW + 90_000 }, requester, { scopes: ['x'], audiences: ['a'] }, NOW, TTL).exp, NOW + TTL);
  });
});

describe('a token of this service (re-exchange)', () => {
  const ok: Array<{ name: string; subject: Subject; req?: Partial<Requester>; asked: Asked; want: Partial<ReturnType<typeof delegatedGrant>> }> = [
    { name: 'a recipient narrows the audience; act nests', subject: issuedHere(), asked: { scopes: undefined, audiences: ['svc-catalog'] },
      want: { audiences: ['svc-catalog'], scopes: ['read', 'write'], act: { sub: 'svc-b', act: { sub: 'svc-a' } }, exp: NOW + 1200 } },
    { name: 'the client it was issued to downscopes it', subject: issuedHere(), req: { clientId: 'svc-a' }, asked: { scopes: ['read'], audiences: ['svc-catalog'] },
      want: { scopes: ['read'], act: { sub: 'svc-a', act: { sub: 'svc-a' } } } },
    { name: 'no scope asked: the client\'s allowed ones within the subject\'s', subject: issuedHere(), req: { scopes: ['read', 'admin'] }, asked: { scopes: undefined, audiences: ['svc-catalog'] },
      want: { scopes: ['read'] } },
    { name: 'the subject\'s workspace stays', subject: issuedHere({ workspace: 'default' }), asked: { scopes: undefined, audiences: ['svc-catalog'] }, want: { workspace: 'default' } },
    { name: 'a workspace client narrows an unbound token to its workspace', subject: issuedHere(), req: { workspace: 'ws1' }, asked: { scopes: undefined, audiences: ['svc-catalog'] }, want: { workspace: 'ws1' } },
  ];
  for (const c of ok) {
    test(c.name, () => {
      const g = delegatedGrant(c.subject, { ...requester, ...c.req }, c.asked, NOW, TTL);
      for (const [k, v] of Object.entries(c.want)) assert.deepEqual(g[k as keyof typeof g], v, k);
    });
  }

  const refused: Array<{ name: string; subject: Subject; req?: Partial<Requester>; asked: Asked; error: string; match: RegExp }> = [
    { name: 'a wider audience', subject: issuedHere(), asked: { scopes: undefined, audiences: ['engine-x'] }, error: 'invalid_target', match: /beyond the subject token's: engine-x/ },
    { name: 'a wider scope', subject: issuedHere(), asked: { scopes: ['read', 'admin'], audiences: ['svc-catalog'] }, error: 'invalid_scope', match: /admin/ },
    { name: 'a client the token was neither issued to nor names', subject: issuedHere(), req: { clientId: 'svc-z' }, asked: { scopes: undefined, audiences: ['svc-catalog'] }, error: 'invalid_grant', match: /not issued to this client/ },
    { name: 'another workspace', subject: issuedHere({ workspace: 'default' }), req: { workspace: 'ws1' }, asked: { scopes: undefined, audiences: ['svc-catalog'] }, error: 'invalid_grant', match: /bound to workspace default/ },
    { name: 'a chain already MAX_ACT_DEPTH long', subject: issuedHere({ act: chain(MAX_ACT_DEPTH) }), asked: { scopes: undefined, audiences: ['svc-catalog'] }, error: 'invalid_grant', match: /delegation chain/ },
  ];
  for (const c of refused) {
    test(`refused: ${c.name}`, () => {
      assert.throws(() => delegatedGrant(c.subject, { ...requester, ...c.req }, c.asked, NOW, TTL),
        (e: unknown) => e instanceof OAuthError && e.error === c.error && c.match.test(e.description));
    });
  }
});

function chain(n: number): ActClaim {
  let a: ActClaim = { sub: `c${n}` };
  for (let i = n - 1; i >= 1; i--) a = { sub: `c${i}`, act: a };
  return a;
}

describe('the act claim', () => {
  test('read back only when well-formed and at most MAX_ACT_DEPTH deep', () => {
    assert.deepEqual(readAct({ sub: 'a', act: { sub: 'b' }, extra: 1 }), { sub: 'a', act: { sub: 'b' } });
    assert.equal(readAct({ sub: 1 }), null);
    assert.equal(readAct({ sub: 'a', act: 'b' }), null);
    assert.equal(readAct('a'), null);
    assert.equal(actDepth(readAct(chain(MAX_ACT_DEPTH))!), MAX_ACT_DEPTH);
    assert.equal(readAct(chain(MAX_ACT_DEPTH + 1)), null);
  });
});
