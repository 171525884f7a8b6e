import { describe, expect, it } from 'vitest';
import { actionWords, runNoteText } from '../../console/src/pages/workflow-run-text';

/** What the console says by "Run now" before it is pressed (a run of the draft delivers for real). */
describe('the note by Run now', () => {
  const hook = { type: 'WEBHOOK', config: JSON.stringify({ url: 'https://hooks.example.com/a?b=1' }) };
  const mail = { type: 'EMAIL', config: JSON.stringify({ to: ['a@example.com', 'b@example.com'] }) };

  it('names each action and where it goes', () => {
    expect(actionWords(hook)).toBe('a webhook to hooks.example.com');
    expect(actionWords(mail)).toBe('an email to 2 recipients');
    expect(actionWords({ type: 'EMAIL', config: '{"to":["x@example.com"]}' })).toBe(
      'an email to 1 recipient',
    );
    expect(actionWords({ type: 'WEBHOOK', config: 'not json' })).toBe('a webhook');
  });

  it('says which version runs and that its actions are sent for real, or that nothing is sent', () => {
    expect(runNoteText({ isActive: false, hasUnpublishedChanges: true, actions: [hook, mail] })).toBe(
      'Run now runs this draft as it is (not published) and sends its 2 actions for real: a webhook to hooks.example.com, an email to 2 recipients. Preview runs the steps only and sends nothing.',
    );
    expect(runNoteText({ isActive: true, hasUnpublishedChanges: true, actions: [hook] })).toMatch(
      /^Run now runs the draft as it is \(unpublished changes included\) and sends its action for real: a webhook to hooks\.example\.com\./,
    );
    expect(runNoteText({ isActive: true, hasUnpublishedChanges: false, actions: [] })).toBe(
      'Run now runs the draft as it is (the published version). It has no actions, so nothing is sent.',
    );
  });
});
