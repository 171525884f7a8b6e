/**
 * Diagnosis of failures that cannot be provoked on this machine (no SQL Server, no real MongoDB,
 * no TLS-enabled database), using the drivers' own error classes with the codes and messages
 * they produce. Failures that can be provoked are in test/integration/drivers-diagnosis.test.ts.
 */

import { MongoNetworkError, MongoServerError, MongoServerSelectionError } from 'mongodb';
import sql from 'mssql';
import { describe, expect, it } from 'vitest';
import {
  connectionFailed,
  type Diagnosis,
  diagnose,
  introspectionFailed,
  sanitize,
} from '../../shared/databases/diagnosis';
import type { ConnectionTarget } from '../../shared/databases/drivers/types';
import { HostRefusedError } from '../../shared/databases/host-policy';
import { isQueryTimeout, queryError } from '../../shared/databases/run';
import { SqliteSourceRefused } from '../../shared/databases/sqlite-source';

const mssqlTarget: ConnectionTarget = {
  id: 'c1',
  version: '1',
  type: 'MSSQL',
  host: 'sql.example.com',
  port: 1433,
  database: 'sales',
  username: 'reporter',
  password: 'S3cret-pass',
  sslEnabled: true,
};
const mongoTarget: ConnectionTarget = {
  ...mssqlTarget,
  type: 'MONGODB',
  host: 'mongo.example.com',
  port: 27017,
};
const pgTarget: ConnectionTarget = { ...mssqlTarget, type: 'POSTGRES', host: 'pg.example.com', port: 5432 };

/** mssql wraps tedious errors: ConnectionError(originalError) keeps code and message. */
const tediousLogin = (message: string) =>
  new sql.ConnectionError(Object.assign(new Error(message), { code: 'ELOGIN' }) as never);
const requestError = (message: string, number: number) => {
  const original = Object.assign(new Error(message), {
    code: 'EREQUEST',
    info: { number, lineNumber: 1, state: 1, class: 16 },
  });
  return new sql.RequestError(original as never);
};

const check = (d: Diagnosis, want: Partial<Diagnosis>, target: ConnectionTarget) => {
  expect(d).toMatchObject(want);
  expect(d.fixSteps.length).toBeGreaterThan(0);
  expect(JSON.stringify(d)).not.toContain(target.password);
};

