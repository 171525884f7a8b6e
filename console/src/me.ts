import { useEffect, useState } from 'preact/hooks';
import { api, ok } from './api/client';
import { session } from './session';

/** Who the signed-in key is (GET /v1/): its user, role and scopes. */
export interface Me {
  userId: string;
  role: 'admin' | 'member';
  scopes: string[];
}

let cached: Promise<Me> | null = null;
session.onChange(() => {
  cached = null;
});

/** The caller's context, asked once per sign-in. */
export function loadMe(): Promise<Me> {
  cached ??= ok(api.GET('/')).then(({ userId, role, scopes }) => ({ userId, role, scopes }));
  cached.catch(() => {
    cached = null;
  });
  return cached;
}

/** The caller's context, or null while it loads (or when it could not be read). */
export function useMe(): Me | null {
  const [me, setMe] = useState<Me | null>(null);
  useEffect(() => {
    let live = true;
    loadMe().then(
      (m) => live && setMe(m),
      () => live && setMe(null),
    );
    return () => {
      live = false;
    };
  }, []);
  return me;
}

/** Admin-only operations (connections, keys, members, webhooks, approval rules) answer 403 for a member. */
export const isAdmin = (me: Me | null) => me?.role === 'admin';

/**
 * Whether the key may change or delete a record (metric, saved query, dashboard): admins may, a member
 * only what it created (the API answers 403 to anyone else). Without `createdBy` a member may not.
 */
export const mayChange = (me: Me | null, record: { createdBy?: string }) =>
  isAdmin(me) || (!!me && record.createdBy === me.userId);
