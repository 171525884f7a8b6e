import { randomBytes } from 'node:crypto';
import type { Locator, Page } from '@playwright/test';
import { createConnection, postgresConnection } from '../support/connections';
import type { TestServer } from '../support/server';
import { expectPainted } from './charts';
import { expect, expectAccessible, expectInert, HOSTILE, specTables, test } from './fixtures';

/**
 * Dashboards in the console against embedded PostgreSQL: widgets added through the form (every type,
 * drawn and stored), Refresh that really re-runs the query, the grid's order and sizes, run-once
 * submits under a double-click, the tab title, and the edge cases (empty results, long values, a
 * preview without a connection). Each record is read back through the API.
 */
test.use({ demoData: false });

const suffix = randomBytes(4).toString('hex');
const T = `dash_console_${suffix}`;
const LONG = `A category label that goes on and on ${'and on '.repeat(25)}`.trim();
const dbs = specTables(
  [T],
  [
    `CREATE TABLE ${T} (id int PRIMARY KEY, label text)`,
    [`INSERT INTO ${T} VALUES (1, 'north'), (2, 'south'), (3, $1)`, [LONG]],
  ],
);
let pg: string;

test.beforeAll(async ({ server, postgres }) => {
  pg = await createConnection(server, postgresConnection(postgres, { name: 'Sales' }));
});

interface StoredWidget {
  id: string;
  title: string;
  type: string;
  query: string | null;
  connectionId: string | null;
  config: string;
  width: number;
  height: number;
  position: number;
}

async function newDashboard(server: TestServer, title: string): Promise<string> {
  const d = await server.call('POST', '/dashboards', { body: { title } });
  expect(d.status, d.text).toBe(201);
  return d.body.data.id;
}

/** A disclosure of the dashboard page ("Add widget", "Edit dashboard"), opened. */
async function disclosure(page: Page, summary: string): Promise<Locator> {
  const details = page.locator('details.new').filter({ has: page.locator('summary', { hasText: summary }) });
  if (!(await details.evaluate((d: any) => d.open))) await details.locator('summary').click();
  return details;
}

/** The "Add widget" disclosure, opened. */
const addForm = (page: Page) => disclosure(page, 'Add widget');

async function fillWidget(
  form: Locator,
  w: {
    title: string;
    type: string;
    sql?: string;
    options?: string;
    markdown?: string;
    width?: number;
    height?: number;
  },
): Promise<void> {
  await form.getByLabel('Widget type').selectOption(w.type);
  await form.getByLabel('Widget title').fill(w.title);
  if (w.sql !== undefined) {
    await form.getByLabel('Connection').selectOption(pg);
    await form.getByLabel('Widget SQL').fill(w.sql);
  }
  if (w.options !== undefined) await form.getByLabel(/^Options/).fill(w.options);
  if (w.markdown !== undefined) await form.getByLabel('Markdown').fill(w.markdown);
  if (w.width !== undefined) await form.getByLabel(/^Width/).fill(String(w.width));
  if (w.height !== undefined) await form.getByLabel(/^Height/).fill(String(w.height));
}

