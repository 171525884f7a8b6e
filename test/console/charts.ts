import type { Locator } from '@playwright/test';
import { expect } from './fixtures';

/** Chart.js drew into the region's canvas: it is sized and has painted pixels. */
export async function expectPainted(region: Locator): Promise<void> {
  await expect(region.locator('canvas')).toBeVisible();
  await expect
    .poll(
      () =>
        region.locator('canvas').evaluate((c: any) => {
          const d = c.getContext('2d')!.getImageData(0, 0, c.width, c.height).data;
          return c.width > 0 && d.some((v: number) => v !== 0);
        }),
      { intervals: [50] },
    )
    .toBe(true);
}
