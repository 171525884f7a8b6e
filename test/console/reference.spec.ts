import { expect, test } from './fixtures';

/**
 * The API reference page (`GET /docs`, Scalar bundled from npm) in Debian's chromium: it renders the
 * OpenAPI document, a deep link opens its operation, and it contacts no other origin (the `page` fixture
 * fails the test on any CSP violation: Scalar's hosted AI agent and registry are switched off).
 */
test('API reference: renders, deep links to an operation, and makes no request to another origin', async ({
  page,
  origin,
}) => {
  const elsewhere: string[] = [];
  page.on('request', (r) => {
    if (!r.url().startsWith(origin) && !r.url().startsWith('data:')) elsewhere.push(r.url());
  });
  await page.goto(`${origin}/docs`);
  await expect(page.getByRole('heading', { name: /Loupe/ }).first()).toBeVisible();
  await page.goto(`${origin}/docs#tag/connections/POST/connections`);
  await page.reload();
  await expect(page.getByRole('heading', { name: /Register a database connection/ })).toBeVisible();
  await expect(page.getByText('Ask AI')).toHaveCount(0);
  expect(elsewhere).toEqual([]);
});
