// `POST .../engines/explain`: what create (or a change of an existing engine) would provision,
// without doing it: image and digest, resources, labels, rendered configuration and the diff
// against what runs. Refuses what create refuses (a floating tag, engines disabled).
import type { Services } from '../services.js';
import type { EngineRow } from '../db/engine-types.js';
import { callbackUrl, checkInput, type EngineInput } from './engines.js';
import { CONFIG_DIR, diffFiles, engineLabels, render } from './render.js';
import { effectiveDrivers } from './jdbc-drivers.js';

export interface Explanation {
  action: 'create' | 'replace' | 'unchanged';
  provisioner: 'cluster' | 'local_container';
  image: { image: string; repository: string; tag: string | null; digest: string | null; version: string | null; pinned_by: 'version' | 'digest' };
  resources: { cpu: string; memory: string };
  labels: Record<string, string>;
  config_dir: string;
  files: Record<string, string>;
  config_hash: string;
  running_config_hash: string | null;
  diff: string[];
}

/** Placeholder of the client id an engine not yet created would get. */
export const NEW_CLIENT_ID = '<assigned at create>';

export function explainEngine(s: Services, ws: { slug: string }, input: EngineInput, existing: EngineRow | undefined): Explanation {
  const { provisioner, image, resources } = checkInput(s, input);
  const id = existing?.id ?? '<assigned at create>';
  const r = render({
    kind: input.kind, workspace: ws.slug, engine: input.name, engineId: id, image, resources,
    callbackUrl: callbackUrl(s, provisioner)!, clientId: existing?.oauth_client_id ?? NEW_CLIENT_ID,
    catalogAudience: s.config.oidc.catalog_audience,
    jdbcDrivers: input.kind === 'olap' ? Object.fromEntries(effectiveDrivers(s.config).map((d) => [d.dialect, d])) : undefined,
  });
  const project = provisioner === 'local_container' ? s.config.engines.local_container.project : undefined;
  const runningHash = existing?.running_config_hash ?? null;
  const sameImage = existing && existing.image === image.image && JSON.stringify(existing.resources) === JSON.stringify(resources);
  return {
    action: !existing ? 'create' : sameImage && runningHash === r.hash ? 'unchanged' : 'replace',
    provisioner,
    image: { image: image.image, repository: image.repository, tag: image.tag, digest: image.digest, version: image.version, pinned_by: image.pinned_by },
    resources,
    labels: engineLabels({ project, workspace: ws.slug, engine: input.name, engineId: id, hash: r.hash, kind: input.kind }),
    config_dir: CONFIG_DIR[input.kind],
    files: r.files,
    config_hash: r.hash,
    running_config_hash: runningHash,
    diff: diffFiles(existing?.running_config ?? null, r.files),
  };
}