describe('SQL Server failures (mssql error objects)', () => {
  it('ELOGIN "Login failed for user" (18456) is AUTH / user naming the user', () => {
    const d = diagnose(tediousLogin("Login failed for user 'reporter'."), mssqlTarget);
    check(d, { stage: 'AUTH', fault: 'user', title: 'Login failed', retryable: false }, mssqlTarget);
    expect(d.fixSteps[0]).toContain('reporter');
  });

  it('ELOGIN "Cannot open database" (4060) is DATABASE / user naming the database', () => {
    const d = diagnose(
      tediousLogin('Cannot open database "sales" requested by the login. The login failed.'),
      mssqlTarget,
    );
    check(d, { stage: 'DATABASE', fault: 'user', title: 'Database not found' }, mssqlTarget);
    expect(d.explanation).toContain('sales');
    expect(d.fixSteps.join(' ')).toContain('sys.databases');
  });

  it('ELOGIN for a locked account is AUTH "Account locked or password expired"', () => {
    const d = diagnose(
      tediousLogin("Login failed for user 'reporter' because the account is currently locked out."),
      mssqlTarget,
    );
    check(d, { stage: 'AUTH', title: 'Account locked or password expired' }, mssqlTarget);
  });

  it('Azure SQL firewall refusal (40615) is CONNECT / user naming the client address', () => {
    const d = diagnose(
      tediousLogin(
        "Cannot open server 'sql' requested by the login. Client with IP address '203.0.113.9' is not allowed to access the server.",
      ),
      mssqlTarget,
    );
    check(d, { stage: 'CONNECT', fault: 'user' }, mssqlTarget);
    expect(d.fixSteps[0]).toContain('203.0.113.9');
  });

  it('ETIMEOUT on connect ("Failed to connect … in 10000ms") is TIMEOUT / third-party', () => {
    const d = diagnose(
      new sql.ConnectionError('Failed to connect to sql.example.com:1433 in 10000ms', 'ETIMEOUT'),
      mssqlTarget,
    );
    check(d, { stage: 'TIMEOUT', fault: 'third-party', retryable: true }, mssqlTarget);
    expect(d.fixSteps[0]).toContain('sql.example.com:1433');
  });

  it('ESOCKET with ENOTFOUND is RESOLVE, with ECONNREFUSED is CONNECT refused', () => {
    check(
      diagnose(
        new sql.ConnectionError(
          'Failed to connect to sql.example.com:1433 - getaddrinfo ENOTFOUND sql.example.com',
          'ESOCKET',
        ),
        mssqlTarget,
      ),
      { stage: 'RESOLVE' },
      mssqlTarget,
    );
    check(
      diagnose(
        new sql.ConnectionError(
          'Failed to connect to sql.example.com:1433 - connect ECONNREFUSED 10.0.0.1:1433',
          'ESOCKET',
        ),
        mssqlTarget,
      ),
      { stage: 'CONNECT', title: 'Connection refused' },
      mssqlTarget,
    );
    check(
      diagnose(new sql.ConnectionError('Connection lost - read ECONNRESET', 'ESOCKET'), mssqlTarget),
      { stage: 'CONNECT', fault: 'third-party', retryable: true },
      mssqlTarget,
    );
  });

  it('EENCRYPT "Server requires encryption" is TLS / user (turn sslEnabled on)', () => {
    const d = diagnose(
      new sql.ConnectionError(
        "Server requires encryption, set 'encrypt' config option to true.",
        'EENCRYPT' as never,
      ),
      {
        ...mssqlTarget,
        sslEnabled: false,
      },
    );
    check(d, { stage: 'TLS', title: 'The server requires TLS' }, mssqlTarget);
  });

  it('a self-signed server certificate is TLS / user and mentions NODE_EXTRA_CA_CERTS', () => {
    const cause = Object.assign(new Error('self-signed certificate'), {
      code: 'DEPTH_ZERO_SELF_SIGNED_CERT',
    });
    const d = diagnose(
      new sql.ConnectionError(
        Object.assign(new Error('Failed to connect'), { code: 'ESOCKET', cause }) as never,
      ),
      mssqlTarget,
    );
    check(d, { stage: 'TLS', title: 'Server certificate not trusted' }, mssqlTarget);
    expect(d.fixSteps.join(' ')).toContain('NODE_EXTRA_CA_CERTS');
  });

  it('permission denied (229) is PERMISSION with db_datareader advice; invalid object (208) is a QUERY failure', () => {
    const d = diagnose(
      requestError(
        "The SELECT permission was denied on the object 'orders', database 'sales', schema 'dbo'.",
        229,
      ),
      mssqlTarget,
      'QUERY',
    );
    check(d, { stage: 'PERMISSION', fault: 'user' }, mssqlTarget);
    expect(d.fixSteps[0]).toContain('db_datareader ADD MEMBER [reporter]');
    const e = queryError(requestError("Invalid object name 'nope'.", 208), mssqlTarget, {
      timeoutMs: 25_000,
    });
    expect(e.status).toBe(422);
    expect(e.code).toBe('QUERY_FAILED');
    expect(e.details).toMatchObject({ code: '208' });
    expect(e.message).toContain("Invalid object name 'nope'");
  });

  it('a request ETIMEOUT is 504 QUERY_TIMEOUT, a connection ETIMEOUT is CONNECTION_FAILED', () => {
    const timeout = new sql.RequestError('Timeout: Request failed to complete in 25000ms', 'ETIMEOUT');
    expect(isQueryTimeout(timeout)).toBe(true);
    expect(queryError(timeout, mssqlTarget, { timeoutMs: 25_000 })).toMatchObject({
      status: 504,
      code: 'QUERY_TIMEOUT',
    });
    const connect = queryError(
      new sql.ConnectionError('Failed to connect to sql.example.com:1433 in 10000ms', 'ETIMEOUT'),
      mssqlTarget,
      {
        timeoutMs: 25_000,
      },
    );
    expect(connect).toMatchObject({ status: 422, code: 'CONNECTION_FAILED' });
  });

  it('connectionFailed and introspectionFailed return 422 with details.diagnosis and no password', () => {
    const err = tediousLogin("Login failed for user 'reporter'. S3cret-pass");
    const c = connectionFailed(err, mssqlTarget);
    expect(c).toMatchObject({ status: 422, code: 'CONNECTION_FAILED' });
    expect((c.details as { diagnosis: Diagnosis }).diagnosis.stage).toBe('AUTH');
    expect(c.message).not.toContain('S3cret-pass');
    const i = introspectionFailed(
      requestError('The SELECT permission was denied on the object', 229),
      mssqlTarget,
    );
    expect(i).toMatchObject({ status: 422, code: 'INTROSPECTION_FAILED' });
    expect((i.details as { diagnosis: Diagnosis }).diagnosis.stage).toBe('PERMISSION');
  });
});

