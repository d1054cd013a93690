// GET /catalog/v1/config of the Iceberg REST catalog specification: the server's configuration
// for a client, as `defaults` (the client may override them) and `overrides` (the server's word).
import type { Config } from '../config/index.js';

export interface CatalogConfigResponse {
  defaults: Record<string, string>;
  overrides: Record<string, string>;
}

export function catalogConfig(cfg: Config, warehouse: string | undefined): CatalogConfigResponse {
  return {
    defaults: {},
    overrides: { warehouse: warehouse && warehouse !== '' ? warehouse : cfg.catalog.warehouse },
  };
}
