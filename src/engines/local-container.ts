// `local_container` provisioner (development): one container per engine on a Docker-API engine
// (Docker, or podman's service) through dockerode, on engines.local_container.network.
// Every container carries `svc.project=<project>`; every lookup filters on it, so containers of
// another project are never listed, stopped or removed. Further labels name the workspace, the
// engine and the hash of its rendered configuration: a container whose hash differs is replaced
// (drift), one whose engine is gone is an orphan (list()), as Docker Compose does.
import Docker from 'dockerode';
import type { Logger } from 'pino';
import { buildInputTar, dockerOptionsFromHost, ensureImagePresent } from '../runners/local-container.js';
import type { EngineProvisioner, EngineSpec, FoundEngine, ProvisionerDeps } from './provisioner.js';

export interface LocalEngineOptions { host: string; network: string; project: string; pullTimeoutMs?: number }

export interface LocalEngineProvisioner extends EngineProvisioner { readonly kind: 'local_container'; readonly docker: Docker }

const STOP_GRACE_SECS = 30;

/** `2` -> 2e9 nano-CPUs, `500m` -> 5e8. */
export function nanoCpus(cpu: string): number {
  return cpu.endsWith('m') ? Number(cpu.slice(0, -1)) * 1e6 : Math.round(Number(cpu) * 1e9);
}
export function memoryBytes(memory: string): number {
  const n = Number(memory.slice(0, -2));
  return memory.endsWith('Gi') ? n * 1024 ** 3 : n * 1024 ** 2;
}

export function createLocalEngineProvisioner(opts: LocalEngineOptions, deps: ProvisionerDeps = {}): LocalEngineProvisioner {
  if (!opts.project) throw new Error('engines.local_container.project is required with engines.provisioner = local_container');
  if (!opts.network) throw new Error('engines.local_container.network is required with engines.provisioner = local_container');
  const docker = new Docker(dockerOptionsFromHost(opts.host));
  const log: Logger | undefined = deps.log;
  const project = opts.project;

  const nameOf = (spec: EngineSpec) => `svc-engine-${project}-${spec.workspace}-${spec.name}`.replace(/[^a-zA-Z0-9_.-]/g, '-').slice(0, 200);

  async function find(engineId: string): Promise<Docker.ContainerInfo | undefined> {
    const list = await docker.listContainers({ all: true, filters: { label: [`svc.project=${project}`, `svc.engine-id=${engineId}`] } });
    return list[0];
  }

  async function endpointOf(c: Docker.Container, spec: EngineSpec): Promise<string> {
    const info = await c.inspect();
    const ip = info.NetworkSettings?.Networks?.[opts.network]?.IPAddress;
    return `http://${ip || info.Name.replace(/^\//, '')}:${spec.port}`;
  }

  async function create(spec: EngineSpec): Promise<Docker.Container> {
    await ensureImagePresent(docker, spec.image, { log, pullTimeoutMs: opts.pullTimeoutMs ?? 600_000 });
    const c = await docker.createContainer({
      name: nameOf(spec),
      Image: spec.image,
      Labels: spec.labels,
      Env: Object.entries(spec.env).map(([k, v]) => `${k}=${v}`),
      ExposedPorts: { [`${spec.port}/tcp`]: {} },
      HostConfig: {
        NetworkMode: opts.network,
        NanoCpus: nanoCpus(spec.resources.cpu),
        Memory: memoryBytes(spec.resources.memory),
        SecurityOpt: ['no-new-privileges'],
        CapDrop: ['ALL'],
        RestartPolicy: { Name: 'unless-stopped' },
      },
    });
    const enc = new TextEncoder();
    const files = Object.fromEntries(Object.entries(spec.files).map(([k, v]) => [k, enc.encode(v)]));
    await c.putArchive(await buildInputTar(spec.configDir, files), { path: '/' });
    return c;
  }

  return {
    kind: 'local_container',
    docker,

    async up(spec) {
      const found = await find(spec.id);
      let c: Docker.Container;
      if (found && found.Labels['svc.config-hash'] === spec.hash) {
        c = docker.getContainer(found.Id);
      } else {
        if (found) {
          log?.info({ engine: spec.id, was: found.Labels['svc.config-hash'], now: spec.hash }, 'engine configuration changed: replacing its container');
          await docker.getContainer(found.Id).remove({ force: true });
        }
        c = await create(spec);
      }
      const state = (await c.inspect()).State;
      if (!state.Running) await c.start();
      return { endpoint: await endpointOf(c, spec) };
    },

    async stop(spec) {
      const found = await find(spec.id);
      if (found && found.State === 'running') await docker.getContainer(found.Id).stop({ t: STOP_GRACE_SECS });
    },

    async remove(spec) {
      const found = await find(spec.id);
      if (found) await docker.getContainer(found.Id).remove({ force: true, v: true });
    },

    async list(): Promise<FoundEngine[]> {
      const list = await docker.listContainers({ all: true, filters: { label: [`svc.project=${project}`, 'svc.component=engine'] } });
      return list.map((c) => ({ engineId: c.Labels['svc.engine-id'] ?? '', workspace: c.Labels['svc.workspace'] ?? '', name: c.Labels['svc.engine'] ?? '', hash: c.Labels['svc.config-hash'] ?? '', running: c.State === 'running', object: c.Names[0]?.replace(/^\//, '') ?? c.Id }));
    },
  };
}
