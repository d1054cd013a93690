// `svc client add|list|rotate|delete` and `svc idp rotate-key`: the machine identity provider
// from the command line. Heavy modules are imported inside the actions.
import { Command, Option } from 'commander';

import type { Config } from '../config/index.js';
import type { Db } from '../db/index.js';
import type { ChangeDeps } from '../util/invalidation.js';

const collect = (value: string, previous: string[] | undefined) => [...(previous ?? []), value];

/** Validated configuration, a migrated database, `fn`, one-line errors (as every command). */
async function run(fn: (db: Db, cfg: Config) => Promise<void>): Promise<void> {
  const { loadCheckedConfig } = await import('./config.js');
  const { withMigratedDb } = await import('./db.js');
  const cfg = loadCheckedConfig();
  await withMigratedDb(cfg, (db) => fn(db, cfg));
}

/** The same for a command that changes what running servers cache: they are told (src/cli/invalidation.ts). */
async function change(fn: (deps: ChangeDeps) => Promise<void>): Promise<void> {
  const { loadCheckedConfig } = await import('./config.js');
  const { withChangeDeps } = await import('./invalidation.js');
  await withChangeDeps(loadCheckedConfig(), fn);
}

export function registerMachineCommands(program: Command): void {
  const client = program.command('client').description('OAuth clients of the machine identity provider');

  client.command('add')
    .description('create a client; prints `client_id: ...` and `client_secret: ...` (the secret is shown this once)')
    .requiredOption('--name <name>', 'what the client is')
    .requiredOption('--audience <aud>', 'an audience the client may ask tokens for (repeatable)', collect)
    .option('--scope <scope>', 'a scope the client may ask for (repeatable; none: any scope)', collect, [])
    .option('--workspace <slug>', 'the workspace the client belongs to')
    .option('--token-exchange', 'also allow token exchange (acting for people who present their token)')
    .addOption(new Option('--signing-alg <alg>', 'algorithm of the client\'s access tokens').choices(['ES256', 'RS256']).default('ES256'))
    .action(async (opts: { name: string; audience: string[]; scope: string[]; workspace?: string; tokenExchange?: boolean; signingAlg: string }) => {
      await run(async (db) => {
        const { createClient, CLI_ACTOR, GRANT_CLIENT_CREDENTIALS, GRANT_TOKEN_EXCHANGE } = await import('../idp/clients.js');
        const c = await createClient(db, CLI_ACTOR, {
          name: opts.name, audiences: opts.audience, scopes: opts.scope, workspace: opts.workspace ?? null, token_signing_alg: opts.signingAlg,
          grant_types: opts.tokenExchange ? [GRANT_CLIENT_CREDENTIALS, GRANT_TOKEN_EXCHANGE] : [GRANT_CLIENT_CREDENTIALS],
        });
        process.stdout.write(`client_id: ${c.client_id}\nclient_secret: ${c.client_secret}\n`);
      });
    });

  client.command('list')
    .description('list clients (never their secrets)')
    .action(async () => {
      await run(async (db) => {
        const { listClients } = await import('../idp/clients.js');
        const rows = await listClients(db);
        if (rows.length === 0) { process.stdout.write('no clients\n'); return; }
        const table = [['CLIENT_ID', 'NAME', 'AUDIENCES', 'GRANTS', 'WORKSPACE', 'ALG', 'CREATED']].concat(rows.map((c) => [
          c.client_id, c.name, c.audiences.join(','),
          c.grant_types.map((g) => (g === 'client_credentials' ? 'client_credentials' : 'token_exchange')).join(','),
          c.workspace ?? '-', c.token_signing_alg, c.created_at.toISOString(),
        ]));
        const widths = table[0].map((_, i) => Math.max(...table.map((r) => r[i].length)));
        for (const r of table) process.stdout.write(r.map((v, i) => (i === r.length - 1 ? v : v.padEnd(widths[i]))).join('  ') + '\n');
      });
    });

  client.command('rotate')
    .description('replace a client\'s secret (the old one stops working at once); prints the new one')
    .argument('<client_id>')
    .action(async (clientId: string) => {
      await change(async (deps) => {
        const { rotateClientSecret, CLI_ACTOR } = await import('../idp/clients.js');
        const c = await rotateClientSecret(deps, CLI_ACTOR, clientId);
        process.stdout.write(`client_id: ${c.client_id}\nclient_secret: ${c.client_secret}\n`);
      });
    });

  client.command('delete')
    .description('delete a client (tokens it already holds stay valid until they expire)')
    .argument('<client_id>')
    .action(async (clientId: string) => {
      await change(async (deps) => {
        const { deleteClient, CLI_ACTOR } = await import('../idp/clients.js');
        await deleteClient(deps, CLI_ACTOR, clientId);
        process.stdout.write(`deleted: ${clientId}\n`);
      });
    });
  client.action(() => { client.help({ error: true }); });

  const idp = program.command('idp').description('the machine identity provider');
  idp.command('rotate-key')
    .description('create new signing keys (ES256 and RS256) and retire the active ones (kept in the key set until the tokens they signed have expired)')
    .action(async () => {
      await run(async (db, cfg) => {
        const { Sealer } = await import('../secrets/seal.js');
        const { rotateSigningKeys } = await import('../idp/keys.js');
        const { systemClock } = await import('../clock.js');
        const r = await rotateSigningKeys(db, new Sealer(cfg.secrets.master_key), systemClock.now());
        for (const k of r.created) process.stdout.write(`kid: ${k.kid} (${k.alg})\n`);
        for (const k of r.retired) process.stdout.write(`retired: ${k.kid} (${k.alg}, published until ${k.notAfter.toISOString()})\n`);
        if (!cfg.secrets.master_key) process.stderr.write('warning: secrets.master_key is not set: the new private key is stored unsealed\n');
      });
    });
  idp.action(() => { idp.help({ error: true }); });
}
