import type { ComponentChildren } from 'preact';
import { isAdmin, useMe } from '../me';

/** Renders its children only for an admin key: a member never sees a form the API would refuse with 403. */
export function AdminOnly({ children }: { children: ComponentChildren }) {
  return isAdmin(useMe()) ? children : null;
}
