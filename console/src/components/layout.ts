/**
 * Where a dashboard's widgets sit on its 12-column grid, from the API's `width`, `height` and `position`.
 *
 * `position` is the widget's top-left cell counted in reading order: `row × 12 + column` (0 is the top
 * left). Widgets are placed in position order, each at its cell when that area is free, else at the
 * first free area after it (in reading order); then every widget rises while the space above it is free
 * (gravity, as the drag library packs). A layout saved by dragging is already packed, so it reads back
 * exactly; small sequential positions (0, 1, 2… written by hand or by the API's older clients) flow left
 * to right and top to bottom as an ordered list would.
 */
export const COLUMNS = 12;

export interface Cell {
  x: number;
  y: number;
  w: number;
  h: number;
}

export interface Placed {
  id: string;
  width: number;
  height: number;
  position: number;
}

/** The API's position of a widget whose top-left cell is (x, y). */
export const positionOf = (x: number, y: number) => y * COLUMNS + x;

const overlaps = (a: Cell, b: Cell) =>
  a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;

const int = (n: number, min: number, max: number) =>
  Math.min(max, Math.max(min, Number.isFinite(n) ? Math.trunc(n) : min));

/** Each widget's cell, by id (widgets given in the API's order: position, then creation). */
export function layOut(widgets: readonly Placed[]): Map<string, Cell> {
  const placed: (Cell & { id: string })[] = [];
  let bottom = 0;
  const ordered = [...widgets].sort((a, b) => a.position - b.position);
  for (const wd of ordered) {
    const w = int(wd.width, 1, COLUMNS);
    const h = int(wd.height, 1, 1000);
    const start = Math.max(0, Number.isFinite(wd.position) ? Math.trunc(wd.position) : 0);
    // Below everything placed so far every cell is free: a huge position starts at that row instead of
    // scanning toward it (gravity would raise it there anyway).
    let y = Math.min(Math.floor(start / COLUMNS), bottom);
    let x = y === Math.floor(start / COLUMNS) ? start % COLUMNS : 0;
    for (;;) {
      if (x + w > COLUMNS) {
        x = 0;
        y++;
        continue;
      }
      const at = { x, y, w, h };
      if (!placed.some((p) => overlaps(p, at))) break;
      x++;
    }
    placed.push({ id: wd.id, x, y, w, h });
    bottom = Math.max(bottom, y + h);
  }
  // Gravity: in reading order, each widget rises to the lowest bottom of those above it in its columns.
  placed.sort((a, b) => a.y - b.y || a.x - b.x);
  for (const [i, p] of placed.entries()) {
    let top = 0;
    for (const q of placed.slice(0, i))
      if (q.x < p.x + p.w && p.x < q.x + q.w && q.y + q.h <= p.y) top = Math.max(top, q.y + q.h);
    p.y = top;
  }
  return new Map(placed.map(({ id, ...cell }) => [id, cell]));
}

/** Ids in reading order (top to bottom, then left to right): the order of the page and of Tab. */
export function readingOrder(cells: Map<string, Cell>): string[] {
  return [...cells.entries()].sort(([, a], [, b]) => a.y - b.y || a.x - b.x).map(([id]) => id);
}
