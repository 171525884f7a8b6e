// What the console says about a manual run of a workflow's draft (plain functions, tested in test/unit).

export interface Action {
  type: string;
  /** The sanitized JSON config. */
  config: string;
}

/** One action in words: `a webhook to hooks.example.com`, `an email to 2 recipients`. */
export function actionWords(a: Action): string {
  let config: { url?: string; to?: unknown } = {};
  try {
    config = JSON.parse(a.config);
  } catch {
    // an unreadable config still counts as an action
  }
  if (a.type === 'WEBHOOK') {
    let host = '';
    try {
      host = new URL(String(config.url)).host;
    } catch {
      // no URL to name
    }
    return host ? `a webhook to ${host}` : 'a webhook';
  }
  if (a.type === 'EMAIL') {
    const to = Array.isArray(config.to) ? config.to.length : 0;
    return to ? `an email to ${to} recipient${to === 1 ? '' : 's'}` : 'an email';
  }
  return `a ${a.type.toLowerCase()} action`;
}

/** What "Run now" is about to do with this draft, said before it is pressed. */
export function runNoteText(w: {
  isActive: boolean;
  hasUnpublishedChanges: boolean;
  actions: Action[];
}): string {
  const draft = !w.isActive
    ? 'this draft as it is (not published)'
    : w.hasUnpublishedChanges
      ? 'the draft as it is (unpublished changes included)'
      : 'the draft as it is (the published version)';
  if (!w.actions.length) return `Run now runs ${draft}. It has no actions, so nothing is sent.`;
  const n = w.actions.length;
  return `Run now runs ${draft} and sends its ${n === 1 ? 'action' : `${n} actions`} for real: ${w.actions
    .map(actionWords)
    .join(', ')}. Preview runs the steps only and sends nothing.`;
}
