// The single source of every configuration key, its default, its value rules and its
// description (SPEC part 8, plus the [redis] addition), assembled from one file per area under
// sections/. The loader (load.ts), the environment mapping (env.ts), the startup checks
// (checks.ts) and the generated reference (docs.ts -> docs/configuration.md) all follow from it.
import { z } from 'zod';
import { server, database, log, session, csrf, rate_limit, oidc, idp, security, secrets, storage, audit, redis } from './sections/platform.js';
import { catalog, policy_service } from './sections/catalog.js';
import { engine, engines, olap } from './sections/engines.js';
import { automation } from './sections/automation.js';
import { data_api } from './sections/data-api.js';
import { workflow } from './sections/workflow.js';
import { apps } from './sections/apps.js';

export { ConfigError, type KeyMeta } from './builders.js';

/** Every configuration key with its default and value rules. */
export const configSchema = z.object({
  server,
  database,
  log,
  session,
  csrf,
  rate_limit,
  oidc,
  idp,
  security,
  secrets,
  catalog,
  storage,
  policy_service,
  engine,
  engines,
  audit,
  automation,
  data_api,
  workflow,
  olap,
  apps,
  redis,
});

export type Config = z.output<typeof configSchema>;

/** All defaults: the schema parsed from an empty document. */
export function defaultConfig(): Config {
  return configSchema.parse({});
}

/** The issuer of minted tokens: `idp.issuer` (empty counts as unset), else `catalog.public_url`,
 * trailing slashes trimmed. */
export function idpIssuer(cfg: Config): string {
  const issuer = cfg.idp.issuer !== undefined && cfg.idp.issuer !== '' ? cfg.idp.issuer : cfg.catalog.public_url;
  return issuer.replace(/\/+$/, '');
}
