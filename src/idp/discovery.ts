// The discovery document of the machine identity provider (OpenID Connect Discovery 1.0 and
// RFC 8414 field names). The issuer is idp.issuer, else catalog.public_url, trailing slash trimmed.
import { GRANT_CLIENT_CREDENTIALS, GRANT_TOKEN_EXCHANGE } from './clients.js';
import { SIGNING_ALG } from './keys.js';

export const TOKEN_PATH = '/oauth/token';
export const JWKS_PATH = '/.well-known/jwks.json';

export function discoveryDocument(issuer: string) {
  return {
    issuer,
    token_endpoint: `${issuer}${TOKEN_PATH}`,
    jwks_uri: `${issuer}${JWKS_PATH}`,
    grant_types_supported: [GRANT_CLIENT_CREDENTIALS, GRANT_TOKEN_EXCHANGE],
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
    // OpenID Connect Discovery requires these three; the values follow the Kubernetes service
    // account issuer, another provider that only mints tokens.
    response_types_supported: ['id_token'],
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: [SIGNING_ALG],
    // The algorithm of the access tokens (no registered metadata name exists for it).
    access_token_signing_alg_values_supported: [SIGNING_ALG],
    claims_supported: ['iss', 'sub', 'aud', 'exp', 'iat', 'jti', 'client_id', 'scope', 'act', 'workspace', 'email', 'name', 'preferred_username'],
  };
}
