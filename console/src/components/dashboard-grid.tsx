import type { GridItemHTMLElement, GridStack, GridStackNode } from 'gridstack';
import type { ComponentChildren } from 'preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { type Cell, COLUMNS, layOut, positionOf, readingOrder } from './layout';
import type { WidgetRecord } from './widget';

/** A widget's new place, as the API stores it. */
export interface LayoutChange {
  id: string;
  position: number;
  width: number;
  height: number;
}

/** Dragging needs room for 12 columns: below this width widgets stack one per row and stay where they are. */
const WIDE = '(min-width: 701px)';

let library: Promise<typeof import('gridstack')> | null = null;
/** gridstack (about 27 KB gzip) is loaded only for someone who may change a dashboard, on a wide window. */
const loadGridstack = () => {
  library ??= import('gridstack');
  library.catch(() => {
    library = null;
  });
  return library;
};

function useWide(): boolean {
  const [wide, setWide] = useState(() => matchMedia(WIDE).matches);
  useEffect(() => {
    const m = matchMedia(WIDE);
    const on = () => setWide(m.matches);
    m.addEventListener('change', on);
    return () => m.removeEventListener('change', on);
  }, []);
  return wide;
}

/**
 * Gives a grid back to the CSS grid after gridstack let go of it (the window became narrow): the classes,
 * inline positions and resize handles it added go, the widgets stay mounted (no data is read again).
 */
function unGrid(el: HTMLElement) {
  el.classList.remove('grid-stack', 'grid-stack-animate', 'grid-stack-static', `gs-${COLUMNS}`);
  el.removeAttribute('gs-current-row');
  for (const p of ['--gs-column-width', '--gs-columns', '--gs-cell-height', 'min-height', 'height'])
    el.style.removeProperty(p);
  for (const side of ['top', 'bottom', 'right', 'left']) el.style.removeProperty(`--gs-item-margin-${side}`);
  for (const extra of el.querySelectorAll(':scope > .grid-stack-placeholder')) extra.remove();
  for (const item of el.querySelectorAll<HTMLElement>(':scope > .grid-stack-item')) {
    for (const p of [
      'top',
      'left',
      'right',
      'width',
      'height',
      'position',
      '--gs-x',
      '--gs-y',
      '--gs-w',
      '--gs-h',
    ])
      item.style.removeProperty(p);
    item.classList.remove('ui-draggable', 'ui-resizable', 'ui-draggable-disabled', 'ui-resizable-disabled');
    for (const handle of item.querySelectorAll(':scope > .ui-resizable-handle')) handle.remove();
  }
}

const sameCell = (n: GridStackNode, c: Cell | undefined) =>
  !!c && n.x === c.x && n.y === c.y && n.w === c.w && n.h === c.h;

/**
 * A dashboard's widgets on the 12-column grid (layout.ts reads their places from the API). For someone
 * who may change the dashboard, on a wide window, gridstack lets each widget be dragged by its "Move …"
 * handle and resized from its bottom-right corner; the same handle takes the keyboard (arrow keys move,
 * Shift + arrow keys resize). Every change is handed to `onLayout` as the widgets whose place changed.
 * Otherwise (a member's view of someone else's dashboard, a phone) it is a plain CSS grid.
 */
