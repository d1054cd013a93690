// The real container engine for the local-container runner tests: runs scripts/podman.sh (which
// installs podman when missing, starts its Docker-API service and builds the busybox test image)
// and returns the engine address.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const script = fileURLToPath(new URL('../../scripts/podman.sh', import.meta.url));

/** Image built by scripts/podman.sh: a static busybox with sh, echo, cat, sleep, ... */
export const TEST_IMAGE = 'localhost/svc-test:1';

/** Starts (or finds) the podman service; returns its `unix://` address. */
export async function ensurePodman(): Promise<string> {
  try {
    const { stdout } = await run('bash', [script], { timeout: 15 * 60_000, maxBuffer: 16 * 1024 * 1024 });
    const sock = stdout.trim().split('\n').pop()!.trim();
    return `unix://${sock}`;
  } catch (err) {
    const e = err as { stderr?: string; message?: string };
    throw new Error(`scripts/podman.sh failed: ${e.message}\n${(e.stderr ?? '').split('\n').slice(-20).join('\n')}`);
  }
}
