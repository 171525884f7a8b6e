import type { Locator, Page } from '@playwright/test';
import { type Cell, layOut } from '../../console/src/components/layout';
import type { TestServer } from '../support/server';
import { addMember, expect, expectAccessible, expectInert, HOSTILE, signIn, test } from './fixtures';

/**
 * Dashboards laid out by dragging (gridstack) and by the keyboard handle "Move <title>", the layout
 * saved through the API (position = row × 12 + column, width, height) and read back on reload; and a
 * member who may not change a dashboard sees none of the controls that change it. Every layout is
 * checked in the API, not only on the page.
 */
test.use({ demoData: false });

interface Stored {
  id: string;
  title: string;
  width: number;
  height: number;
  position: number;
}

async function board(
  s: TestServer,
  title: string,
  widgets: { title: string; width: number; height: number; position: number }[],
  opts: { key?: string; isPublic?: boolean } = {},
): Promise<string> {
  const d = await s.call('POST', '/dashboards', {
    body: { title, isPublic: opts.isPublic ?? false },
    key: opts.key,
  });
  expect(d.status, d.text).toBe(201);
  for (const w of widgets) {
    const r = await s.call('POST', `/dashboards/${d.body.data.id}/widgets`, {
      body: { type: 'TEXT', config: JSON.stringify({ markdown: `About ${w.title}` }), ...w },
      key: opts.key,
    });
    expect(r.status, r.text).toBe(201);
  }
  return d.body.data.id;
}

/** Each widget's cell as the API stores it (read as the console reads it: layout.ts). */
async function cells(s: TestServer, id: string): Promise<Record<string, Cell>> {
  const ws = (await s.call('GET', `/dashboards/${id}/widgets`)).body.data as Stored[];
  const laid = layOut(ws);
  return Object.fromEntries(ws.map((w) => [w.title, laid.get(w.id) as Cell]));
}

const region = (page: Page, title: string) => page.getByRole('region', { name: title, exact: true });

async function box(l: Locator) {
  const b = await l.boundingBox();
  if (!b) throw new Error('not visible');
  return b;
}

/** Drags by the handle "Move <title>" to a point, in small mouse steps as a person would. */
async function drag(page: Page, title: string, to: { x: number; y: number }) {
  const handle = await box(page.getByRole('button', { name: `Move ${title}`, exact: true }));
  await page.mouse.move(handle.x + handle.width / 2, handle.y + handle.height / 2);
  await page.mouse.down();
  await page.mouse.move(to.x, to.y, { steps: 12 });
  await page.mouse.up();
}

