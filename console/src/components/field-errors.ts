import type { ApiError } from '../api/client';

/** `body.name` → message, from a 400 VALIDATION_ERROR's details.issues. */
export function fieldErrors(error: ApiError | null): Record<string, string> {
  const issues =
    (error?.details as { issues?: { path: string; message: string }[] } | undefined)?.issues ?? [];
  const out: Record<string, string> = {};
  for (const i of issues) out[i.path.replace(/^body\./, '')] ??= i.message;
  return out;
}
