import { pagination } from '../../shared/http/envelope';
import { httpHandler } from '../../shared/http/handler';
import { on } from '../../shared/http/route';
import * as api from '../../shared/usage/api';
import { budgetOf } from '../../shared/usage/balance';
import { listUsage } from '../../shared/usage/record';
import { usageSubject } from '../../shared/usage/whose';

export const handler = httpHandler([
  on(api.listUsage, async ({ ctx, query }) => {
    const userId = await usageSubject(ctx, query.userId);
    const { items, total } = await listUsage(ctx.orgId, userId, query.page, query.pageSize);
    return { data: items, pagination: pagination(total, query.page, query.pageSize) };
  }),
  on(api.getBudget, async ({ ctx, query }) => ({
    data: await budgetOf(ctx.orgId, await usageSubject(ctx, query.userId)),
  })),
]);
