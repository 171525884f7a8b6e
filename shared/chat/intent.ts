export type Intent = 'data_question' | 'schema_question' | 'follow_up' | 'clarification' | 'other';

const FOLLOW_UP_START =
  /^\s*(and|but|also|now|then|ok(ay)?|so|what about|how about|same|instead|only|just|again|and what|what if|break (it|that|this|them) down|split|sort|order|group|filter|limit|exclude|include|compare|show (me )?(it|that|this|those|these|them|more)|(can|could) you (also|now)|do the same|why)\b/i;
const BACK_REFERENCE =
  /\b(those|these|them|that one|the same|previous|above|earlier|last (one|answer|result|query)|it|this one|that result|the result)\b/i;
const SCHEMA_WORDS =
  /\b(tables?|columns?|schemas?|fields?|structure|relationships?|foreign keys?|primary keys?|data ?types?|indexes|collections?|what data|which data|what is stored|what kind of data)\b/i;

/** A short question that leans on the previous turn ("and for 2023?", "sort those by revenue"). */
export function looksLikeFollowUp(question: string): boolean {
  const wordsCount = question.trim().split(/\s+/).length;
  if (FOLLOW_UP_START.test(question) && wordsCount <= 25) return true;
  return BACK_REFERENCE.test(question) && wordsCount <= 15;
}

/** The answer asks the user something back (its last sentence is a question). */
export function asksBack(answer: string): boolean {
  const text = answer.trim();
  if (!text.endsWith('?')) return false;
  return text.length < 1_200;
}

export interface IntentFacts {
  question: string;
  answer: string;
  /** The conversation had earlier turns. */
  hasHistory: boolean;
  /** run_query was called at least once. */
  ranQuery: boolean;
  /** search_schema or describe_tables was called. */
  lookedUpSchema: boolean;
  hasConnection: boolean;
}

/**
 * The intent of a turn, from what happened rather than a guess about the words alone: a turn that ran a
 * query is a data question (a follow-up when it leans on the previous turn); one that asked back is a
 * clarification; one answered from the schema is a schema question.
 */
export function classifyIntent(f: IntentFacts): Intent {
  if (f.ranQuery) return f.hasHistory && looksLikeFollowUp(f.question) ? 'follow_up' : 'data_question';
  if (asksBack(f.answer) && (!f.hasConnection || f.answer.trim().length < 600)) return 'clarification';
  if (f.lookedUpSchema || (f.hasConnection && SCHEMA_WORDS.test(f.question))) return 'schema_question';
  if (f.hasHistory && looksLikeFollowUp(f.question)) return 'follow_up';
  return 'other';
}
