/** Characters of an error message stored with an attempt. */
export const STORED_ERROR_CHARS = 1000;
/** An attempt is not started with less than this left before the run deadline. */
export const MIN_ATTEMPT_MS = 1000;

/** Cuts a stored text to `max` characters, marking the cut. */
export function bound(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…[truncated]` : text;
}