describe('MongoDB failures (mongodb error objects)', () => {
  it('AuthenticationFailed (18) is AUTH with an authSource hint', () => {
    const d = diagnose(
      new MongoServerError({
        ok: 0,
        code: 18,
        codeName: 'AuthenticationFailed',
        errmsg: 'Authentication failed.',
      }),
      mongoTarget,
    );
    check(d, { stage: 'AUTH', fault: 'user', title: 'Login failed' }, mongoTarget);
    expect(d.fixSteps.join(' ')).toContain('authSource');
  });

  it('Unauthorized (13) is PERMISSION with the read role', () => {
    const d = diagnose(
      new MongoServerError({
        ok: 0,
        code: 13,
        codeName: 'Unauthorized',
        errmsg: 'not authorized on sales to execute command { find: "orders" }',
      }),
      mongoTarget,
      'QUERY',
    );
    check(d, { stage: 'PERMISSION', fault: 'user' }, mongoTarget);
    expect(d.fixSteps[0]).toContain('role: "read"');
  });

  it('MaxTimeMSExpired (50) is a query timeout', () => {
    const e = new MongoServerError({
      ok: 0,
      code: 50,
      codeName: 'MaxTimeMSExpired',
      errmsg: 'operation exceeded time limit',
    });
    expect(queryError(e, mongoTarget, { timeoutMs: 25_000 })).toMatchObject({
      status: 504,
      code: 'QUERY_TIMEOUT',
    });
  });

  it('server selection timeout is TIMEOUT; a network error is CONNECT', () => {
    check(
      diagnose(
        new MongoServerSelectionError('Server selection timed out after 10000 ms', {
          servers: new Map(),
        } as never),
        mongoTarget,
      ),
      { stage: 'TIMEOUT', fault: 'third-party' },
      mongoTarget,
    );
    check(
      diagnose(new MongoNetworkError('connection 1 to 10.0.0.1:27017 closed'), mongoTarget),
      { stage: 'CONNECT' },
      mongoTarget,
    );
  });
});

