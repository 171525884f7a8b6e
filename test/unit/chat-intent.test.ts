import { describe, expect, it } from 'vitest';
import { classifyIntent, looksLikeFollowUp } from '../../shared/chat/intent';

const base = {
  answer: 'Done.',
  hasHistory: false,
  ranQuery: false,
  lookedUpSchema: false,
  hasConnection: true,
};

describe('intent of a turn', () => {
  it('is a data question when a query ran', () => {
    expect(classifyIntent({ ...base, question: 'How many orders in March?', ranQuery: true })).toBe(
      'data_question',
    );
  });

  it('is a follow-up when a query ran for a question leaning on the previous turn', () => {
    expect(
      classifyIntent({ ...base, question: 'And only paid ones?', ranQuery: true, hasHistory: true }),
    ).toBe('follow_up');
    expect(
      classifyIntent({ ...base, question: 'Sort those by revenue', ranQuery: true, hasHistory: true }),
    ).toBe('follow_up');
    // The same words without an earlier turn are a fresh question.
    expect(classifyIntent({ ...base, question: 'And only paid ones?', ranQuery: true })).toBe(
      'data_question',
    );
  });

  it('is a clarification when the answer asks back', () => {
    expect(
      classifyIntent({
        ...base,
        question: 'Sales last month?',
        hasConnection: false,
        answer: 'Which connection should I use: Shop or CRM?',
      }),
    ).toBe('clarification');
    expect(
      classifyIntent({ ...base, question: 'Show revenue', answer: 'Do you mean gross or net revenue?' }),
    ).toBe('clarification');
  });

  it('is a schema question when the schema was looked up or the question is about structure', () => {
    expect(classifyIntent({ ...base, question: 'Which tables hold payments?' })).toBe('schema_question');
    expect(classifyIntent({ ...base, question: 'Where are webhooks kept?', lookedUpSchema: true })).toBe(
      'schema_question',
    );
  });

  it('is other for anything else', () => {
    expect(
      classifyIntent({ ...base, question: 'Hello there', answer: 'Hello! Ask me about your data.' }),
    ).toBe('other');
    expect(classifyIntent({ ...base, question: 'What is a median', hasConnection: false })).toBe('other');
  });
});

describe('follow-up detection', () => {
  it('recognises short questions that continue the previous one', () => {
    for (const q of [
      'and for 2023?',
      'What about Germany?',
      'break it down by month',
      'Show me those again',
      'same for last year',
    ])
      expect(looksLikeFollowUp(q), q).toBe(true);
    for (const q of ['How many customers signed up in March 2024?', 'List every product with its price'])
      expect(looksLikeFollowUp(q), q).toBe(false);
  });
});
