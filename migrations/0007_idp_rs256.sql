-- The machine identity provider signs with ES256 and RS256 keys side by side (engines whose JWT
-- libraries expect RS256 get RS256 tokens): one active key per algorithm, and the algorithm of
-- each client's tokens.
DROP INDEX idp_signing_keys_one_active;
CREATE UNIQUE INDEX idp_signing_keys_one_active ON idp_signing_keys (alg) WHERE retired_at IS NULL;

ALTER TABLE oauth_clients
  ADD COLUMN token_signing_alg text NOT NULL DEFAULT 'ES256' CHECK (token_signing_alg IN ('ES256', 'RS256'));