describe('network, TLS and other codes', () => {
  const node = (code: string, message = code) => Object.assign(new Error(message), { code });
  const cases: [string, unknown, Partial<Diagnosis>][] = [
    [
      'ENOTFOUND',
      node('ENOTFOUND', 'getaddrinfo ENOTFOUND pg.example.com'),
      { stage: 'RESOLVE', fault: 'user', retryable: false },
    ],
    [
      'EAI_AGAIN',
      node('EAI_AGAIN', 'getaddrinfo EAI_AGAIN pg.example.com'),
      { stage: 'RESOLVE', fault: 'third-party', retryable: true },
    ],
    ['ECONNREFUSED', node('ECONNREFUSED'), { stage: 'CONNECT', fault: 'server', retryable: true }],
    [
      'ETIMEDOUT',
      node('ETIMEDOUT', 'connect ETIMEDOUT 10.0.0.1:5432'),
      { stage: 'TIMEOUT', fault: 'third-party' },
    ],
    ['EHOSTUNREACH', node('EHOSTUNREACH'), { stage: 'CONNECT', fault: 'third-party' }],
    [
      'hostname mismatch',
      node('ERR_TLS_CERT_ALTNAME_INVALID', "Hostname/IP does not match certificate's altnames"),
      { stage: 'TLS', title: 'Certificate does not match the host name' },
    ],
    [
      'expired certificate',
      node('CERT_HAS_EXPIRED', 'certificate has expired'),
      { stage: 'TLS', fault: 'server' },
    ],
    [
      'untrusted chain',
      node('SELF_SIGNED_CERT_IN_CHAIN', 'self-signed certificate in certificate chain'),
      { stage: 'TLS', fault: 'user' },
    ],
    [
      'unknown CA',
      node('UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'unable to get local issuer certificate'),
      { stage: 'TLS' },
    ],
    [
      'TLS protocol error',
      node('ERR_SSL_WRONG_VERSION_NUMBER', 'wrong version number'),
      { stage: 'TLS', title: 'TLS handshake failed' },
    ],
    [
      'PG TLS required (28000 no encryption)',
      Object.assign(
        new Error(
          'no pg_hba.conf entry for host "1.2.3.4", user "reporter", database "sales", no encryption',
        ),
        { code: '28000' },
      ),
      { stage: 'TLS', title: 'The server requires TLS' },
    ],
    [
      'PG host not allowed (28000)',
      Object.assign(
        new Error(
          'no pg_hba.conf entry for host "1.2.3.4", user "reporter", database "sales", SSL encryption',
        ),
        { code: '28000' },
      ),
      { stage: 'AUTH', fault: 'server' },
    ],
    [
      'PG too many connections (53300)',
      Object.assign(new Error('sorry, too many clients already'), { code: '53300' }),
      { stage: 'CONNECT', fault: 'server', retryable: true },
    ],
    [
      'PG starting up (57P03)',
      Object.assign(new Error('the database system is starting up'), { code: '57P03' }),
      { stage: 'CONNECT', fault: 'server' },
    ],
    [
      'MySQL TLS required (3159)',
      Object.assign(
        new Error('Connections using insecure transport are prohibited while --require_secure_transport=ON.'),
        { errno: 3159, code: 'ER_SECURE_TRANSPORT_REQUIRED' },
      ),
      { stage: 'TLS', title: 'The server requires TLS' },
    ],
    [
      'MySQL host not allowed (1130)',
      Object.assign(new Error("Host '1.2.3.4' is not allowed to connect to this MariaDB server"), {
        errno: 1130,
        code: 'ER_HOST_NOT_PRIVILEGED',
      }),
      { stage: 'AUTH', fault: 'server' },
    ],
    [
      'MySQL too many connections (1040)',
      Object.assign(new Error('Too many connections'), { errno: 1040, code: 'ER_CON_COUNT_ERROR' }),
      { stage: 'CONNECT', retryable: true },
    ],
    [
      'S3 NoSuchKey',
      Object.assign(new Error('The specified key does not exist.'), {
        name: 'NoSuchKey',
        Code: 'NoSuchKey',
        code: 'NoSuchKey',
        $metadata: { httpStatusCode: 404 },
      }),
      { stage: 'DATABASE', title: 'SQLite file not found in S3' },
    ],
    [
      'S3 AccessDenied',
      Object.assign(new Error('Access Denied'), {
        name: 'AccessDenied',
        code: 'AccessDenied',
        $metadata: { httpStatusCode: 403 },
      }),
      { stage: 'PERMISSION' },
    ],
    [
      'SQLite source outside the organization',
      new SqliteSourceRefused('Use a path relative to the organization folder.'),
      { stage: 'DATABASE', fault: 'user', title: "SQLite source outside the organization's area" },
    ],
    [
      'Database host refused by the host policy',
      new HostRefusedError('pg.example.com'),
      { stage: 'CONNECT', fault: 'user', title: 'Database host not allowed' },
    ],
  ];
  for (const [name, err, want] of cases)
    it(`${name} → ${want.stage}`, () => {
      check(diagnose(err, pgTarget), want, pgTarget);
    });

  it('sanitize removes the password and URL credentials', () => {
    expect(sanitize('failed for mongodb://bob:S3cret-pass@h/db with S3cret-pass', pgTarget)).toBe(
      'failed for mongodb://***@h/db with ***',
    );
  });
});

describe('every fix step that refers to a place names it (host and port, database, user) on every driver', () => {
  const targets: ConnectionTarget[] = [
    pgTarget,
    { ...pgTarget, type: 'MYSQL', host: 'my.example.com', port: 3306 },
    { ...pgTarget, type: 'MARIADB', host: 'maria.example.com', port: 3307 },
    mssqlTarget,
    mongoTarget,
  ];
  const err = (props: Record<string, unknown>, message = 'failure') =>
    Object.assign(new Error(message), props);
  // One error per rule that concerns a server (the SQLite rules are tested with files elsewhere).
  const errors: Array<[string, Error]> = [
    ['DNS', err({ code: 'ENOTFOUND' }, 'getaddrinfo ENOTFOUND x')],
    ['DNS temporary', err({ code: 'EAI_AGAIN' })],
    ['no TLS', err({ code: 'HANDSHAKE_NO_SSL_SUPPORT' })],
    ['TLS required', err({}, 'SSL connection is required')],
    ['certificate name', err({ code: 'ERR_TLS_CERT_ALTNAME_INVALID' })],
    ['certificate expired', err({ code: 'CERT_HAS_EXPIRED' })],
    ['certificate untrusted', err({ code: 'SELF_SIGNED_CERT_IN_CHAIN' })],
    ['handshake', err({ code: 'EPROTO' })],
    ['database', err({ code: '3D000' }, 'database "x" does not exist')],
    ['locked', err({}, 'password has expired')],
    ['db access', err({ errno: 1044 })],
    ['password', err({ code: '28P01' }, 'password authentication failed for user "reporter"')],
    ['pg_hba', err({ code: '28000' }, 'no pg_hba.conf entry')],
    ['role', err({}, 'role "reporter" does not exist')],
    ['auth method', err({}, 'SASL: SCRAM-SERVER-FIRST-MESSAGE')],
    ['permission', err({ code: '42501' }, 'permission denied for table orders')],
    ['busy', err({ code: '53300' }, 'too many connections')],
    ['refused', err({ code: 'ECONNREFUSED' })],
    ['timeout', err({ code: 'ETIMEDOUT' })],
    ['network', err({ code: 'ECONNRESET' })],
    ['unknown', err({}, 'something odd')],
  ];
  const placeWords =
    /\b(server|host|port|database|user|login|firewall|certificate|connection|account|network|reachable|listens|pg_hba|GRANT|grant|role)\b/i;
  for (const t of targets)
    for (const [name, e] of errors)
      it(`${t.type} ${name}`, () => {
        const d = diagnose(e, t);
        const hostPort = `${t.host}:${t.port}`;
        // The steps as a whole name the host (with the port when the place is the server).
        expect(d.fixSteps.join(' '), JSON.stringify(d)).toContain(t.host);
        if (['AUTH', 'DATABASE', 'PERMISSION'].includes(d.stage)) {
          expect(d.fixSteps.join(' '), JSON.stringify(d)).toContain(t.username);
          expect(d.fixSteps.join(' '), JSON.stringify(d)).toContain(t.database);
        }
        if (['CONNECT', 'TIMEOUT', 'TLS'].includes(d.stage) && name !== 'unknown')
          expect(d.fixSteps.join(' '), JSON.stringify(d)).toContain(String(t.port));
        // Each step that speaks of a place names it: no bare "the server", "this user", "the database".
        for (const step of d.fixSteps)
          if (placeWords.test(step) && !/^Try again/.test(step) && !/Loupe only reads/.test(step))
            expect(
              step.includes(t.host) ||
                step.includes(t.username) ||
                step.includes(t.database) ||
                step.includes(hostPort),
              `${name}: "${step}"`,
            ).toBe(true);
      });

  it('a wrong PostgreSQL password names host, port, database and user', () => {
    const d = diagnose(
      err({ code: '28P01' }, 'password authentication failed for user "reporter"'),
      pgTarget,
    );
    expect(d.title).toBe('Login failed');
    expect(d.fixSteps[0]).toContain('pg.example.com:5432');
    expect(d.fixSteps[0]).toContain('"sales"');
    expect(d.fixSteps[0]).toContain('"reporter"');
  });
});
