/**
 * The PostgreSQL stream watcher (drivers/limits.ts): what the client's parser receives, whatever the way
 * the socket splits the messages into chunks. A message is a type byte, a 4-byte length counting itself,
 * and a body.
 */
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { limitPostgresMessages } from '../../shared/databases/drivers/limits';

const message = (type: string, body: Buffer | string) => {
  const b = typeof body === 'string' ? Buffer.from(body) : body;
  const head = Buffer.alloc(5);
  head.write(type, 0, 'latin1');
  head.writeUInt32BE(b.length + 4, 1);
  return Buffer.concat([head, b]);
};
const D = (body: string) => message('D', body);
const C = (tag: string) => message('C', `${tag}\0`);
const Z = () => message('Z', 'T');

/** A stream stand-in: records what reaches 'data' listeners and whether (and why) it was destroyed. */
function fakeStream() {
  const s = new EventEmitter() as EventEmitter & { destroyed?: Error | true; destroy(e?: Error): void };
  s.destroy = (e?: Error) => {
    s.destroyed = e ?? true;
  };
  const received: Buffer[] = [];
  s.on('data', (b: Buffer) => received.push(b));
  return { s, received: () => Buffer.concat(received) };
}

/** Splits `all` at `cuts` (offsets) and feeds the pieces, calling `at(k)` before piece k. */
function feed(s: EventEmitter, all: Buffer, cuts: number[], at?: (k: number) => void) {
  const points = [0, ...cuts.filter((c) => c > 0 && c < all.length).sort((a, b) => a - b), all.length];
  for (let k = 0; k + 1 < points.length; k++) {
    at?.(k);
    if (points[k + 1] > points[k]) s.emit('data', all.subarray(points[k], points[k + 1]));
  }
}

/** Deterministic pseudo-random numbers (mulberry32). */
function random(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('PostgreSQL stream watcher', () => {
  it('passes every message unchanged when nothing is dropped, however the chunks fall', () => {
    const all = Buffer.concat([D('a'), D('bb'), C('FETCH 2'), Z()]);
    const rnd = random(1);
    for (let trial = 0; trial < 200; trial++) {
      const { s, received } = fakeStream();
      limitPostgresMessages(s);
      feed(
        s,
        all,
        Array.from({ length: 4 }, () => Math.floor(rnd() * all.length)),
      );
      expect(received().equals(all)).toBe(true);
    }
  });

  it('after dropRows, DataRows are removed until the next ReadyForQuery, other messages kept, at any split', () => {
    const before = Buffer.concat([D('row-1')]);
    const after = [D('row-2'), D('row-3-longer'), C('FETCH 3'), C('ROLLBACK'), Z(), D('next-query'), Z()];
    const all = Buffer.concat([before, ...after]);
    const expected = Buffer.concat([before, C('FETCH 3'), C('ROLLBACK'), Z(), D('next-query'), Z()]);
    const rnd = random(2);
    for (let trial = 0; trial < 500; trial++) {
      const { s, received } = fakeStream();
      const watch = limitPostgresMessages(s);
      // dropRows is called as the client handles row-1: right after the chunk that completes it.
      const cuts = [before.length, ...Array.from({ length: 5 }, () => Math.floor(rnd() * all.length))].filter(
        (c) => c >= before.length,
      );
      feed(s, all, cuts, (k) => {
        if (k === 1) watch.dropRows(1_000_000, () => {});
      });
      expect(received().toString('latin1')).toBe(expected.toString('latin1'));
      expect(s.destroyed).toBeUndefined();
    }
  });

  it('a DataRow whose header was already passed when dropping began is passed whole', () => {
    const all = Buffer.concat([D('row-1'), D('row-2'), C('FETCH 2'), Z()]);
    const { s, received } = fakeStream();
    const watch = limitPostgresMessages(s);
    // Piece 0 ends inside row-2's header (its type byte and one length byte).
    feed(s, all, [D('row-1').length + 2], (k) => {
      if (k === 1) watch.dropRows(1_000_000, () => {});
    });
    expect(received().equals(all)).toBe(true);
  });

  it('calls over() at the header of the DataRow that passes the budget, and passes nothing more', () => {
    const all = Buffer.concat([D('r1'), D('x'.repeat(100)), D('y'.repeat(100)), D('z'.repeat(100)), Z()]);
    const { s, received } = fakeStream();
    const watch = limitPostgresMessages(s);
    let overs = 0;
    feed(s, all, [D('r1').length], (k) => {
      if (k === 1) watch.dropRows(250, () => overs++);
    });
    expect(overs).toBe(1);
    expect(received().equals(D('r1'))).toBe(true);
  });

  it('refuses a message longer than the limit before its body arrives (VALUE_TOO_LARGE)', () => {
    const { s, received } = fakeStream();
    limitPostgresMessages(s, 64);
    s.emit('data', Buffer.concat([D('ok'), D('x'.repeat(65)).subarray(0, 10)]));
    expect((s.destroyed as { code?: string }).code).toBe('VALUE_TOO_LARGE');
    expect(received().length).toBe(0);
  });

  it('a dropped DataRow longer than the limit counts against the budget (the read is full, not failed)', () => {
    const { s } = fakeStream();
    const watch = limitPostgresMessages(s, 64);
    watch.dropRows(1000, () => {});
    s.emit('data', Buffer.concat([D('x'.repeat(200)), Z()]));
    expect(s.destroyed).toBeUndefined();
  });
});
