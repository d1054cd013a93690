// The metadata of the machine identity provider, in two documents describing the same server:
// - RFC 8414 authorization server metadata, served at /.well-known/oauth-authorization-server;
// - OpenID Connect Discovery 1.0, served at /.well-known/openid-configuration: the same fields
//   plus those OpenID Connect adds, with every field it requires (issuer, authorization_endpoint,
//   jwks_uri, response_types_supported, subject_types_supported,
//   id_token_signing_alg_values_supported including RS256).
// The provider serves machines: its authorization endpoint exists because OpenID Connect
// Discovery requires one, and no client is registered to use it (every request there is refused,
// see oauth.ts). The issuer is idp.issuer, else catalog.public_url, trailing slash trimmed.
import { GRANT_CLIENT_CREDENTIALS, GRANT_TOKEN_EXCHANGE } from './clients.js';
import { SIGNING_ALGS } from './keys.js';

export const TOKEN_PATH = '/oauth/token';
export const AUTHORIZATION_PATH = '/oauth/authorize';
export const JWKS_PATH = '/.well-known/jwks.json';

/** RFC 8414 section 2. */
export function authorizationServerMetadata(issuer: string) {
  return {
    issuer,
    authorization_endpoint: `${issuer}${AUTHORIZATION_PATH}`,
    token_endpoint: `${issuer}${TOKEN_PATH}`,
    jwks_uri: `${issuer}${JWKS_PATH}`,
    // Required by both documents; the value follows the Kubernetes service account issuer,
    // another provider that only mints tokens.
    response_types_supported: ['id_token'],
    grant_types_supported: [GRANT_CLIENT_CREDENTIALS, GRANT_TOKEN_EXCHANGE],
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
    // The algorithms of the access tokens (a client's token_signing_alg picks one).
    access_token_signing_alg_values_supported: [...SIGNING_ALGS],
  };
}

/** OpenID Connect Discovery 1.0 section 3: the RFC 8414 fields plus OpenID Connect's own. */
export function openIdConfiguration(issuer: string) {
  return {
    ...authorizationServerMetadata(issuer),
    subject_types_supported: ['public'],
    // RS256 must be listed (OpenID Connect Discovery 1.0 section 3); both keys are published.
    id_token_signing_alg_values_supported: ['RS256', 'ES256'],
    claims_supported: ['iss', 'sub', 'aud', 'exp', 'iat', 'jti', 'client_id', 'scope', 'act', 'workspace', 'email', 'name', 'preferred_username'],
  };
}
