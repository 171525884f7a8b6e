import type { RecordedRequest } from './fake-openai';

/** The system prompt of a recorded chat request. */
export const systemText = (req: RecordedRequest) => req.body.messages[0].content as string;

/**
 * The block of a system prompt that describes a table: its header line (`TABLE name …`, the one-line
 * form `TABLE name (~n rows): col type, …` included) and its column lines; '' when the table is not
 * described (a name in the "Other tables" list is not a description).
 */
export const block = (system: string, table: string) => {
  const lines = system.split('\n');
  const i = lines.findIndex((l) => l.startsWith(`TABLE ${table} `) || l.startsWith(`TABLE ${table}:`));
  if (i < 0) return '';
  const out = [lines[i]];
  for (let j = i + 1; j < lines.length && lines[j].startsWith('  '); j++) out.push(lines[j]);
  return out.join('\n');
};
