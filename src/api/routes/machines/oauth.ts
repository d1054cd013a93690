// The machine identity provider over HTTP: POST /oauth/token (RFC 6749 form in, RFC 6749 JSON
// out, even for errors the framework raises), the authorization endpoint (which refuses every
// request: machines only), the RFC 8414 and OpenID Connect metadata, and the published key set.
import { z } from 'zod';
import type { FastifyError } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppContext } from '../../context.js';
import { boundedKey, clientAddress } from '../../../auth/rate-limit.js';
import { errorAnswer, handleTokenRequest, OAuthError } from '../../../idp/token-endpoint.js';
import { authorizationServerMetadata, AUTHORIZATION_PATH, JWKS_PATH, openIdConfiguration, TOKEN_PATH } from '../../../idp/discovery.js';
import { machines, prepareSigningKeys } from '../../../idp/state.js';
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

const JSON_UTF8 = 'application/json; charset=utf-8';

const jwk = z.looseObject({ kty: z.string(), kid: z.string(), alg: z.string(), use: z.string() });

export function oauthRoutes(ctx: AppContext): FastifyPluginAsyncZod {
  return async (app) => {
    app.addHook('onReady', async () => {
      let s: Services;
      try { s = ctx.services(); } catch { return; } // `svc openapi`: no services
      await prepareSigningKeys(s).catch((err: Error) => s.log.warn({ err: err.message }, 'identity provider: cannot prepare signing keys at start; retrying on first use'));
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
        // The schema documents the parameters; handleTokenRequest checks each one itself (RFC 6749
        // rules and error codes), so the hot path skips the generic validation pass.
        validatorCompiler: () => (value: unknown) => ({ value }),
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
        // Built by handleTokenRequest with exactly the documented fields: sent as serialised JSON,
        // without a second pass through the response schema.
        return reply.status(a.status as 200).headers(a.headers).type(JSON_UTF8).send(JSON.stringify(a.body) as never);
      });
    });

    const metadataSchema = z.looseObject({
      issuer: z.string(), authorization_endpoint: z.string(), token_endpoint: z.string(), jwks_uri: z.string(),
      response_types_supported: z.array(z.string()), grant_types_supported: z.array(z.string()),
      token_endpoint_auth_methods_supported: z.array(z.string()),
    });
    const documents = [
      { path: '/.well-known/openid-configuration', summary: 'OpenID Connect Discovery 1.0 document of the machine identity provider', doc: openIdConfiguration,
        schema: metadataSchema.extend({ subject_types_supported: z.array(z.string()), id_token_signing_alg_values_supported: z.array(z.string()) }) },
      { path: '/.well-known/oauth-authorization-server', summary: 'RFC 8414 authorization server metadata of the machine identity provider', doc: authorizationServerMetadata, schema: metadataSchema },
    ];
    for (const d of documents) {
      app.get(d.path, { schema: { tags: ['machine identity'], summary: d.summary, response: { 200: d.schema } } }, async (_req, reply) => {
        reply.header('cache-control', 'public, max-age=300');
        return d.doc(machines(ctx.services()).issuer);
      });
    }

    // OpenID Connect Discovery requires an authorization endpoint. No client of this provider has a
    // redirect URI, so every request fails as RFC 6749 4.1.2.1 says: shown, never redirected.
    for (const method of ['GET', 'POST'] as const) {
      app.route({
        method, url: AUTHORIZATION_PATH,
        schema: {
          tags: ['machine identity'],
          summary: 'Authorization endpoint: refuses every request (the provider serves machines; use POST /oauth/token)',
          response: { 400: oauthError },
        },
        handler: async (_req, reply) => reply.status(400).headers({ 'cache-control': 'no-store' }).send({
          error: 'unauthorized_client',
          error_description: `this identity provider serves machines: no client may use the authorization endpoint; clients get tokens at ${TOKEN_PATH} (client credentials or token exchange)`,
        }),
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
