import { demoConnection, expect, expectAccessible, go, test } from './fixtures';

/**
 * "Run now" on an unpublished draft says, before it is pressed, that it sends the draft's action for real
 * (and to where), and Preview beside it runs the steps without sending anything or storing a run. Read
 * back through the HTTPS receiver and the API.
 */
test('Workflows: Run now says it delivers for real; Preview sends nothing; Run now then delivers once', async ({
  adminPage: page,
  server: s,
  receiver,
}) => {
  const demo = await demoConnection(s);
  const path = `/run-note-${Date.now()}`;
  const created = await s.call('POST', '/workflows', {
    body: {
      name: 'Plan count to a hook',
      triggerType: 'MANUAL',
      connectionId: demo.id,
      steps: [{ name: 'plans', query: 'SELECT count(*) AS n FROM plans LIMIT 1' }],
      actions: [
        {
          type: 'WEBHOOK',
          order: 0,
          config: { version: 2, url: `${receiver.url}${path}`, method: 'POST', bodyMode: 'JSON' },
        },
      ],
    },
  });
  expect(created.status, created.text).toBe(201);
  const id = created.body.data.id as string;
  const sent = () => receiver.requests.filter((r) => r.url === path);
  const runs = async () => (await s.call('GET', `/workflows/${id}/runs`)).body.data as { status: string }[];

  await go(page, 'Workflows');
  await page.getByRole('link', { name: 'Plan count to a hook' }).click();
  const note = `Run now runs this draft as it is (not published) and sends its action for real: a webhook to ${receiver.hostname}. Preview runs the steps only and sends nothing.`;
  const runNow = page.getByRole('button', { name: 'Run now' });
  await expect(runNow).toHaveAccessibleDescription(new RegExp(`^${note.replace(/[.()]/g, '\\$&')}`));

  await page.getByRole('button', { name: 'Preview', exact: true }).click();
  const preview = page.getByRole('status', { name: 'Preview' });
  await expect(preview).toContainText('Preview: READY; nothing was sent. A run would send its action.');
  await expect(preview.getByRole('listitem')).toHaveText(['plans: SUCCESS, 1 row']);
  expect(sent()).toHaveLength(0);
  expect(await runs()).toEqual([]);
  await expectAccessible(page, 'workflow run note and preview');

  await runNow.click();
  await expect.poll(async () => (await runs()).map((r) => r.status)).toEqual(['SUCCESS']);
  expect(sent()).toHaveLength(1);
});
