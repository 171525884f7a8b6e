import { DynamoOutbox } from './outbox';
import type { EventOutbox } from './port';

export {
  FANOUT_WORKER,
  type FanoutMessage,
  getEvent,
  listEvents,
  markDispatched,
  pendingEventsBefore,
  type StoredEvent,
} from './outbox';
export { EVENT_TYPES, type EventOutbox, type EventType, type OutboxEvent } from './port';

let instance: EventOutbox | undefined;

/** The event outbox (DynamoDB in both runtimes). */
export function outbox(): EventOutbox {
  instance ??= new DynamoOutbox();
  return instance;
}

export function resetOutbox(): void {
  instance = undefined;
}
