/**
 * Turns a driver failure into a Diagnosis (decisions.md §3): where it failed (stage), whose problem
 * it is (fault), what to do (fix steps naming the actual host, port, database and user; never the
 * password) and whether trying again can help. Known codes of pg, mysql2, mssql/tedious, mongodb,
 * node:sqlite, Node's network/TLS layer and S3 map to a stage; anything else is fault `us`, retryable.
 */
import { AppError } from '../platform/errors';
import type { ConnectionTarget, DbType } from './drivers/types';

export type Stage =
  | 'RESOLVE'
  | 'CONNECT'
  | 'TLS'
  | 'AUTH'
  | 'DATABASE'
  | 'PERMISSION'
  | 'TIMEOUT'
  | 'READ_SCHEMA'
  | 'QUERY';
export type Fault = 'user' | 'server' | 'third-party' | 'us';

export interface Diagnosis {
  stage: Stage;
  fault: Fault;
  title: string;
  explanation: string;
  fixSteps: string[];
  retryable: boolean;
}

type Target = Pick<ConnectionTarget, 'type' | 'host' | 'port' | 'database' | 'username'> &
  Partial<Pick<ConnectionTarget, 'password' | 'sslEnabled'>>;

/** Everything we know about an error chain: codes, numbers and messages of the error and its causes. */
export interface ErrorFacts {
  codes: Set<string>;
  numbers: Set<number>;
  messages: string[];
  names: Set<string>;
}

export function factsOf(error: unknown): ErrorFacts {
  const facts: ErrorFacts = { codes: new Set(), numbers: new Set(), messages: [], names: new Set() };
  const seen = new Set<unknown>();
  const visit = (e: unknown, depth: number) => {
    if (!e || typeof e !== 'object' || seen.has(e) || depth > 6) {
      if (typeof e === 'string') facts.messages.push(e);
      return;
    }
    seen.add(e);
    const o = e as Record<string, unknown>;
    if (typeof o.code === 'string') facts.codes.add(o.code);
    if (typeof o.code === 'number') facts.numbers.add(o.code);
    for (const k of ['errno', 'number']) if (typeof o[k] === 'number') facts.numbers.add(o[k] as number);
    if (typeof o.codeName === 'string') facts.codes.add(o.codeName);
    if (typeof o.errcode === 'number') facts.numbers.add(o.errcode);
    if (typeof o.errstr === 'string') facts.messages.push(o.errstr);
    if (typeof o.name === 'string') facts.names.add(o.name);
    if (typeof o.message === 'string' && o.message) facts.messages.push(o.message);
    if (typeof o.sqlMessage === 'string') facts.messages.push(o.sqlMessage);
    if (typeof (o as { $metadata?: unknown }).$metadata === 'object') {
      const status = (o.$metadata as { httpStatusCode?: number }).httpStatusCode;
      if (typeof status === 'number') facts.numbers.add(status);
    }
    for (const k of ['cause', 'originalError', 'reason', 'error']) if (o[k]) visit(o[k], depth + 1);
    if (Array.isArray(o.errors)) for (const x of o.errors) visit(x, depth + 1);
    if (Array.isArray(o.precedingErrors)) for (const x of o.precedingErrors) visit(x, depth + 1);
    // mongodb: ServerSelectionError.reason is a TopologyDescription with servers → { error }.
    const servers = (o.servers ?? (o.reason as { servers?: unknown })?.servers) as
      | Map<string, unknown>
      | undefined;
    if (servers instanceof Map)
      for (const s of servers.values()) visit((s as { error?: unknown })?.error, depth + 1);
  };
  visit(error, 0);
  return facts;
}