test('adds a widget of every type through the form: each is drawn and stored, and the form resets', async ({
  adminPage: page,
  server,
  origin,
}) => {
  const id = await newDashboard(server, `Every type ${suffix}`);
  await page.goto(`${origin}/#/dashboards/${id}`);
  await expect(page.getByRole('heading', { level: 1, name: `Every type ${suffix}` })).toBeVisible();
  const chartSql = `SELECT label, id FROM ${T} ORDER BY id`;
  const specs = [
    { type: 'TABLE', title: 'All rows', sql: `SELECT id, label FROM ${T} ORDER BY id` },
    { type: 'METRIC', title: 'Row count', sql: `SELECT count(*) AS n FROM ${T}` },
    { type: 'LINE', title: 'Line of ids', sql: chartSql },
    { type: 'BAR', title: 'Bar of ids', sql: chartSql },
    { type: 'AREA', title: 'Area of ids', sql: chartSql },
    { type: 'PIE', title: 'Pie of ids', sql: chartSql },
    {
      type: 'SCATTER',
      title: 'Scatter',
      sql: `SELECT id AS x, id * 2 AS y FROM ${T} ORDER BY id`,
      options: '{"x": "x", "y": "y"}',
    },
    { type: 'TEXT', title: 'Read me', markdown: `# Notes\n\nLine one with **bold**\n\n- item ${HOSTILE}` },
  ];
  for (const spec of specs) {
    const form = await addForm(page);
    await fillWidget(form, spec);
    await form.getByRole('button', { name: 'Add widget' }).click();
    await expect(form.getByRole('status')).toHaveText(`Widget added: ${spec.title}.`);
    // A fresh form: nothing left to add twice.
    await expect(form.getByLabel('Widget title')).toHaveValue('');
  }

  const stored = (await server.call('GET', `/dashboards/${id}/widgets`)).body.data as StoredWidget[];
  expect(stored.map((w) => [w.type, w.title, w.position])).toEqual(specs.map((s, i) => [s.type, s.title, i]));
  for (const [i, w] of stored.entries()) {
    expect(w.query).toBe(specs[i].sql ?? null);
    expect(w.connectionId).toBe(specs[i].sql ? pg : null);
  }
  // The Markdown field is stored as config.markdown, newlines and all.
  expect(JSON.parse(stored[7].config)).toEqual({ markdown: specs[7].markdown });
  expect(JSON.parse(stored[6].config)).toEqual({ x: 'x', y: 'y' });

  const table = page.getByRole('region', { name: 'All rows' });
  await expect(table.getByRole('cell', { name: 'south', exact: true })).toBeVisible();
  await expect(page.getByRole('region', { name: 'Row count' }).locator('.metric-value')).toHaveText('3');
  for (const title of ['Line of ids', 'Bar of ids', 'Area of ids', 'Pie of ids', 'Scatter'])
    await expectPainted(page.getByRole('region', { name: title }));
  const text = page.getByRole('region', { name: 'Read me' });
  await expect(text.getByRole('heading', { name: 'Notes' })).toBeVisible();
  expect(await text.locator('strong').textContent()).toBe('bold');
  expect(await text.locator('p').first().textContent()).toBe('Line one with bold');
  await expect(text.getByText(HOSTILE)).toBeVisible();
  await expectInert(page);
  await expectAccessible(page, 'dashboard with every widget type');
});

test('Refresh re-runs the query: a change in the database shows at once and becomes the cached value', async ({
  adminPage: page,
  server,
  origin,
}) => {
  const id = await newDashboard(server, `Refreshing ${suffix}`);
  const w = await server.call('POST', `/dashboards/${id}/widgets`, {
    body: {
      type: 'METRIC',
      title: 'Labels',
      connectionId: pg,
      query: `SELECT count(*) AS n FROM ${T}`,
      config: '{"cacheSeconds": 3600}',
    },
  });
  expect(w.status, w.text).toBe(201);
  const region = page.getByRole('region', { name: 'Labels' });
  const value = region.locator('.metric-value');
  await page.goto(`${origin}/#/dashboards/${id}`);
  await expect(value).toHaveText('3');
  await dbs.pg.query(`INSERT INTO ${T} VALUES (4, 'west')`);
  try {
    // A reload is answered from the widget cache, and says so.
    await page.reload();
    await expect(region.getByText(/^Cached/)).toBeVisible();
    await expect(value).toHaveText('3');
    await page.getByRole('button', { name: 'Refresh Labels' }).click();
    await expect(value).toHaveText('4');
    await expect(region.getByText(/^Cached/)).toHaveCount(0);
    // The fresh result replaced the cached one.
    const after = await server.call('GET', `/dashboards/${id}/widgets/${w.body.data.id}/data`);
    expect(after.body.data.cached).toBe(true);
    expect(Number(after.body.data.rows[0].n)).toBe(4);
  } finally {
    await dbs.pg.query(`DELETE FROM ${T} WHERE id = 4`);
  }
});