export function DashboardGrid({
  widgets,
  editable,
  render,
  onLayout,
}: {
  widgets: WidgetRecord[];
  editable: boolean;
  /** One widget, given its move handle (null when the layout cannot be changed here). */
  render: (widget: WidgetRecord, handle: ComponentChildren) => ComponentChildren;
  onLayout: (changes: LayoutChange[]) => void;
}) {
  const wide = useWide();
  const active = editable && wide;
  const shape = widgets.map((w) => [w.id, w.position, w.width, w.height].join(':')).join(',');
  // The cells change only when a widget's place does.
  const cells = useMemo(() => layOut(widgets), [shape]);
  const byId = new Map(widgets.map((w) => [w.id, w]));
  const container = useRef<HTMLDivElement>(null);
  const grid = useRef<GridStack | null>(null);
  const stored = useRef(cells);
  stored.current = cells;
  const report = useRef(onLayout);
  report.current = onLayout;
  const [ready, setReady] = useState(false);
  const [announcement, setAnnouncement] = useState('');
  const [failed, setFailed] = useState(false);
  /**
   * Places handed to `onLayout` that the widgets read from the API do not show yet: they win over the
   * API's until it shows them, so that an answer read before a save never moves a widget back.
   */
  const unsaved = useRef(new Map<string, Cell>());
  /** The widget whose handle had the keyboard: it keeps the focus when the page reorders the widgets. */
  const focused = useRef<string | null>(null);

  /** Hands the widgets gridstack placed differently from what is stored to `onLayout`. */
  const commit = () => {
    const g = grid.current;
    if (!g) return;
    const known = (id: string) => unsaved.current.get(id) ?? stored.current.get(id);
    const moved = g.engine.nodes.filter((n) => !sameCell(n, known(String(n.id))));
    for (const n of moved)
      unsaved.current.set(String(n.id), { x: n.x ?? 0, y: n.y ?? 0, w: n.w ?? 1, h: n.h ?? 1 });
    if (moved.length)
      report.current(
        moved.map((n) => ({
          id: String(n.id),
          position: positionOf(n.x ?? 0, n.y ?? 0),
          width: n.w ?? 1,
          height: n.h ?? 1,
        })),
      );
  };

  useEffect(() => {
    if (!active) return;
    let live = true;
    let made: GridStack | null = null;
    loadGridstack().then(
      ({ GridStack }) => {
        if (!live || !container.current) return;
        made = GridStack.init(
          {
            column: COLUMNS,
            // A row is 10 rem plus the 0.75 rem gap, as in the CSS grid.
            cellHeight: '10.75rem',
            margin: '0.375rem',
            // Gravity: widgets rise to fill the space above them (layout.ts reads places the same way).
            mode: 'top',
            animate: false,
            draggable: { handle: '.widget-move' },
            resizable: { handles: 'se' },
          },
          container.current,
        );
        grid.current = made;
        if (!made) return;
        // After gridstack has packed the widgets (it does so after these events): save what moved.
        made.on('dragstop resizestop', () => setTimeout(commit, 0));
        setReady(true);
      },
      () => live && setFailed(true),
    );
    return () => {
      live = false;
      made?.destroy(false);
      if (made && container.current) unGrid(container.current);
      grid.current = null;
      setReady(false);
    };
  }, [active]);

  // Widgets added, removed or changed by a form (or read back after a save) join gridstack's layout.
  useEffect(() => {
    const g = grid.current;
    const el = container.current;
    if (!g || !el || !ready) return;
    g.batchUpdate();
    for (const n of [...g.engine.nodes]) if (n.el && !n.el.isConnected) g.removeWidget(n.el, false, false);
    for (const item of el.querySelectorAll<GridItemHTMLElement>(':scope > .grid-stack-item')) {
      const id = item.getAttribute('gs-id') ?? '';
      const pending = unsaved.current.get(id);
      const read = cells.get(id);
      if (pending && read && sameCell(pending, read)) unsaved.current.delete(id);
      const cell = unsaved.current.get(id) ?? read;
      if (!item.gridstackNode) g.makeWidget(item, cell);
      else if (cell && !sameCell(item.gridstackNode, cell)) g.update(item, cell);
    }
    g.batchUpdate(false);
    // Reordering the page (reading order) takes the focus off a moved handle: it goes back to it.
    if (focused.current && (!document.activeElement || document.activeElement === document.body))
      document.getElementById(`move-${focused.current}`)?.focus();
  });
  useEffect(() => {
    const on = (e: FocusEvent) => {
      if (!(e.target instanceof HTMLElement && e.target.id === `move-${focused.current}`))
        focused.current = null;
    };
    document.addEventListener('focusin', on);
    return () => document.removeEventListener('focusin', on);
  }, []);

  /** Arrow keys move the widget one column or past the next widget; Shift + arrow keys resize it. */
  const onKey = (w: WidgetRecord) => (e: KeyboardEvent) => {
    const g = grid.current;
    const item = (e.currentTarget as HTMLElement).closest<GridItemHTMLElement>('.grid-stack-item');
    const n = item?.gridstackNode;
    if (!g || !item || !n || !e.key.startsWith('Arrow')) return;
    e.preventDefault();
    const { x = 0, y = 0, w: width = 1, h: height = 1 } = n;
    const others = g.engine.nodes.filter((o) => o !== n);
    const sameColumns = (o: GridStackNode) => (o.x ?? 0) < x + width && x < (o.x ?? 0) + (o.w ?? 1);
    let to: Partial<Cell> | null = null;
    if (e.shiftKey) {
      if (e.key === 'ArrowRight' && x + width < COLUMNS) to = { w: width + 1 };
      if (e.key === 'ArrowLeft' && width > 1) to = { w: width - 1 };
      if (e.key === 'ArrowDown') to = { h: height + 1 };
      if (e.key === 'ArrowUp' && height > 1) to = { h: height - 1 };
    } else {
      if (e.key === 'ArrowRight' && x + width < COLUMNS) to = { x: x + 1 };
      if (e.key === 'ArrowLeft' && x > 0) to = { x: x - 1 };
      // Widgets rise to fill the space above them: moving up or down passes the neighbour in the way.
      if (e.key === 'ArrowUp') {
        const above = others
          .filter((o) => sameColumns(o) && (o.y ?? 0) < y)
          .sort((a, b) => (b.y ?? 0) - (a.y ?? 0))[0];
        if (above) to = { y: above.y ?? 0 };
      }
      if (e.key === 'ArrowDown') {
        const below = others
          .filter((o) => sameColumns(o) && (o.y ?? 0) >= y + height)
          .sort((a, b) => (a.y ?? 0) - (b.y ?? 0))[0];
        if (below) to = { y: (below.y ?? 0) + (below.h ?? 1) };
      }
    }
    focused.current = w.id;
    if (!to) {
      setAnnouncement(`${w.title} cannot go further that way.`);
      return;
    }
    g.update(item, to);
    const now = item.gridstackNode ?? n;
    setAnnouncement(
      `${w.title}: row ${(now.y ?? 0) + 1}, column ${(now.x ?? 0) + 1}, ${now.w} columns wide, ${now.h} rows high.`,
    );
    commit();
  };

  const order = readingOrder(cells);
  return (
    <>
      {active && (
        <p class="muted layout-help" id="move-help">
          Drag a widget by its ⠿ handle or resize it from its bottom-right corner. With the keyboard: focus
          the handle, then arrow keys move the widget and Shift + arrow keys resize it.
        </p>
      )}
      {failed && (
        <p role="alert" class="alert">
          The layout editor could not be loaded: reload the page to move widgets.
        </p>
      )}
      <div class="grid" ref={container}>
        {order.map((id) => {
          const w = byId.get(id);
          const c = cells.get(id);
          if (!w || !c) return null;
          return (
            <div
              key={id}
              class="grid-item grid-stack-item"
              gs-id={id}
              gs-x={c.x}
              gs-y={c.y}
              gs-w={c.w}
              gs-h={c.h}
              style={{ '--cx': c.x + 1, '--cy': c.y + 1, '--cw': c.w, '--ch': c.h }}
            >
              {render(
                w,
                active ? (
                  <button
                    type="button"
                    class="link widget-move"
                    id={`move-${w.id}`}
                    aria-label={`Move ${w.title}`}
                    aria-describedby="move-help"
                    onKeyDown={onKey(w)}
                  >
                    ⠿
                  </button>
                ) : null,
              )}
            </div>
          );
        })}
      </div>
      <p role="status" class="sr-only">
        {announcement}
      </p>
    </>
  );
}
