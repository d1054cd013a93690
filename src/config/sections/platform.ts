// Sections of the platform itself: listener, database, logging, sign-in, machine identity,
// secrets, object store, audit and Redis (SPEC 8).
import { z } from 'zod';
import { meta, count, atLeast, str, optStr, bool, strList, section } from '../builders.js';

export const server = section('HTTP listener', {
  host: str('0.0.0.0', 'bind address'),
  port: z
    .number()
    .int()
    .min(1, { error: 'must be between 1 and 65535' })
    .max(65535, { error: 'must be between 1 and 65535' })
    .default(8080)
    .meta(meta('HTTP port (1..65535)')),
});

export const database = section('metadata database', {
  url: str('postgres://svc:svc@127.0.0.1:5432/svc', 'metadata database URL; migrations run against it'),
  max_connections: count(10, 'pool size'),
});

export const log = section('logging', {
  filter: str('info', 'log filter directive; an invalid directive falls back to `info`'),
  json: bool(false, 'JSON log lines when true'),
});

export const session = section('browser session', {
  cookie_name: str('svc_session', 'name of the session cookie'),
  absolute_ttl_hours: count(24, 'session lifetime from sign-in; also the cookie Max-Age'),
  idle_ttl_minutes: count(60, 'session idle lifetime'),
  secure: bool(false, 'Secure flag on session and OIDC cookies'),
});

export const csrf = section('CSRF protection', {
  cookie_name: str('svc_csrf', 'name of the CSRF cookie'),
  header_name: str('X-Svc-CSRF', 'header carrying the CSRF cookie value on state-changing requests'),
});

export const rate_limit = section('rate limits of local sign-in and the token endpoint (in memory, per replica; seconds)', {
  login_max_attempts: count(5, 'local sign-in attempts per window per address and per email, successes included'),
  login_window_secs: count(300, 'local sign-in window'),
  login_lockout_secs: count(300, 'local sign-in block time (HTTP 429)'),
  token_max_attempts: count(
    60,
    'requests to `POST /oauth/token` (client credentials) and to token exchange per window, keyed on address and client id; requests repeating an already verified secret are not counted',
  ),
  token_window_secs: count(60, 'token endpoint window'),
  token_lockout_secs: count(60, 'token endpoint block time (HTTP 429)'),
});

export const oidc = section('single sign-on through an OpenID Connect provider', {
  enabled: bool(false, 'when true, `security.secret_key`, `oidc.issuer_url` and `oidc.client_id` are required'),
  issuer_url: str('', 'provider issuer; discovery is read from it', 'with oidc.enabled'),
  client_id: str('', 'client id at the provider', 'with oidc.enabled'),
  client_secret: str('', 'client secret at the provider'),
  redirect_url: str(
    'http://localhost:8080/api/auth/oidc/callback',
    'callback URL ending in `/api/auth/oidc/callback`; must be registered at the provider, on the browser\'s origin',
  ),
  scopes: strList(['openid', 'email', 'profile'], 'scopes requested at sign-in'),
  groups_claim: str('groups', 'claim listing groups'),
  post_login_redirect: str('/', 'where the browser goes after sign-in'),
  catalog_audience: str('svc-catalog', '`aud` the embedded catalog requires in an engine JWT'),
});

export const idp = section('the service\'s own machine identity provider', {
  issuer: optStr(
    '`iss` of all minted tokens and of discovery; unset falls back to `catalog.public_url`; trailing slash trimmed; must be resolvable from outside the cluster; changing it strands already provisioned engines that compare the old issuer exactly',
  ),
  subject_token_audiences: strList(
    [],
    'token exchange: a token of the OpenID provider (`oidc.issuer_url`) is exchanged at `POST /oauth/token` only when its `aud` names one of these (this service\'s clients at the provider); empty means `[oidc.client_id]`',
  ),
});

export const security = section('cookie encryption', {
  secret_key: str('', 'base64, at least 64 bytes; encrypts the OIDC state cookie', 'with oidc.enabled'),
});

export const secrets = section('sealing of stored credentials', {
  master_key: str('', 'base64, at least 32 bytes; AES-256-GCM key for stored credentials; empty disables sealing'),
});

export const storage = section('object store (S3 compatible)', {
  endpoint: str('http://127.0.0.1:9000', 'object-store endpoint URL; empty for a hosted store'),
  region: str('us-east-1', 'region'),
  bucket: str('warehouse', 'bucket; must already exist', 'always'),
  access_key: str('', 'access key', 'always'),
  secret_key: str('', 'secret key', 'always'),
  path_style: bool(true, 'path-style addressing'),
});

export const audit = section('audit log', {
  enabled: bool(true, 'record audit events'),
  retention_days: z.number().int().default(90)
    .meta(meta('days audit events are kept; pruned hourly; 0 or negative keeps them for ever (the server logs that it declined to schedule pruning)')),
  channel_capacity: atLeast(1, 8192, 'in-memory queue of authorization events; when full, new events are dropped (best effort) and counted'),
  batch_size: atLeast(1, 256, 'most events written per INSERT'),
  flush_interval_ms: count(1000, 'longest time an event waits in the buffer'),
});

export const redis = section('Redis connection of the job queues (BullMQ)', {
  url: str('redis://127.0.0.1:6379', 'Redis connection URL'),
});
