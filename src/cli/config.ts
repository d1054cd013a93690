// Reads and validates configuration for every command but `openapi`.
import { loadConfig, startupChecks, type Config } from '../config/index.js';
import { fail } from './errors.js';

export function loadCheckedConfig(): Config {
  try {
    const cfg = loadConfig();
    startupChecks(cfg);
    return cfg;
  } catch (err) {
    fail((err as Error).message.split('\n')[0]);
  }
}
