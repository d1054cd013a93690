// Configuration layer: zod schema of every key -> layered loader -> startup checks.
export {
  ConfigError,
  configSchema,
  defaultConfig,
  idpIssuer,
  type Config,
  type KeyMeta,
} from './schema.js';
export { listLeaves } from './introspect.js';
export { envName } from './env.js';
export { loadConfig, CONFIG_FILE, type LoadOptions } from './load.js';
export { startupChecks, decodeBase64Strict, CHECK_MESSAGES, STARTUP_CHECKS } from './checks.js';
export { renderConfigDocs } from './docs.js';
