import * as api from '../../shared/auth/api';
import {
  addMember,
  changeMember,
  getMember,
  issueKey,
  listKeyViews,
  memberView,
  removeMember,
  revokeKey,
} from '../../shared/auth/keys';
import { authStore } from '../../shared/auth/store';
import { pageOf } from '../../shared/http/envelope';
import { httpHandler } from '../../shared/http/handler';
import { on } from '../../shared/http/route';

export const handler = httpHandler([
  on(api.listKeys, async ({ ctx, query }) => pageOf(await listKeyViews(ctx), query)),
  on(api.createKey, async ({ ctx, body }) => ({ status: 201, data: await issueKey(ctx, ctx.userId, body) })),
  on(api.revokeKey, async ({ ctx, params }) => ({ data: await revokeKey(ctx, params.id) })),
  on(api.listMembers, async ({ ctx, query }) =>
    pageOf((await authStore.listUsers(ctx.orgId)).map(memberView), query),
  ),
  on(api.createMember, async ({ ctx, body }) => ({ status: 201, data: await addMember(ctx, body) })),
  on(api.getMember, async ({ ctx, params }) => ({ data: memberView(await getMember(ctx, params.id)) })),
  on(api.updateMember, async ({ ctx, params, body }) => ({ data: await changeMember(ctx, params.id, body) })),
  on(api.deleteMember, async ({ ctx, params }) => ({ data: await removeMember(ctx, params.id) })),
  on(api.createMemberKey, async ({ ctx, params, body }) => {
    const member = await getMember(ctx, params.id);
    return { status: 201, data: await issueKey(ctx, member.id, body) };
  }),
]);
