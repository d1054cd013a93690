// `svc [COMMAND]`: commander wiring only; each command lives in its own module.
import { Command, Option } from 'commander';
import { VERSION } from '../version.js';
import { WORKSPACE_ROLES } from '../db/types.js';
import { fail } from './errors.js';
import { registerMachineCommands } from './machines.js';

export async function main(argv: string[]): Promise<void> {
  const program = new Command('svc')
    .description('Control plane of a multi-workspace data platform')
    .version(VERSION, '-V, --version', 'print the binary version')
    .helpOption('-h, --help', 'show help')
    .showHelpAfterError()
    .allowExcessArguments(false);

  program.command('serve')
    .description('apply pending migrations, then serve HTTP on server.host:server.port with the enabled background loops')
    .action(async () => { (await import('./serve.js')).serveCommand(); });

  program.command('openapi')
    .description('print the aggregated OpenAPI 3.1 document as JSON (reads no configuration)')
    .action(async () => { await (await import('./openapi.js')).openapiCommand(); });

  program.command('migrate')
    .description('apply pending migrations and exit')
    .action(async () => { await (await import('./migrate.js')).migrateCommand(); });

  program.command('init')
    .description('create the first local administrator (platform_admin) and workspace "default"; inputs SVC_ADMIN_EMAIL, SVC_ADMIN_PASSWORD')
    .option('--force', 'create another administrator even when one exists')
    .action(async (opts: { force?: boolean }) => { await (await import('./init.js')).initCommand(Boolean(opts.force)); });

  const workspace = program.command('workspace').description('workspace administration');
  workspace.command('add-group')
    .description('grant an identity-provider group a role in a workspace (idempotent), recorded as made by SVC_ADMIN_EMAIL')
    .requiredOption('--workspace <slug>', 'workspace slug')
    .requiredOption('--group <idp_group>', 'group name as in the groups claim')
    .addOption(new Option('--role <role>', 'workspace role').choices(WORKSPACE_ROLES as string[]).default('ws_editor'))
    .action(async (opts: { workspace: string; group: string; role: string }) => {
      await (await import('./workspace.js')).addGroupCommand(opts);
    });
  workspace.action(() => { workspace.help({ error: true }); });

  const catalog = program.command('catalog').description('the embedded Iceberg catalog');
  catalog.command('import')
    .description('copy a table written elsewhere (a local copy of its folder) into a workspace\'s warehouse, rewriting its paths, and register it')
    .argument('<folder>', 'the table\'s folder (metadata/ and the data files under it)')
    .requiredOption('--workspace <slug>', 'workspace slug')
    .requiredOption('--namespace <ns>', 'namespace; levels joined by dots (a.b)')
    .requiredOption('--table <name>', 'the new table\'s name')
    .option('--metadata <file>', 'the metadata JSON to import (default: version-hint.text, else the newest)')
    .action(async (folder: string, opts: { workspace: string; namespace: string; table: string; metadata?: string }) => {
      await (await import('./catalog.js')).importCommand(folder, opts);
    });
  catalog.action(() => { catalog.help({ error: true }); });

  const admin = program.command('admin').description('break-glass administration of local users');
  admin.command('reset-password')
    .description('give a local platform administrator a new password, printed once; ends their sessions; recorded in the audit log')
    .requiredOption('--email <email>', 'the administrator\'s email')
    .action(async (opts: { email: string }) => { await (await import('./admin.js')).resetPasswordCommand(opts); });
  admin.action(() => { admin.help({ error: true }); });

  registerMachineCommands(program);

  program.command('renderer')
    .description('serve screenshots of pages below automation.public_url for reports (POST /render), driving Chromium')
    .option('--host <host>', 'address to listen on', '0.0.0.0')
    .option('--port <port>', 'port to listen on (automation.renderer_url points here)', '8080')
    .option('--chromium <path>', 'the Chromium executable', '/usr/bin/chromium')
    .option('--concurrency <n>', 'renders at once; more wait, then 503', '2')
    .action(async (opts: { host: string; port: string; chromium: string; concurrency: string }) => {
      await (await import('./renderer.js')).rendererCommand(opts);
    });

  try {
    await program.parseAsync(argv);
  } catch (err) {
    fail((err as Error).message ?? String(err));
  }
}
