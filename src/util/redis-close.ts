// Closing an ioredis client without waiting for a Redis that is away.
import type { Redis } from 'ioredis';

/**
 * QUIT on a connected client (its pending replies come first); otherwise the connection is only
 * dropped: QUIT is queued like any command while Redis is away, and would wait for its return.
 */
export async function closeRedis(client: Redis): Promise<void> {
  try {
    if (client.status === 'ready') await client.quit();
    else client.disconnect();
  } catch {
    client.disconnect();
  }
}
