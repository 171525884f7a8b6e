import { Logger } from '@aws-lambda-powertools/logger';
import { config } from './config';

let instance: Logger | undefined;

/** One structured logger per process (Powertools). Never pass secrets or request bodies to it. */
export function logger(): Logger {
  if (!instance) {
    const level = config().LOUPE_LOG_LEVEL;
    instance = new Logger({ serviceName: 'loupe', logLevel: level });
  }
  return instance;
}