test('lays widgets out by position, width and height; the edit form resizes one, its handle moves it', async ({
  adminPage: page,
  server,
  origin,
}) => {
  const id = await newDashboard(server, `Layout ${suffix}`);
  const layout: Array<[string, number, number, number]> = [
    ['Third', 4, 3, 5],
    ['First', 12, 1, 0],
    ['Second', 8, 2, 2],
  ];
  for (const [title, width, height, position] of layout) {
    const r = await server.call('POST', `/dashboards/${id}/widgets`, {
      body: { type: 'TEXT', title, width, height, position, config: JSON.stringify({ markdown: title }) },
    });
    expect(r.status, r.text).toBe(201);
  }
  await page.goto(`${origin}/#/dashboards/${id}`);
  const box = async (title: string) => {
    const b = await page.getByRole('region', { name: title, exact: true }).boundingBox();
    if (!b) throw new Error(`${title} is not shown`);
    return b;
  };
  const grid = (await page.locator('.grid').boundingBox())!;
  // In reading order; First alone on its row, then Second (8 of 12 columns) and Third (4) side by side,
  // Third three rows high.
  await expect(page.getByRole('region')).toHaveText([/First/, /Second/, /Third/]);
  const [first, second, third] = [await box('First'), await box('Second'), await box('Third')];
  expect(first.width).toBeGreaterThan(grid.width * 0.95);
  expect(second.y).toBeGreaterThan(first.y);
  expect(third.y).toBe(second.y);
  expect(third.x).toBeGreaterThan(second.x);
  expect(second.width / third.width).toBeCloseTo(2, 0);
  expect(third.height / first.height).toBeCloseTo(3, 0);

  // The edit form makes Third full width: it no longer fits beside Second and goes below it.
  await page.getByRole('button', { name: 'Edit widget Third' }).click();
  const form = page.getByRole('region', { name: 'Edit widget Third' });
  expect(await form.getByLabel('Markdown').inputValue()).toBe('Third');
  await expect(form.getByLabel(/^Position/)).toHaveCount(0);
  await form.getByLabel(/^Width/).fill('12');
  await form.getByRole('button', { name: 'Save widget' }).click();
  await expect(page.getByRole('region')).toHaveText([/First/, /Second/, /Third/]);
  await expect.poll(async () => (await box('Third')).y).toBeGreaterThan((await box('Second')).y);
  // Its handle takes it above Second.
  await page.getByRole('button', { name: 'Move Third' }).focus();
  await page.keyboard.press('ArrowUp');
  await expect(page.getByRole('region')).toHaveText([/First/, /Third/, /Second/]);
  await expect
    .poll(async () =>
      ((await server.call('GET', `/dashboards/${id}/widgets`)).body.data as StoredWidget[]).map((w) => [
        w.title,
        w.position,
        w.width,
        w.height,
      ]),
    )
    .toEqual([
      ['First', 0, 12, 1],
      ['Third', 12, 12, 3],
      ['Second', 48, 8, 2],
    ]);

  // A new widget goes after the last one, even after a delete left fewer widgets than positions.
  await page.getByRole('button', { name: 'Delete widget First' }).click();
  await page.getByRole('button', { name: 'Yes, delete widget' }).click();
  await expect(page.getByRole('region', { name: 'First' })).toHaveCount(0);
  const add = await addForm(page);
  await fillWidget(add, { title: 'Last', type: 'TEXT', markdown: 'last' });
  await add.getByRole('button', { name: 'Add widget' }).click();
  await expect(page.getByRole('region', { name: 'Last' })).toBeVisible();
  await expect(page.getByRole('region')).toHaveText([/Third/, /Second/, /Last/]);
  const after = (await server.call('GET', `/dashboards/${id}/widgets`)).body.data as StoredWidget[];
  expect(after.map((w) => [w.title, w.position])).toEqual([
    ['Third', 12],
    ['Second', 48],
    ['Last', 49],
  ]);
});

test('a double-click creates one dashboard and adds one widget; the tab is named by the dashboard', async ({
  adminPage: page,
  server,
}) => {
  const title = `Double ${suffix}`;
  await page.getByRole('navigation').getByRole('link', { name: 'Dashboards', exact: true }).click();
  await expect(page).toHaveTitle('Dashboards · Loupe');
  await page.getByLabel('New dashboard title').fill(title);
  await page.getByRole('button', { name: 'Create dashboard' }).dblclick();
  await expect(page.getByRole('heading', { level: 1, name: title })).toBeVisible();
  const all = (await server.call('GET', '/dashboards?pageSize=100')).body.data as {
    id: string;
    title: string;
  }[];
  const mine = all.filter((d) => d.title === title);
  expect(mine).toHaveLength(1);
  await expect(page).toHaveTitle(`${title} · Loupe`);

  const form = await addForm(page);
  await fillWidget(form, { title: 'Once', type: 'TEXT', markdown: 'once' });
  await form.getByRole('button', { name: 'Add widget' }).dblclick();
  await expect(form.getByRole('status')).toHaveText('Widget added: Once.');
  await expect(page.getByRole('region', { name: 'Once' })).toHaveCount(1);
  const widgets = (await server.call('GET', `/dashboards/${mine[0].id}/widgets`)).body.data as StoredWidget[];
  expect(widgets.map((w) => w.title)).toEqual(['Once']);

  // Back to the list: the page's own title again.
  await page.getByRole('link', { name: 'All dashboards' }).click();
  await expect(page.getByRole('heading', { level: 1, name: 'Dashboards' })).toBeVisible();
  await expect(page).toHaveTitle('Dashboards · Loupe');
  // From a dashboard to another page: that page's title.
  await page.getByRole('link', { name: title }).click();
  await expect(page).toHaveTitle(`${title} · Loupe`);
  await page.getByRole('navigation').getByRole('link', { name: 'Query', exact: true }).click();
  await expect(page.getByRole('heading', { level: 1, name: 'Query' })).toBeVisible();
  await expect(page).toHaveTitle('Query · Loupe');
});