const hostPort = (t: Target) => {
  // A MongoDB connection string names its own hosts and ports (credentials removed).
  if (/^mongodb(\+srv)?:\/\//i.test(t.host)) return t.host.replace(/(\w+:\/\/)[^@\s/]+@/, '$1');
  const port = t.port ?? defaultPort[t.type];
  return port ? `${t.host}:${port}` : t.host;
};
/** `database "sales" on db.example.com:5432`: the place a fix step refers to. */
const dbAt = (t: Target) => `database "${t.database}" on ${hostPort(t)}`;

export const defaultPort: Record<DbType, number | null> = {
  POSTGRES: 5432,
  MYSQL: 3306,
  MARIADB: 3306,
  MSSQL: 1433,
  MONGODB: 27017,
  SQLITE: null,
};

const product: Record<DbType, string> = {
  POSTGRES: 'PostgreSQL',
  MYSQL: 'MySQL',
  MARIADB: 'MariaDB',
  MSSQL: 'SQL Server',
  MONGODB: 'MongoDB',
  SQLITE: 'SQLite',
};

const grantHint = (t: Target, object = '<table>') => {
  switch (t.type) {
    case 'POSTGRES':
      return `As an administrator of database "${t.database}" on ${hostPort(t)} run: GRANT SELECT ON ${object} TO "${t.username}"; (or GRANT pg_read_all_data TO "${t.username}" on PostgreSQL 14+).`;
    case 'MYSQL':
    case 'MARIADB':
      return `As an administrator on ${hostPort(t)} run: GRANT SELECT ON \`${t.database || '<database>'}\`.* TO '${t.username}'@'%';`;
    case 'MSSQL':
      return `As an administrator on ${hostPort(t)} run in database ${t.database || '<database>'}: ALTER ROLE db_datareader ADD MEMBER [${t.username}];`;
    case 'MONGODB':
      return `On ${hostPort(t)}, give user "${t.username}" the read role on database "${t.database || '<database>'}" (db.grantRolesToUser("${t.username}", [{role: "read", db: "${t.database || '<database>'}"}])).`;
    default:
      return `Make "${t.database}" readable by the Loupe process.`;
  }
};

interface Rule {
  when: (f: ErrorFacts, msg: string) => boolean;
  build: (t: Target, f: ErrorFacts, msg: string) => Diagnosis;
}

/** A code (or, for AWS SDK errors, the error name) is present anywhere in the chain. */
const has = (f: ErrorFacts, ...codes: string[]) => codes.some((c) => f.codes.has(c) || f.names.has(c));
const num = (f: ErrorFacts, ...ns: number[]) => ns.some((n) => f.numbers.has(n));

const tlsCertCodes = [
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_UNTRUSTED',
  'CERT_SIGNATURE_FAILURE',
  'CERT_REJECTED',
];

/** Ordered: the first rule that matches wins (specific before general). */
const rules: Rule[] = [
  // ---- Host policy (refused before any connection: the same answer whether a port is open or not) ----
  {
    when: (f) => has(f, 'LOUPE_HOST_REFUSED'),
    build: (t) => ({
      stage: 'CONNECT',
      fault: 'user',
      title: 'Database host not allowed',
      explanation: `Loupe does not connect to "${t.host}": it resolves to an address outside the ranges allowed for database connections (loopback, link-local and metadata addresses, unspecified, multicast, or a range the operator denied). No connection was attempted.`,
      fixSteps: [
        `Use the address of the database server as the network sees it (a private or public address), not "${t.host}".`,
        'If this address is really a database your operator wants reachable, ask them to add its range to LOUPE_DB_ALLOW_CIDRS.',
      ],
      retryable: false,
    }),
  },
  // ---- SQLite files (local path or S3 object) ----
  {
    when: (f) => has(f, 'LOUPE_SQLITE_OUTSIDE_ROOT'),
    build: (t, _f, m) => ({
      stage: 'DATABASE',
      fault: 'user',
      title: "SQLite source outside the organization's area",
      explanation: `"${t.database}" is not in this organization's SQLite folder or S3 prefix, so Loupe does not open it.`,
      fixSteps: [
        m.replace(/^.*?area\. /, '') || "Use a path relative to the organization's SQLite folder.",
        'Ask the operator to place the file in the organization folder (or its S3 prefix) if it is not there yet.',
      ],
      retryable: false,
    }),
  },
  {
    when: (f, m) => has(f, 'NoSuchKey', 'NoSuchBucket', 'NotFound') || (num(f, 404) && /s3/i.test(m)),
    build: (t) => ({
      stage: 'DATABASE',
      fault: 'user',
      title: 'SQLite file not found in S3',
      explanation: `The object ${t.database} does not exist (or the bucket name is wrong).`,
      fixSteps: [`Check the bucket and key in ${t.database}.`, 'Upload the database file to that location.'],
      retryable: false,
    }),
  },
  {
    when: (f) => has(f, 'AccessDenied', 'Forbidden', 'InvalidAccessKeyId', 'SignatureDoesNotMatch'),
    build: (t) => ({
      stage: 'PERMISSION',
      fault: 'user',
      title: 'Access to the SQLite file in S3 was denied',
      explanation: `S3 refused to return ${t.database} to the Loupe function.`,
      fixSteps: [
        `Allow s3:GetObject on ${t.database} for the Loupe functions' role (bucket policy or IAM).`,
        'If the object is encrypted with a customer-managed KMS key, allow kms:Decrypt too.',
      ],
      retryable: false,
    }),
  },
  {
    when: (f, m) => num(f, 14) && /unable to open database file|cannot open/i.test(m),
    build: (t) => ({
      stage: 'DATABASE',
      fault: 'user',
      title: 'SQLite file not found',
      explanation: `SQLite could not open "${t.database}": the file does not exist or cannot be read.`,
      fixSteps: [
        `Check the path "${t.database}" (relative to the organization's SQLite folder).`,
        `Make sure "${t.database}" exists there and the Loupe process may read it.`,
      ],
      retryable: false,
    }),
  },
  {
    when: (f, m) => num(f, 26) || /file is not a database/i.test(m),
    build: (t) => ({
      stage: 'DATABASE',
      fault: 'user',
      title: 'Not a SQLite database',
      explanation: `"${t.database}" exists but is not a SQLite database file (or it is encrypted).`,
      fixSteps: [
        `Point the connection at the .sqlite/.db file itself instead of "${t.database}".`,
        'Unencrypted SQLite 3 files only.',
      ],
      retryable: false,
    }),
  },
  {
    when: (f, m) => num(f, 11) && /malformed|corrupt/i.test(m),
    build: (t) => ({
      stage: 'DATABASE',
      fault: 'server',
      title: 'The SQLite file is damaged',
      explanation: `SQLite reports that "${t.database}" is malformed.`,
      fixSteps: [
        `Restore "${t.database}" from a backup or re-export it.`,
        `Check with: sqlite3 ${t.database} "PRAGMA integrity_check"`,
      ],
      retryable: false,
    }),
  },
  // ---- Name resolution ----
  {
    when: (f, m) => has(f, 'ENOTFOUND', 'EAI_NONAME', 'EAI_FAIL') || /getaddrinfo ENOTFOUND/i.test(m),
    build: (t) => ({
      stage: 'RESOLVE',
      fault: 'user',
      title: 'Host name not found',
      explanation: `DNS has no address for "${t.host}".`,
      fixSteps: [
        `Check the spelling of the host "${t.host}".`,
        `If "${t.host}" is a private name, make sure the Loupe functions run in a network (VPC) whose DNS resolves it.`,
        `Replace "${t.host}" with the host name or IP address your database provider shows for external connections to database "${t.database}".`,
      ],
      retryable: false,
    }),
  },
  {
    when: (f, m) => has(f, 'EAI_AGAIN') || /getaddrinfo EAI_AGAIN/i.test(m),
    build: (t) => ({
      stage: 'RESOLVE',
      fault: 'third-party',
      title: 'DNS lookup failed temporarily',
      explanation: `The name "${t.host}" could not be resolved right now (temporary DNS failure).`,
      fixSteps: [
        'Try again in a minute.',
        `If it keeps failing, check that "${t.host}" resolves from the Loupe network.`,
      ],
      retryable: true,
    }),
  },
  // ---- TLS ----
  {
    when: (f, m) =>
      has(f, 'HANDSHAKE_NO_SSL_SUPPORT') ||
      /server does not support SSL|does not support secure connection|server does not support encryption|ssl is not enabled on the server/i.test(
        m,
      ),
    build: (t) => ({
      stage: 'TLS',
      fault: 'user',
      title: 'The server does not accept TLS',
      explanation: `sslEnabled is on, but ${product[t.type]} at ${hostPort(t)} does not offer TLS.`,
      fixSteps: [
        `Enable TLS on the server at ${hostPort(t)} (recommended), or`,
        `turn sslEnabled off for the connection to ${dbAt(t)} if the network path to it is private (traffic is then unencrypted).`,
      ],
      retryable: false,
    }),
  },
  {
    when: (f, m) =>
      (has(f, '28000') && /no encryption|SSL off/i.test(m)) ||
      num(f, 3159) ||
      has(f, 'ER_SECURE_TRANSPORT_REQUIRED') ||
      /requires? (encryption|SSL|secure transport)|SSL connection is required|insecure transport are prohibited/i.test(
        m,
      ),
    build: (t) => ({
      stage: 'TLS',
      fault: 'user',
      title: 'The server requires TLS',
      explanation: `${product[t.type]} at ${hostPort(t)} refuses unencrypted connections.`,
      fixSteps: [
        `Turn sslEnabled on for the connection to ${dbAt(t)}.`,
        `If the certificate of ${hostPort(t)} comes from a private CA, the operator adds that CA with NODE_EXTRA_CA_CERTS.`,
      ],
      retryable: false,
    }),
  },
  {
    when: (f) => has(f, 'ERR_TLS_CERT_ALTNAME_INVALID'),
    build: (t) => ({
      stage: 'TLS',
      fault: 'user',
      title: 'Certificate does not match the host name',
      explanation: `The server at ${hostPort(t)} presented a certificate issued for a different name than "${t.host}".`,
      fixSteps: [
        `Replace "${t.host}" with the host name written on the certificate of ${hostPort(t)} (often the provider endpoint, not an IP address or alias).`,
        `Or reissue the server certificate to include "${t.host}".`,
      ],
      retryable: false,
    }),
  },
  {
    when: (f) => has(f, 'CERT_HAS_EXPIRED', 'CERT_NOT_YET_VALID'),
    build: (t) => ({
      stage: 'TLS',
      fault: 'server',
      title: 'Server certificate expired or not yet valid',
      explanation: `The certificate presented by ${hostPort(t)} is outside its validity period.`,
      fixSteps: [
        `Renew the certificate of the server at ${hostPort(t)}.`,
        `Check the clock of the database server ${t.host}.`,
      ],
      retryable: false,
    }),
  },
  {
    when: (f, m) =>
      has(f, ...tlsCertCodes) || /self[- ]signed certificate|unable to verify the first certificate/i.test(m),
    build: (t) => ({
      stage: 'TLS',
      fault: 'user',
      title: 'Server certificate not trusted',
      explanation: `The certificate of ${hostPort(t)} is self-signed or signed by a CA Loupe does not trust. Loupe verifies certificates when sslEnabled is on.`,
      fixSteps: [
        `Give the server at ${hostPort(t)} a certificate from a public CA, or`,
        "have the operator add your CA's PEM bundle to the Loupe functions with the NODE_EXTRA_CA_CERTS environment variable.",
      ],
      retryable: false,
    }),
  },
  {
    when: (f, m) =>
      [...f.codes].some((c) => c.startsWith('ERR_SSL_') || c === 'EPROTO') ||
      /ssl routines|wrong version number|tls handshake|secure TLS connection was established/i.test(m),
    build: (t) => ({
      stage: 'TLS',
      fault: 'user',
      title: 'TLS handshake failed',
      explanation: `Loupe and the server at ${hostPort(t)} could not agree on a TLS session.`,
      fixSteps: [
        `Check that port ${t.port ?? defaultPort[t.type]} on ${t.host} is the ${product[t.type]} port (not an HTTP or proxy port).`,
        `Check that the server at ${hostPort(t)} supports TLS 1.2 or newer, or turn sslEnabled off if it has no TLS.`,
      ],
      retryable: false,
    }),
  },
  // ---- Database ----
  {
    when: (f, m) =>
      has(f, '3D000', 'ER_BAD_DB_ERROR') ||
      num(f, 1049, 4060) ||
      /database ".*" does not exist|unknown database|cannot open database/i.test(m),
    build: (t) => ({
      stage: 'DATABASE',
      fault: 'user',
      title: 'Database not found',
      explanation: `${product[t.type]} at ${hostPort(t)} has no database "${t.database}" that user "${t.username}" can open.`,
      fixSteps: [
        `Check the spelling (and case) of the database name "${t.database}" on ${hostPort(t)}.`,
        t.type === 'POSTGRES'
          ? `List the databases on ${hostPort(t)} with: SELECT datname FROM pg_database; (logged in as "${t.username}").`
          : t.type === 'MSSQL'
            ? `List the databases on ${hostPort(t)} with: SELECT name FROM sys.databases; and make sure "${t.username}" is a user in "${t.database}".`
            : t.type === 'MONGODB'
              ? `List the databases on ${hostPort(t)} with: show dbs (as "${t.username}").`
              : `List the databases on ${hostPort(t)} that "${t.username}" may see with: SHOW DATABASES;`,
      ],
      retryable: false,
    }),
  },
  // ---- SQL Server login-time refusals (tedious reports them as ELOGIN with the server's message) ----
  {
    when: (f, m) => num(f, 40615) || /Client with IP address .* is not allowed to access the server/i.test(m),
    build: (t, _f, m) => {
      const ip = /IP address '([^']+)'/.exec(m)?.[1];
      return {
        stage: 'CONNECT',
        fault: 'user',
        title: "The server's firewall blocks Loupe",
        explanation: `Azure SQL at ${hostPort(t)} refused the connection from ${ip ? `address ${ip}` : "Loupe's address"}.`,
        fixSteps: [
          `Add a server-level firewall rule allowing ${ip ?? "Loupe's outbound address"} on the Azure SQL server "${t.host}".`,
          'Firewall changes can take up to five minutes to apply; then test again.',
        ],
        retryable: false,
      };
    },
  },
  // ---- Authentication ----
  {
    when: (f, m) =>
      num(f, 1862, 1820, 18487, 18488, 3118, 18486) ||
      has(f, 'ER_MUST_CHANGE_PASSWORD_LOGIN', 'ER_ACCOUNT_HAS_BEEN_LOCKED') ||
      /password has expired|must change|account is (currently )?locked/i.test(m),
    build: (t) => ({
      stage: 'AUTH',
      fault: 'user',
      title: 'Account locked or password expired',
      explanation: `The account "${t.username}" cannot log in until its password is reset or it is unlocked.`,
      fixSteps: [
        `Reset the password of "${t.username}" on ${hostPort(t)} (or unlock the account), then update it in Loupe for ${dbAt(t)}.`,
      ],
      retryable: false,
    }),
  },
  {
    when: (f) => num(f, 1044) || has(f, 'ER_DBACCESS_DENIED_ERROR'),
    build: (t) => ({
      stage: 'PERMISSION',
      fault: 'user',
      title: 'No access to the database',
      explanation: `User "${t.username}" logged in but may not use database "${t.database}" (MySQL and MariaDB answer the same way when the database does not exist and the user has no right to know).`,
      fixSteps: [grantHint(t), `Or check the database name "${t.database}".`],
      retryable: false,
    }),
  },
  {
    when: (f, m) =>
      has(
        f,
        '28P01',
        'ER_ACCESS_DENIED_ERROR',
        'ER_ACCESS_DENIED_NO_PASSWORD_ERROR',
        'AuthenticationFailed',
        'ELOGIN',
      ) ||
      num(f, 1045, 1698, 18456, 18452) ||
      /password authentication failed|authentication failed|login failed for user|access denied for user/i.test(
        m,
      ),
    build: (t) => ({
      stage: 'AUTH',
      fault: 'user',
      title: 'Login failed',
      explanation: `${product[t.type]} at ${hostPort(t)} rejected user "${t.username}" with the stored password.`,
      fixSteps: [
        `Check the username "${t.username}" and enter the password again for ${product[t.type]} ${dbAt(t)}.`,
        `Make sure "${t.username}" exists on ${hostPort(t)} and may log in to database "${t.database}" from the Loupe network${t.type === 'MYSQL' || t.type === 'MARIADB' ? ` (MySQL users are 'user'@'host': allow '${t.username}'@'%' or Loupe's address)` : ''}.`,
        ...(t.type === 'MONGODB'
          ? [
              `If "${t.username}" is defined in another database than "${t.database}", add ?authSource=<that database> to the host.`,
            ]
          : []),
      ],
      retryable: false,
    }),
  },
  {
    when: (f, m) =>
      (has(f, '28000') && /pg_hba\.conf/i.test(m)) || num(f, 1130) || has(f, 'ER_HOST_NOT_PRIVILEGED'),
    build: (t) => ({
      stage: 'AUTH',
      fault: 'server',
      title: 'The server does not allow connections from Loupe',
      explanation: `${product[t.type]} at ${hostPort(t)} has no rule allowing user "${t.username}" to connect from Loupe's address.`,
      fixSteps:
        t.type === 'POSTGRES'
          ? [
              `On the server at ${hostPort(t)}, add a pg_hba.conf line for database "${t.database}", user "${t.username}" and Loupe's address (hostssl … scram-sha-256), then reload it.`,
            ]
          : [
              `On ${hostPort(t)}, create or grant the user for Loupe's host: CREATE USER '${t.username}'@'%' … / GRANT SELECT ON \`${t.database || '<database>'}\`.* TO '${t.username}'@'%'.`,
            ],
      retryable: false,
    }),
  },
  {
    when: (f, m) => has(f, '28000') || /role ".*" does not exist/i.test(m),
    build: (t) => ({
      stage: 'AUTH',
      fault: 'user',
      title: 'User not accepted',
      explanation: `${product[t.type]} did not accept user "${t.username}" (it may not exist).`,
      fixSteps: [
        `Check the username "${t.username}" for ${dbAt(t)}.`,
        `Create "${t.username}" on ${hostPort(t)} or ask its database administrator for a login to database "${t.database}".`,
      ],
      retryable: false,
    }),
  },
  {
    when: (f, m) =>
      num(f, 1251) ||
      has(f, 'ER_NOT_SUPPORTED_AUTH_MODE') ||
      /authentication method .* not supported|SASL/i.test(m),
    build: (t) => ({
      stage: 'AUTH',
      fault: 'user',
      title: 'Authentication method not supported',
      explanation: `The server asked for an authentication method the driver cannot use for "${t.username}", or no password was given.`,
      fixSteps: [
        `Make sure the connection to ${dbAt(t)} has a password for "${t.username}".`,
        t.type === 'POSTGRES'
          ? `Use scram-sha-256 or md5 password authentication for "${t.username}" on ${hostPort(t)}.`
          : `Use caching_sha2_password or mysql_native_password for "${t.username}" on ${hostPort(t)}.`,
      ],
      retryable: false,
    }),
  },
  // ---- Permissions ----
  {
    when: (f, m) =>
      has(
        f,
        '42501',
        'ER_TABLEACCESS_DENIED_ERROR',
        'ER_COLUMNACCESS_DENIED_ERROR',
        'ER_DBACCESS_DENIED_ERROR',
        'ER_SPECIFIC_ACCESS_DENIED_ERROR',
        'Unauthorized',
      ) ||
      num(f, 1142, 1143, 1227, 229, 230, 262, 916, 297, 300) ||
      /permission denied|not authorized|command denied/i.test(m),
    build: (t, _f, m) => {
      const object = /\b(?:relation|table|object|view|collection|on)\s+['"`]?([\w.$-]+)['"`]?/i.exec(m)?.[1];
      return {
        stage: 'PERMISSION',
        fault: 'user',
        title: 'Missing privilege',
        explanation: `User "${t.username}" lacks a privilege it needs${object ? ` on ${object}` : ''} in database "${t.database}".`,
        fixSteps: [grantHint(t, object), 'Loupe only reads: SELECT (read) privileges are enough.'],
        retryable: false,
      };
    },
  },
  // ---- The SQLite child process died under a statement (drivers/sqlite.ts) ----
  {
    when: (f) => has(f, 'LOUPE_SQLITE_STOPPED'),
    build: (t) => ({
      stage: 'CONNECT',
      fault: 'server',
      title: 'The SQLite process stopped',
      explanation: `The process that had SQLite file "${t.database}" open stopped during the statement (killed or out of memory).`,
      fixSteps: ['Try again: the next request opens the file in a new process.'],
      retryable: true,
    }),
  },
  // ---- Server shutting down or restarting (503 with Retry-After, see isServerShutdown) ----
  {
    when: (f, m) => isShutdown(f, m),
    build: (t) => ({
      stage: 'CONNECT',
      fault: 'server',
      title: 'The server is shutting down or restarting',
      explanation: `${product[t.type]} at ${hostPort(t)} ended the session or refused it because it is shutting down, starting up or was told to end it by an administrator.`,
      fixSteps: [
        'Try again in a few seconds: the connection recovers by itself once the server is back.',
        `If it persists, check the status of the server at ${hostPort(t)}.`,
      ],
      retryable: true,
    }),
  },
  // ---- Server busy / unavailable ----
  {
    when: (f, m) =>
      has(f, '53300', '57P03', '57P01', '57P02', 'ER_CON_COUNT_ERROR', 'ER_TOO_MANY_USER_CONNECTIONS') ||
      num(f, 1040, 1203, 10928, 10929, 40613, 40197, 40501) ||
      /too many (connections|clients)|the database system is (starting up|shutting down)/i.test(m),
    build: (t) => ({
      stage: 'CONNECT',
      fault: 'server',
      title: 'The server is busy or unavailable',
      explanation: `${product[t.type]} at ${hostPort(t)} accepted the connection but cannot serve it now (connection limit reached, starting, or shutting down).`,
      fixSteps: [
        'Try again in a minute.',
        `If it persists, raise the connection limit of the server at ${hostPort(t)} or check its status.`,
      ],
      retryable: true,
    }),
  },
  // ---- Network ----
  {
    when: (f, m) => has(f, 'ECONNREFUSED') || /ECONNREFUSED|connection refused/i.test(m),
    build: (t) => ({
      stage: 'CONNECT',
      fault: 'server',
      title: 'Connection refused',
      explanation: `Nothing is accepting connections at ${hostPort(t)}.`,
      fixSteps: [
        `Check that ${product[t.type]} is running and listening on ${hostPort(t)} (port ${t.port ?? defaultPort[t.type]}).`,
        `Check that the server on ${t.host} listens on its external address (listen_addresses / bind-address), not only localhost.`,
        `Check that a firewall or security group allows inbound connections to ${hostPort(t)} from Loupe.`,
      ],
      retryable: true,
    }),
  },
  {
    when: (f, m) =>
      has(
        f,
        'ETIMEDOUT',
        'ESOCKETTIMEDOUT',
        'MongoServerSelectionError',
        'ETIMEOUT',
        'CONNECT_TIMEOUT',
        'LOUPE_CONNECT_TIMEOUT',
        'LOUPE_QUERY_TIMEOUT',
      ) ||
      f.names.has('MongoServerSelectionError') ||
      /timeout expired|connection timeout|timed out|timeout exceeded when trying to connect|Failed to connect to .* in \d+ms/i.test(
        m,
      ),
    build: (t) => ({
      stage: 'TIMEOUT',
      fault: 'third-party',
      title: 'Connection timed out',
      explanation: `No answer from ${hostPort(t)} in time: the network path is blocked or the server is overloaded.`,
      fixSteps: [
        `Allow inbound connections to ${hostPort(t)} from Loupe in the firewall, security group or the provider's IP allowlist.`,
        `Make sure ${hostPort(t)} is reachable from the internet or from the Loupe network (VPC).`,
        `Check that port ${t.port ?? defaultPort[t.type]} is the ${product[t.type]} port of ${t.host}.`,
      ],
      retryable: true,
    }),
  },
  {
    when: (f, m) =>
      has(
        f,
        'EHOSTUNREACH',
        'ENETUNREACH',
        'ECONNRESET',
        'ECONNABORTED',
        'EPIPE',
        'ESOCKET',
        'ECONNCLOSED',
        'ECLOSE',
        'PROTOCOL_CONNECTION_LOST',
        'LOUPE_CONNECTION_LOST',
        'MongoNetworkError',
      ) ||
      f.names.has('MongoNetworkError') ||
      /Connection terminated|socket hang up|ECONNRESET|EHOSTUNREACH|ENETUNREACH|Connection lost|in closed state|Connection is closed/i.test(
        m,
      ),
    build: (t) => ({
      stage: 'CONNECT',
      fault: 'third-party',
      title: 'The network connection failed',
      explanation: `The connection to ${hostPort(t)} could not be established or was dropped.`,
      fixSteps: [
        `Check that ${hostPort(t)} is reachable from Loupe (routing, firewall, VPN).`,
        `Check that port ${t.port ?? defaultPort[t.type]} is the ${product[t.type]} port of ${t.host}.`,
        'Try again: transient network failures clear up on their own.',
      ],
      retryable: true,
    }),
  },
];

/** Removes the password (and any credentials in URLs) from driver messages. */
export function sanitize(message: string, target?: { password?: string }): string {
  let m = message.replace(/(\w+:\/\/)[^@\s/]+@/g, '$1***@');
  if (target?.password && target.password.length >= 3) m = m.split(target.password).join('***');
  return m.slice(0, 1000);
}

const messageOf = (e: unknown) =>
  e instanceof Error ? e.message : typeof e === 'string' ? e : JSON.stringify(e ?? 'Unknown error');

/** Diagnoses a failure. `stage` is where the caller was (READ_SCHEMA, QUERY) for errors that carry no stage. */
export function diagnose(error: unknown, target: Target, stage?: Stage): Diagnosis {
  const facts = factsOf(error);
  const msg = facts.messages.join(' | ');
  for (const rule of rules) if (rule.when(facts, msg)) return rule.build(target, facts, msg);
  return {
    stage: stage ?? 'CONNECT',
    fault: 'us',
    title: 'Unexpected error',
    explanation: `Loupe hit an error it does not recognise while talking to ${product[target.type]} at ${hostPort(target)}: ${sanitize(messageOf(error), target)}`,
    fixSteps: [
      'Try again.',
      `If it keeps happening, contact support with the request id (connection to ${target.type === 'SQLITE' ? `"${target.database}"` : dbAt(target)}).`,
    ],
    retryable: true,
  };
}

/**
 * The database said it is shutting down, starting up, or ended the session on an administrator's
 * command: PostgreSQL 57P01 admin_shutdown, 57P02 crash_shutdown, 57P03 cannot_connect_now; MySQL/MariaDB
 * 1053 ER_SERVER_SHUTDOWN, 1077 normal shutdown; SQL Server 6005 (SHUTDOWN is in progress); MongoDB 91
 * ShutdownInProgress, 11600 InterruptedAtShutdown.
 */
function isShutdown(f: ErrorFacts, m: string): boolean {
  return (
    has(f, '57P01', '57P02', '57P03', 'ER_SERVER_SHUTDOWN', 'ShutdownInProgress', 'InterruptedAtShutdown') ||
    num(f, 1053, 1077, 6005, 91, 11600) ||
    /the database system is (starting up|shutting down)|terminating connection due to administrator command|server shutdown in progress|SHUTDOWN is in progress/i.test(
      m,
    )
  );
}

/** Seconds a caller should wait before retrying on a database that is shutting down or restarting. */
export const SHUTDOWN_RETRY_AFTER_S = 5;

export function isServerShutdown(error: unknown): boolean {
  const f = factsOf(error);
  return isShutdown(f, f.messages.join(' | '));
}

/** 503 DATABASE_UNAVAILABLE with Retry-After: the database said it is going away (see isShutdown). */
export function databaseUnavailable(error: unknown, target: Target): AppError {
  const diagnosis = diagnose(error, target, 'CONNECT');
  return new AppError(
    503,
    'DATABASE_UNAVAILABLE',
    `${diagnosis.title}: ${sanitize(messageOf(error), target)}`,
    { diagnosis, retryAfterSeconds: SHUTDOWN_RETRY_AFTER_S },
    { 'Retry-After': String(SHUTDOWN_RETRY_AFTER_S) },
  );
}

/** Stages that mean "we never got a working session". */
export const connectionStages = new Set<Stage>(['RESOLVE', 'CONNECT', 'TLS', 'AUTH', 'DATABASE', 'TIMEOUT']);

export function connectionFailed(error: unknown, target: Target): AppError {
  if (error instanceof AppError) return error;
  if (isServerShutdown(error)) return databaseUnavailable(error, target);
  const diagnosis = diagnose(error, target, 'CONNECT');
  return new AppError(422, 'CONNECTION_FAILED', `${diagnosis.title}: ${sanitize(messageOf(error), target)}`, {
    diagnosis,
  });
}

export function introspectionFailed(error: unknown, target: Target): AppError {
  if (error instanceof AppError) return error;
  const diagnosis = diagnose(error, target, 'READ_SCHEMA');
  return new AppError(
    422,
    'INTROSPECTION_FAILED',
    `Could not read the schema. ${diagnosis.title}: ${sanitize(messageOf(error), target)}`,
    { diagnosis },
  );
}
