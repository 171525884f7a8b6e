import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createOrganization } from '../../shared/auth/bootstrap';
import { authStore } from '../../shared/auth/store';
import { resetConfig } from '../../shared/platform/config';
import { resetDocumentClient, setFallbackCredentials } from '../../shared/platform/db/client';
import type { Credentials } from '../../shared/platform/db/sigv4';
import { addBalance } from '../../shared/usage/balance';
import { ensureTable, runningStoreEndpoint, startLocalStore } from './store';

const USAGE = `Loupe operator tool

  npm run -s loupe -- org create --name NAME --admin-email EMAIL [--admin-name NAME] [--json]
  npm run -s loupe -- balance add --user USER_ID --cents N [--json]
  npm run -s loupe -- mcp --url BASE_URL --key API_KEY
                            a stdio MCP server forwarding to BASE_URL/mcp (e.g. http://localhost:3000/v1);
                            LOUPE_URL and LOUPE_API_KEY instead of the flags; without a checkout:
                            npx -y <origin>/loupe-mcp.tgz (docs/guides/mcp.md)

Where it works:
  (default)                 the local data directory (LOUPE_DATA_DIR or .data), also while npm start serves it
  --data-dir DIR            another local data directory
  --table NAME [--region R] the deployed table (stack output TableName), with the usual AWS credentials
`;

type Target = { close: () => Promise<void> };

async function connect(opts: { table?: string; region?: string; dataDir?: string }): Promise<Target> {
  if (opts.table) {
    process.env.LOUPE_RUNTIME = 'aws';
    process.env.LOUPE_TABLE_NAME = opts.table;
    if (opts.region) process.env.AWS_REGION = opts.region;
    delete process.env.LOUPE_DYNAMODB_ENDPOINT;
    resetConfig();
    // Credentials as the AWS CLI finds them (environment, profiles, SSO, …): the SDK's default chain.
    const sdk = new DynamoDBClient({ region: opts.region ?? process.env.AWS_REGION });
    setFallbackCredentials(() => sdk.config.credentials() as Promise<Credentials>);
    return { close: async () => resetDocumentClient() };
  }
  const dataDir = resolve(opts.dataDir ?? process.env.LOUPE_DATA_DIR ?? '.data');
  process.env.LOUPE_RUNTIME = 'local';
  process.env.LOUPE_DATA_DIR = dataDir;
  resetConfig();
  const table = process.env.LOUPE_TABLE_NAME ?? 'loupe-main';
  const running = await runningStoreEndpoint(dataDir);
  if (running) {
    await ensureTable(running, table);
    process.env.LOUPE_DYNAMODB_ENDPOINT = running;
    resetConfig();
    resetDocumentClient();
    return { close: async () => resetDocumentClient() };
  }
  const store = await startLocalStore(dataDir, table);
  process.env.LOUPE_DYNAMODB_ENDPOINT = store.endpoint;
  resetConfig();
  resetDocumentClient();
  return {
    close: async () => {
      resetDocumentClient();
      await store.close();
    },
  };
}

function fail(message: string): never {
  process.stderr.write(`${message}\n\n${USAGE}`);
  process.exit(2);
}

export async function main(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      'admin-email': { type: 'string' },
      'admin-name': { type: 'string' },
      user: { type: 'string' },
      cents: { type: 'string' },
      json: { type: 'boolean', default: false },
      table: { type: 'string' },
      region: { type: 'string' },
      'data-dir': { type: 'string' },
      url: { type: 'string' },
      key: { type: 'string' },
      help: { type: 'boolean', default: false },
    },
  });
  const command = positionals.join(' ');
  if (values.help || !command) {
    process.stdout.write(USAGE);
    return;
  }
  if (command === 'mcp') {
    // The same bridge as the loupe-mcp package (infra/mcp-bridge, dependency-free).
    const url = values.url ?? process.env.LOUPE_URL;
    const key = values.key ?? process.env.LOUPE_API_KEY;
    if (!url || !key) fail('mcp needs --url BASE_URL and --key API_KEY (or LOUPE_URL and LOUPE_API_KEY).');
    if (!URL.canParse(url)) fail('--url is not a URL.');
    const { runBridge } = await import('../mcp-bridge/bridge.mjs');
    await runBridge({ url, key });
    return;
  }
  if (command !== 'org create' && command !== 'balance add') fail(`Unknown command: ${command}`);
  if (command === 'org create' && (!values.name || !values['admin-email']))
    fail('org create needs --name and --admin-email.');
  if (command === 'org create' && !/^[^@\s]+@[^@\s]+$/.test(values['admin-email']!))
    fail('--admin-email is not an email address.');
  const cents = Number(values.cents);
  if (command === 'balance add' && (!values.user || !Number.isFinite(cents)))
    fail('balance add needs --user USER_ID and --cents N (a number).');

  const target = await connect({ table: values.table, region: values.region, dataDir: values['data-dir'] });
  try {
    if (command === 'org create') {
      const out = await createOrganization({
        name: values.name!,
        adminEmail: values['admin-email']!,
        adminName: values['admin-name'],
      });
      const answer = { orgId: out.orgId, userId: out.userId, key: out.key };
      if (values.json) process.stdout.write(`${JSON.stringify(answer)}\n`);
      else
        process.stdout.write(
          `Organization ${out.orgId}\nAdmin user   ${out.userId}\nAdmin key    ${out.key}  (shown once; store it now)\n`,
        );
      return;
    }
    const user = await authStore.findUserAnywhere(values.user!);
    if (!user) fail(`No user with id ${values.user}.`);
    const { remaining } = await addBalance(user.orgId, user.id, cents);
    if (values.json)
      process.stdout.write(`${JSON.stringify({ userId: user.id, orgId: user.orgId, remaining })}\n`);
    else process.stdout.write(`Balance of ${user.id} is now ${remaining} cents.\n`);
  } finally {
    await target.close();
  }
}

if (process.argv[1] && /cli\.(ts|js|mjs)$/.test(process.argv[1])) {
  main(process.argv.slice(2)).catch((e) => {
    process.stderr.write(`${(e as Error).message}\n`);
    process.exit(1);
  });
}
