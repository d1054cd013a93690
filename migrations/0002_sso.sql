-- Single sign-on: the provider's session id (`sid` of the ID token) on sessions it started, so a
-- back-channel logout token that names only a `sid` ends the right sessions.
ALTER TABLE sessions ADD COLUMN sid text;
CREATE INDEX sessions_sid_idx ON sessions (sid) WHERE sid IS NOT NULL;
