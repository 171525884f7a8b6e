/** Parses a JSON object of names to strings from configuration, naming the variable when it is wrong. */
export function parseNameMap(variable: string, raw: string | undefined): Record<string, string> {
  if (!raw) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new Error(`Invalid configuration: ${variable} must be a JSON object of names to strings.`);
  }
  if (
    !parsed ||
    typeof parsed !== 'object' ||
    Array.isArray(parsed) ||
    Object.values(parsed).some((v) => typeof v !== 'string' || !v)
  )
    throw new Error(`Invalid configuration: ${variable} must be a JSON object of names to strings.`);
  return parsed as Record<string, string>;
}