test('empty results say "No rows", long values stay readable, and Preview asks for a connection first', async ({
  adminPage: page,
  server,
  origin,
}) => {
  const id = await newDashboard(server, `Edges ${suffix}`);
  const add = async (body: Record<string, unknown>) => {
    const r = await server.call('POST', `/dashboards/${id}/widgets`, { body: { connectionId: pg, ...body } });
    expect(r.status, r.text).toBe(201);
  };
  await add({ type: 'PIE', title: 'Empty pie', query: `SELECT label, id FROM ${T} WHERE id < 0` });
  await add({ type: 'BAR', title: 'Empty bar', query: `SELECT label, id FROM ${T} WHERE id < 0` });
  await add({ type: 'METRIC', title: 'Long text', query: `SELECT label FROM ${T} WHERE id = 3` });
  await add({ type: 'BAR', title: 'Long labels', query: `SELECT label, id FROM ${T} ORDER BY id`, width: 4 });
  await page.goto(`${origin}/#/dashboards/${id}`);
  for (const title of ['Empty pie', 'Empty bar']) {
    const region = page.getByRole('region', { name: title });
    await expect(region.getByText('No rows', { exact: true })).toBeVisible();
    await expect(region.locator('canvas')).toHaveCount(0);
  }
  const metric = page.getByRole('region', { name: 'Long text' }).locator('.metric-value');
  await expect(metric).toHaveText(LONG);
  await expect(metric).toHaveAttribute('title', LONG);
  // Wrapped inside its widget, not cut off by it.
  const fits = await metric.evaluate((e: any) => e.scrollWidth <= e.parentElement.clientWidth + 1);
  expect(fits).toBe(true);
  // The long category labels leave room for the bars: the chart is painted.
  const long = page.getByRole('region', { name: 'Long labels' });
  await expectPainted(long);
  // The bars (the first series colour, #2563eb) keep a real share of the canvas: about 37 % with the
  // labels cut at 24 characters, under 20 % when Chart.js gives the whole labels half of the height.
  const barShare = await long.locator('canvas').evaluate((c: any) => {
    const d = c.getContext('2d')!.getImageData(0, 0, c.width, c.height).data;
    let bar = 0;
    for (let i = 0; i < d.length; i += 4) if (d[i] === 37 && d[i + 1] === 99 && d[i + 2] === 235) bar++;
    return bar / (c.width * c.height);
  });
  expect(barShare).toBeGreaterThan(0.3);

  // Preview without a connection: a field message, and no request to /connections//query.
  const requests: string[] = [];
  page.on('request', (r) => requests.push(r.url()));
  const form = await addForm(page);
  await form.getByLabel('Widget type').selectOption('BAR');
  // The only connection is preselected; choosing none is kept.
  await expect(form.getByLabel('Connection')).toHaveValue(pg);
  await form.getByLabel('Connection').selectOption('');
  await form.getByRole('button', { name: 'Preview' }).click();
  await expect(form.getByText('Choose a connection to preview the widget.')).toBeVisible();
  await expect(form.getByLabel('Connection')).toBeFocused();
  await form.getByLabel('Connection').selectOption(pg);
  await form.getByRole('button', { name: 'Preview' }).click();
  await expect(form.getByText('Write the widget’s SQL to preview it.')).toBeVisible();
  expect(requests.filter((u) => u.includes('/query'))).toEqual([]);
  await form.getByLabel('Widget SQL').fill(`SELECT label, id FROM ${T} WHERE id < 0`);
  await form.getByRole('button', { name: 'Preview' }).click();
  await expect(
    page.getByRole('region', { name: 'Preview' }).getByText('No rows', { exact: true }),
  ).toBeVisible();
  await expectAccessible(page, 'dashboard edge cases');
});