test('Dashboards: a widget dragged to a new place keeps it after reload, and its keyboard handle moves and resizes it', async ({
  adminPage: page,
  server: s,
  origin,
}) => {
  const id = await board(s, 'Layout', [
    { title: 'Alpha', width: 6, height: 1, position: 0 },
    { title: 'Beta', width: 6, height: 1, position: 1 },
    { title: 'Gamma', width: 12, height: 1, position: 2 },
  ]);
  expect(await cells(s, id)).toEqual({
    Alpha: { x: 0, y: 0, w: 6, h: 1 },
    Beta: { x: 6, y: 0, w: 6, h: 1 },
    Gamma: { x: 0, y: 1, w: 12, h: 1 },
  });
  await page.goto(`${origin}/#/dashboards/${id}`);
  await expect(page.getByRole('button', { name: 'Move Gamma' })).toBeVisible();
  // Gamma sits under Alpha and Beta; dragged to the top left, it pushes both down.
  expect((await box(region(page, 'Gamma'))).y).toBeGreaterThan((await box(region(page, 'Alpha'))).y);
  const alpha = await box(region(page, 'Alpha'));
  await drag(page, 'Gamma', { x: alpha.x + 20, y: alpha.y + 5 });
  await expect(page.getByRole('status').filter({ hasText: 'Layout saved.' })).toBeVisible();
  await expect
    .poll(() => cells(s, id))
    .toEqual({
      Gamma: { x: 0, y: 0, w: 12, h: 1 },
      Alpha: { x: 0, y: 1, w: 6, h: 1 },
      Beta: { x: 6, y: 1, w: 6, h: 1 },
    });
  await page.reload();
  await expect(page.getByRole('button', { name: 'Move Gamma' })).toBeVisible();
  expect((await box(region(page, 'Gamma'))).y).toBeLessThan((await box(region(page, 'Alpha'))).y);
  // The page follows reading order too (Tab and screen readers): Gamma comes first.
  await expect(page.getByRole('region')).toHaveText([/^⠿?Gamma/, /^⠿?Alpha/, /^⠿?Beta/]);
  await expectAccessible(page, 'dashboard with the layout editor');

  // The keyboard: Shift+← narrows Alpha, → moves it one column, ↑ takes it past Gamma.
  const handle = page.getByRole('button', { name: 'Move Alpha' });
  await handle.focus();
  await page.keyboard.press('Shift+ArrowLeft');
  await expect(
    page.getByRole('status').filter({ hasText: 'Alpha: row 2, column 1, 5 columns wide' }),
  ).toHaveCount(1);
  await expect.poll(async () => (await cells(s, id)).Alpha).toEqual({ x: 0, y: 1, w: 5, h: 1 });
  await page.keyboard.press('ArrowRight');
  await expect.poll(async () => (await cells(s, id)).Alpha).toEqual({ x: 1, y: 1, w: 5, h: 1 });
  await expect(handle).toBeFocused();
  await page.keyboard.press('ArrowUp');
  await expect.poll(async () => (await cells(s, id)).Alpha).toMatchObject({ x: 1, y: 0 });
  // The widget list now starts with Alpha, and the handle kept the focus through the reordering.
  await expect(handle).toBeFocused();
  const after = await cells(s, id);
  expect(after.Gamma.y).toBeGreaterThanOrEqual(1);
  await page.keyboard.press('Shift+ArrowDown');
  await expect.poll(async () => (await cells(s, id)).Alpha).toMatchObject({ h: 2 });
  await page.reload();
  await expect(page.getByRole('button', { name: 'Move Alpha' })).toBeVisible();
  const top = await box(region(page, 'Alpha'));
  expect(top.y).toBeLessThan((await box(region(page, 'Gamma'))).y);
  // Two rows of 10 rem plus the gap: taller than Beta, which stayed one row high.
  expect(top.height).toBeGreaterThan((await box(region(page, 'Beta'))).height * 1.8);

  // A window narrowed to a phone lets go of the drag layout (one widget per row, no handles, the same
  // widgets still shown); widened again, the handles and the saved layout come back.
  const stored = await cells(s, id);
  await page.setViewportSize({ width: 390, height: 844 });
  await expect(page.getByRole('button', { name: /^Move / })).toHaveCount(0);
  await expect(page.locator('.grid.grid-stack')).toHaveCount(0);
  const main = await box(page.locator('main'));
  for (const t of ['Alpha', 'Beta', 'Gamma'])
    expect((await box(region(page, t))).width).toBeGreaterThan(main.width * 0.8);
  await page.setViewportSize({ width: 1280, height: 900 });
  await expect(page.getByRole('button', { name: 'Move Alpha' })).toBeVisible();
  expect((await box(region(page, 'Alpha'))).y).toBeLessThan((await box(region(page, 'Gamma'))).y);
  expect(await cells(s, id)).toEqual(stored);
});

test('Dashboards: a member sees no edit controls on an admin’s public dashboard, and all of them on their own', async ({
  page,
  server: s,
  origin,
}) => {
  const title = `Company numbers ${HOSTILE}`;
  const shared = await board(
    s,
    title,
    [{ title: `Only text ${HOSTILE}`, width: 6, height: 1, position: 0 }],
    {
      isPublic: true,
    },
  );
  const member = await addMember(s, { email: `viewer-${Date.now()}@example.com`, name: 'Viewer' });
  const own = await board(s, 'Mine', [{ title: 'My note', width: 4, height: 1, position: 0 }], {
    key: member.key,
  });
  await signIn(page, member.key);

  await page.goto(`${origin}/#/dashboards/${shared}`);
  await expect(page.getByRole('heading', { level: 1 })).toHaveText(title);
  await expect(page.getByText('its creator and admins change it')).toBeVisible();
  await expect(region(page, `Only text ${HOSTILE}`)).toBeVisible();
  for (const name of [/^Edit widget/, /^Delete widget/, /^Move /])
    await expect(page.getByRole('button', { name })).toHaveCount(0);
  for (const summary of ['Add widget', 'Edit dashboard'])
    await expect(page.locator('summary', { hasText: summary })).toHaveCount(0);
  // Refresh reads; it stays.
  await expect(page.getByRole('button', { name: `Refresh Only text ${HOSTILE}` })).toHaveCount(0); // TEXT has no query
  await expectInert(page);
  await expectAccessible(page, 'a member viewing a public dashboard');
  // The API agrees: a change would have been refused.
  const refused = await s.call('PATCH', `/dashboards/${shared}`, { body: { title: 'x' }, key: member.key });
  expect(refused.status).toBe(403);

  await page.goto(`${origin}/#/dashboards/${own}`);
  await expect(page.getByRole('heading', { level: 1 })).toHaveText('Mine');
  await expect(page.getByRole('button', { name: 'Edit widget My note' })).toBeVisible();
  await expect(page.getByRole('button', { name: 'Move My note' })).toBeVisible();
  await expect(page.locator('summary', { hasText: 'Edit dashboard' })).toBeVisible();
  await page.keyboard.press('Tab');
  await page.getByRole('button', { name: 'Move My note' }).focus();
  await page.keyboard.press('Shift+ArrowRight');
  await expect
    .poll(
      async () => (await s.call('GET', `/dashboards/${own}`, { key: member.key })).body.data.widgets[0].width,
    )
    .toBe(5);
});
