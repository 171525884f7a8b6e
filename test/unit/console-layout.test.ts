import { GridStackEngine } from 'gridstack/dist/gridstack-engine';
import { describe, expect, it } from 'vitest';
import { layOut, positionOf, readingOrder } from '../../console/src/components/layout';

/**
 * The console reads a dashboard's layout from the API's width, height and position (the top-left cell,
 * row × 12 + column). A layout the drag library (gridstack) made must read back cell for cell; older
 * sequential positions must flow as an ordered list; nothing the API accepts may overlap or loop.
 */
const widget = (id: string, position: number, width: number, height: number) => ({
  id,
  position,
  width,
  height,
});

describe('console dashboard layout', () => {
  it('lays sequential positions out left to right, top to bottom (the demo dashboard)', () => {
    const cells = layOut([
      widget('mrr', 0, 3, 1),
      widget('active', 1, 3, 1),
      widget('about', 2, 6, 1),
      widget('plans', 3, 6, 2),
      widget('signups', 4, 6, 2),
      widget('revenue', 5, 8, 2),
      widget('status', 6, 4, 2),
    ]);
    expect(Object.fromEntries(cells)).toEqual({
      mrr: { x: 0, y: 0, w: 3, h: 1 },
      active: { x: 3, y: 0, w: 3, h: 1 },
      about: { x: 6, y: 0, w: 6, h: 1 },
      plans: { x: 0, y: 1, w: 6, h: 2 },
      signups: { x: 6, y: 1, w: 6, h: 2 },
      revenue: { x: 0, y: 3, w: 8, h: 2 },
      status: { x: 8, y: 3, w: 4, h: 2 },
    });
    expect(readingOrder(cells)).toEqual(['mrr', 'active', 'about', 'plans', 'signups', 'revenue', 'status']);
  });

  it('reads back every layout gridstack packs after random drags and resizes', () => {
    let seed = 42;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    for (let round = 0; round < 40; round++) {
      const engine = new GridStackEngine({ column: 12 });
      const count = 2 + random(9);
      for (let i = 0; i < count; i++)
        engine.addNode({ id: `w${i}`, w: 1 + random(12), h: 1 + random(3), autoPosition: true });
      for (let move = 0; move < 6; move++) {
        const node = engine.nodes[random(engine.nodes.length)];
        const w = 1 + random(12);
        engine.moveNode(node, { x: random(13 - w), y: random(8), w, h: 1 + random(3) });
        engine.batchUpdate().batchUpdate(false);
        const stored = engine.nodes.map((n) =>
          widget(String(n.id), positionOf(n.x ?? 0, n.y ?? 0), n.w ?? 1, n.h ?? 1),
        );
        const expected = Object.fromEntries(
          engine.nodes.map((n) => [n.id, { x: n.x, y: n.y, w: n.w, h: n.h }]),
        );
        // The API lists widgets by position; the order they were created in must not matter either.
        expect(Object.fromEntries(layOut(stored))).toEqual(expected);
        expect(Object.fromEntries(layOut([...stored].reverse()))).toEqual(expected);
      }
    }
  });

  it('never overlaps, and takes any position and size the API accepts without scanning toward it', () => {
    const cells = layOut([
      widget('a', 0, 12, 2),
      widget('b', 0, 12, 1),
      widget('c', 2 ** 31 - 1, 4, 1),
      widget('d', -5, 40, 0),
      widget('e', 7, 0, 3),
    ]);
    const all = [...cells.values()];
    for (const [i, p] of all.entries())
      for (const q of all.slice(i + 1))
        expect(p.x < q.x + q.w && q.x < p.x + p.w && p.y < q.y + q.h && q.y < p.y + p.h).toBe(false);
    expect(cells.get('d')).toMatchObject({ w: 12, h: 1 });
    expect(cells.get('e')).toMatchObject({ w: 1, h: 3 });
    // Nothing floats in empty rows far below the rest.
    expect(Math.max(...all.map((c) => c.y + c.h))).toBeLessThanOrEqual(8);
  });
});