test('going from one dashboard straight to another shows, edits and saves only the second', async ({
  adminPage: page,
  server,
  origin,
}) => {
  const board = async (title: string, description: string) => {
    const d = await server.call('POST', '/dashboards', { body: { title, description } });
    expect(d.status, d.text).toBe(201);
    return d.body.data.id as string;
  };
  const a = await board(`Alpha ${suffix}`, 'The first board');
  const b = await board(`Beta ${suffix}`, 'The second board');
  await page.goto(`${origin}/#/dashboards/${a}`);
  await expect(page.getByRole('heading', { level: 1, name: `Alpha ${suffix}` })).toBeVisible();
  // An edit begun on Alpha and left unsaved.
  await disclosure(page, 'Edit dashboard');
  await page.getByLabel('Dashboard title').fill('Alpha, typed and never saved');
  // A link or the address bar goes straight to Beta: the same page, another id.
  await page.evaluate((hash) => {
    (globalThis as any).location.hash = hash;
  }, `#/dashboards/${b}`);
  await expect(page.getByRole('heading', { level: 1, name: `Beta ${suffix}` })).toBeVisible();
  await expect(page.getByText('The second board', { exact: true })).toBeVisible();
  await disclosure(page, 'Edit dashboard');
  await expect(page.getByLabel('Dashboard title')).toHaveValue(`Beta ${suffix}`);
  await expect(page.getByLabel('Dashboard description')).toHaveValue('The second board');
  await page.getByLabel('Dashboard title').fill(`Beta renamed ${suffix}`);
  await page.getByRole('button', { name: 'Save dashboard' }).click();
  await expect(page.getByRole('heading', { level: 1, name: `Beta renamed ${suffix}` })).toBeVisible();
  expect((await server.call('GET', `/dashboards/${a}`)).body.data).toMatchObject({
    title: `Alpha ${suffix}`,
    description: 'The first board',
  });
  expect((await server.call('GET', `/dashboards/${b}`)).body.data).toMatchObject({
    title: `Beta renamed ${suffix}`,
    description: 'The second board',
  });
});

test('Edit and Delete on a widget open where the eye and the focus are; closing gives the focus back', async ({
  adminPage: page,
  server,
  origin,
}) => {
  const id = await newDashboard(server, `Tall ${suffix}`);
  // Four full-width widgets three rows high: the grid is far taller than the 900 px window.
  for (const n of [1, 2, 3, 4]) {
    const r = await server.call('POST', `/dashboards/${id}/widgets`, {
      body: {
        type: 'TEXT',
        title: `Note ${n}`,
        width: 12,
        height: 3,
        config: JSON.stringify({ markdown: `n${n}` }),
      },
    });
    expect(r.status, r.text).toBe(201);
  }
  await page.goto(`${origin}/#/dashboards/${id}`);
  const edit = page.getByRole('button', { name: 'Edit widget Note 1' });
  await edit.click();
  const form = page.getByRole('region', { name: 'Edit widget Note 1' });
  const title = form.getByLabel('Widget title');
  await expect(title).toBeFocused();
  await expect(title).toBeInViewport();
  await expect(form.getByRole('heading', { name: 'Edit widget' })).toBeInViewport();
  await expect(title).toHaveValue('Note 1');
  await form.getByRole('button', { name: 'Cancel' }).click();
  await expect(form).toHaveCount(0);
  await expect(edit).toBeFocused();

  // Delete asks inside the widget, with the focus on Cancel; Cancel gives the focus back to Delete.
  const last = page.getByRole('region', { name: 'Note 4' });
  const remove = page.getByRole('button', { name: 'Delete widget Note 4' });
  await remove.click();
  const ask = last.getByRole('group', { name: 'Delete widget “Note 4”?' });
  await expect(ask.getByRole('button', { name: 'Cancel' })).toBeFocused();
  await expect(ask.getByRole('button', { name: 'Yes, delete widget' })).toBeInViewport();
  await expectAccessible(page, 'widget delete confirmation');
  await page.keyboard.press('Enter');
  await expect(ask).toHaveCount(0);
  await expect(remove).toBeFocused();
  expect((await server.call('GET', `/dashboards/${id}/widgets`)).body.data).toHaveLength(4);
  await remove.click();
  await ask.getByRole('button', { name: 'Yes, delete widget' }).click();
  await expect(last).toHaveCount(0);
  await expect(page.locator('main')).toBeFocused();
  const left = (await server.call('GET', `/dashboards/${id}/widgets`)).body.data as StoredWidget[];
  expect(left.map((w) => w.title)).toEqual(['Note 1', 'Note 2', 'Note 3']);
});

