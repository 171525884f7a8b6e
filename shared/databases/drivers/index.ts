/**
 * One driver per connection, reused across requests on a warm instance and rebuilt when the
 * connection changes: pools are keyed by connection id, and a different `version` (or any
 * connection field) closes the old pool and opens a new one. Each adapter module is imported
 * lazily, so a function loads only the database client it uses.
 *
 * TLS: `sslEnabled` means verified TLS (certificate chain and host name, `rejectUnauthorized: true`).
 * Servers signed by a private CA: give Node the CA bundle with the standard NODE_EXTRA_CA_CERTS
 * environment variable (a PEM file path); every adapter then trusts it.
 */
import { tracedDriver } from '../traced-driver';
import type { ConnectionTarget, Driver } from './types';

interface Entry {
  fingerprint: string;
  driver: Promise<Driver>;
}

const drivers = new Map<string, Entry>();

/** Closes a driver without letting a stuck client hold up the caller for more than a few seconds. */
const closeSoon = (driver: Promise<Driver>) =>
  Promise.race([
    driver.then((d) => d.close()).catch(() => {}),
    new Promise<void>((resolve) => setTimeout(resolve, 5_000).unref()),
  ]);

const fingerprint = (t: ConnectionTarget) =>
  JSON.stringify([
    t.version,
    t.orgId,
    t.type,
    t.host,
    t.port,
    t.database,
    t.username,
    t.password,
    t.sslEnabled,
  ]);

/** A driver whose calls are X-Ray subsegments of sampled invocations (../traced-driver.ts). */
const create = async (target: ConnectionTarget) => tracedDriver(await open(target), target.type);

async function open(target: ConnectionTarget): Promise<Driver> {
  // The host policy (host-policy.ts): IP literals (which sockets do not resolve) are judged here; names
  // are judged on the addresses they resolve to at every connect (each adapter uses checkedLookup).
  const hosts = target.type === 'MONGODB' ? (await import('./mongodb')).mongoHosts(target) : [target.host];
  // Loaded here, not with this module: the functions that only close drivers (connection updates) or read
  // records should not load node:dns and the address tables at start.
  if (target.type !== 'SQLITE') {
    const { assertLiteralAllowed } = await import('../host-policy');
    for (const h of hosts) assertLiteralAllowed(h);
  }
  switch (target.type) {
    case 'POSTGRES':
      return (await import('./postgres')).postgresDriver(target);
    case 'MYSQL':
    case 'MARIADB':
      return (await import('./mysql')).mysqlDriver(target);
    case 'SQLITE':
      return (await import('./sqlite')).sqliteDriver(target);
    case 'MSSQL':
      return (await import('./mssql')).mssqlDriver(target);
    case 'MONGODB':
      return (await import('./mongodb')).mongoDriver(target);
    default:
      throw new Error(`Unsupported database type: ${String((target as { type: unknown }).type)}`);
  }
}

/** The pooled driver for this connection (created on first use; rebuilt when the connection changed). */
export async function driverFor(target: ConnectionTarget): Promise<Driver> {
  const fp = fingerprint(target);
  const existing = drivers.get(target.id);
  if (existing && existing.fingerprint === fp) return existing.driver;
  if (existing) {
    drivers.delete(target.id);
    void closeSoon(existing.driver);
  }
  const entry: Entry = { fingerprint: fp, driver: create(target) };
  drivers.set(target.id, entry);
  entry.driver.catch(() => {
    if (drivers.get(target.id) === entry) drivers.delete(target.id);
  });
  return entry.driver;
}

/** Closes and forgets one connection's pool (after the connection is deleted). */
export async function closeDriver(connectionId: string): Promise<void> {
  const entry = drivers.get(connectionId);
  if (!entry) return;
  drivers.delete(connectionId);
  await closeSoon(entry.driver);
}

/** Closes every pool (process shutdown, tests). */
export async function closeAllDrivers(): Promise<void> {
  const all = [...drivers.values()];
  drivers.clear();
  await Promise.all(all.map((e) => closeSoon(e.driver)));
}

/**
 * A one-off driver that is not pooled (connection tests of unsaved settings); the caller closes it.
 */
export function unpooledDriver(target: ConnectionTarget): Promise<Driver> {
  return create(target);
}
