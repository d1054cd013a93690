// The machine identity provider over HTTP: POST /oauth/token (RFC 6749 form in, RFC 6749 JSON
// out, even for errors the framework raises), discovery and the published key set.
import { z } from 'zod';
import type { FastifyError } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppContext } from '../../context.js';
import { boundedKey, clientAddress } from '../../../auth/rate-limit.js';
import { errorAnswer, handleTokenRequest, OAuthError } from '../../../idp/token-endpoint.js';
import { discoveryDocument, JWKS_PATH, TOKEN_PATH } from '../../../idp/discovery.js';
import { machines } from '../../../idp/state.js';
import { ensureActiveKey, sealPlainKeys } from '../../../idp/keys.js';
import type { Services } from '../../../services.js';

const oauthError = z.object({ error: z.string(), error_description: z.string().optional() })
  .meta({ description: 'RFC 6749 5.2 error' });

const tokenResponse = z.object({
  access_token: z.string(),
  token_type: z.literal('Bearer'),
  expires_in: z.number().int(),
  scope: z.string().optional(),
  issued_token_type: z.string().optional(),
});

const tokenBody = z.looseObject({
  grant_type: z.string().optional().meta({ description: '`client_credentials` or `urn:ietf:params:oauth:grant-type:token-exchange`' }),
  client_id: z.string().optional().meta({ description: 'client_secret_post (else HTTP Basic)' }),
  client_secret: z.string().optional().meta({ description: 'client_secret_post (else HTTP Basic)' }),
  audience: z.union([z.string(), z.array(z.string())]).optional().meta({ description: 'one of the client\'s allowed audiences (repeatable)' }),
  resource: z.union([z.string(), z.array(z.string())]).optional().meta({ description: 'RFC 8707 synonym of audience' }),
  scope: z.string().optional(),
  subject_token: z.string().optional().meta({ description: 'token exchange: the person\'s token' }),
  subject_token_type: z.string().optional().meta({ description: 'token exchange: urn:ietf:params:oauth:token-type:id_token, :access_token or :jwt' }),
  requested_token_type: z.string().optional(),
});

const jwk = z.looseObject({ kty: z.string(), kid: z.string(), alg: z.string(), use: z.string() });

/** Generates the first signing key at start, seals unsealed keys when a master key is set, and warns about unsealed ones. */
async function prepareKeys(s: Services): Promise<void> {
  const m = machines(s);
  const log = s.logging.module('svc::idp');
  const created = await ensureActiveKey(s.db, m.sealer, s.clock.now());
  if (created) log.info({ kid: created, sealed: m.sealer.enabled }, 'identity provider signing key created');
  const sealed = await sealPlainKeys(s.db, m.sealer);
  if (sealed) log.info({ keys: sealed }, 'identity provider signing keys sealed under secrets.master_key');
  if (!m.sealer.enabled) log.warn('secrets.master_key is not set: the identity provider\'s private signing key is stored unsealed in the database');
  m.keys.forget();
}

export function oauthRoutes(ctx: AppContext): FastifyPluginAsyncZod {
  return async (app) => {
    app.addHook('onReady', async () => {
      let s: Services;
      try { s = ctx.services(); } catch { return; } // `svc openapi`: no services
      await prepareKeys(s).catch((err: Error) => s.log.warn({ err: err.message }, 'identity provider: cannot prepare signing keys at start; retrying on first use'));
    });

    await app.register(async (token) => {
      // Framework errors on this route (unparsable or unsupported body, body too large) also
      // answer in RFC 6749 shape: OAuth clients read no other.
      token.setErrorHandler((err: FastifyError, req, reply) => {
        const status = err.statusCode ?? 500;
        if (status >= 500) req.log.error({ err }, 'token endpoint failed');
        // A request refused before it reached the handler still counts for its address.
        const d = ctx.services().tokenLimiter.hit([`ip:${clientAddress(req.headers, req.socket.remoteAddress)}`]);
        const a = errorAnswer(!d.allowed ? new OAuthError('too_many_requests', 'too many token requests; try again later', d.retryAfterSecs)
          : new OAuthError(status >= 500 ? 'server_error' : 'invalid_request', status >= 500 ? 'internal error' : err.message));
        return reply.status(a.status as 400).headers(a.headers).send(a.body);
      });
      token.post(TOKEN_PATH, {
        config: { csrf: false },
        attachValidation: true,
        schema: {
          tags: ['machine identity'],
          summary: 'Token endpoint: client credentials and token exchange (RFC 6749, RFC 8693); form-encoded; rate limited by rate_limit.token_*',
          consumes: ['application/x-www-form-urlencoded'],
          body: tokenBody,
          response: { 200: tokenResponse, 400: oauthError, 401: oauthError, 429: oauthError, 500: oauthError, 503: oauthError },
        },
      }, async (req, reply) => {
        const s = ctx.services();
        const q = req.url.indexOf('?');
        const address = clientAddress(req.headers, req.socket.remoteAddress);
        const a = await handleTokenRequest(s, {
          contentType: req.headers['content-type'],
          body: req.body,
          query: q >= 0 ? req.url.slice(q + 1) : '',
          authorization: req.headers.authorization,
          address,
        });
        if (a.status === 429) s.log.warn({ ip: boundedKey(address) }, 'token endpoint rate limited');
        return reply.status(a.status as 200).headers(a.headers).send(a.body as never);
      });
    });

    const discoverySchema = z.looseObject({
      issuer: z.string(), token_endpoint: z.string(), jwks_uri: z.string(),
      grant_types_supported: z.array(z.string()), token_endpoint_auth_methods_supported: z.array(z.string()),
      id_token_signing_alg_values_supported: z.array(z.string()),
    });
    for (const path of ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server']) {
      app.get(path, {
        schema: {
          tags: ['machine identity'],
          summary: path.endsWith('openid-configuration') ? 'Discovery document of the machine identity provider' : 'The same document under the RFC 8414 name',
          response: { 200: discoverySchema },
        },
      }, async (_req, reply) => {
        reply.header('cache-control', 'public, max-age=300');
        return discoveryDocument(machines(ctx.services()).issuer);
      });
    }

    app.get(JWKS_PATH, {
      schema: {
        tags: ['machine identity'],
        summary: 'Public keys of the machine identity provider: the active key and retired keys until the tokens they signed have expired',
        response: { 200: z.object({ keys: z.array(jwk) }) },
      },
    }, async (_req, reply) => {
      const keys = await machines(ctx.services()).keys.published();
      reply.header('cache-control', 'public, max-age=60');
      return { keys: keys.map((k) => ({ ...k.jwk, kid: k.kid, alg: k.alg, use: 'sig' })) } as never;
    });
  };
}