test('a TEXT widget is previewed as its Markdown is typed: escapes, character references and console links', async ({
  adminPage: page,
  server,
  origin,
}) => {
  const id = await newDashboard(server, `Text preview ${suffix}`);
  await page.goto(`${origin}/#/dashboards/${id}`);
  const form = await addForm(page);
  await fillWidget(form, { title: 'Notes', type: 'TEXT', markdown: '# Draft' });
  const preview = form.getByRole('region', { name: 'Preview' });
  await expect(preview.getByRole('heading', { name: 'Draft' })).toBeVisible();
  const markdown = [
    '\\*not italic\\* &amp; &lt;b&gt; &copy; &#169; &#x263A; &#0; &nosuch; &constructor; `&amp;`',
    '',
    '[Saved queries](#/saved-queries) [bad](javascript:alert(1)) [site](https://example.com/)',
    '',
    HOSTILE,
  ].join('\n');
  const shown = '*not italic* & <b> © © ☺ \ufffd &nosuch; &constructor; &amp;';
  // Each change is drawn at once, before anything is saved.
  await form.getByLabel('Markdown').fill(markdown);
  const check = async (where: Locator) => {
    await expect(where.locator('p').first()).toHaveText(shown);
    expect(await where.locator('em').count()).toBe(0);
    await expect(where.getByRole('link', { name: 'Saved queries' })).toHaveAttribute(
      'href',
      '#/saved-queries',
    );
    await expect(where.getByRole('link', { name: 'Saved queries' })).not.toHaveAttribute('target', /./);
    await expect(where.getByRole('link', { name: 'site' })).toHaveAttribute('target', '_blank');
    expect(await where.getByRole('link', { name: 'bad' }).count()).toBe(0);
    await expect(where.getByText('bad', { exact: true })).toBeVisible();
    await expect(where.getByText(HOSTILE)).toBeVisible();
    await expectInert(page);
  };
  await check(preview);
  expect((await server.call('GET', `/dashboards/${id}/widgets`)).body.data).toEqual([]);
  await form.getByRole('button', { name: 'Add widget' }).click();
  await expect(form.getByRole('status')).toHaveText('Widget added: Notes.');
  // The fresh form has nothing to preview.
  await expect(preview).toHaveCount(0);
  const widget = page.getByRole('region', { name: 'Notes', exact: true });
  await check(widget);
  await expectAccessible(page, 'TEXT widget with references and links');
  // The edit form previews the stored Markdown, and a console link stays in the console.
  await page.getByRole('button', { name: 'Edit widget Notes' }).click();
  await check(
    page.getByRole('region', { name: 'Edit widget Notes' }).getByRole('region', { name: 'Preview' }),
  );
  await widget.getByRole('link', { name: 'Saved queries' }).click();
  await expect(page.getByRole('heading', { level: 1, name: 'Saved queries' })).toBeVisible();
});

test("a chart's Data toggle sits below the chart, clear of its axis labels, wide and narrow", async ({
  adminPage: page,
  server,
  origin,
}) => {
  const id = await newDashboard(server, `Data toggle ${suffix}`);
  const r = await server.call('POST', `/dashboards/${id}/widgets`, {
    body: {
      type: 'BAR',
      title: 'Ids by label',
      connectionId: pg,
      query: `SELECT label, id FROM ${T} WHERE id < 3 ORDER BY id`,
      width: 6,
    },
  });
  expect(r.status, r.text).toBe(201);
  await page.goto(`${origin}/#/dashboards/${id}`);
  const region = page.getByRole('region', { name: 'Ids by label' });
  for (const viewport of [
    { width: 1280, height: 900 },
    { width: 390, height: 844 },
  ]) {
    await page.setViewportSize(viewport);
    await expectPainted(region);
    const canvas = (await region.locator('canvas').boundingBox())!;
    const toggle = (await region.locator('summary', { hasText: 'Data' }).boundingBox())!;
    const box = (await region.boundingBox())!;
    expect(toggle.y, `the toggle is below the canvas at ${viewport.width} px`).toBeGreaterThanOrEqual(
      canvas.y + canvas.height - 0.5,
    );
    expect(
      toggle.y + toggle.height,
      `the toggle is inside its widget at ${viewport.width} px`,
    ).toBeLessThanOrEqual(box.y + box.height + 0.5);
    expect(canvas.height).toBeGreaterThan(60);
  }
  // Opened, its table follows in the widget.
  await region.locator('summary', { hasText: 'Data' }).click();
  await expect(region.getByRole('cell', { name: 'south', exact: true })).toBeVisible();
});
