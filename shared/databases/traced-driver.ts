import { traced } from '../platform/tracing';
import type { DbType, Driver } from './drivers/types';

/**
 * A driver whose round trips (ping, schema read, statement) are X-Ray subsegments named after the database
 * type when the invocation is traced and sampled (shared/platform/tracing: a plain call otherwise). The
 * statement text is not recorded (it may hold customer data); the subsegment carries the type and the
 * call.
 */
export function tracedDriver(driver: Driver, type: DbType): Driver {
  const name = type.toLowerCase();
  const span = <T>(call: string, work: () => Promise<T>) =>
    traced('database', name, work, { annotations: { dbType: type, call } });
  return {
    ping: () => span('ping', () => driver.ping()),
    introspect: (opts) => span('introspect', () => driver.introspect(opts)),
    query: (text, opts) => span('query', () => driver.query(text, opts)),
    close: () => driver.close(),
  };
}
