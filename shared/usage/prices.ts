import * as z from 'zod/mini';
import { config } from '../platform/config';

/** Price of one model in US cents per million tokens. */
export interface ModelPrice {
  promptPerMillion: number;
  completionPerMillion: number;
}

/**
 * Defaults (US cents per million tokens, list prices of the public OpenAI models). `default` prices any
 * model not listed: deliberately at the upper end, so that an unknown model is never free.
 * `LOUPE_MODEL_PRICES` overrides or adds entries.
 */
export const DEFAULT_PRICES: Record<string, ModelPrice> = {
  'gpt-4o-mini': { promptPerMillion: 15, completionPerMillion: 60 },
  'gpt-4o': { promptPerMillion: 250, completionPerMillion: 1000 },
  'gpt-4.1': { promptPerMillion: 200, completionPerMillion: 800 },
  'gpt-4.1-mini': { promptPerMillion: 40, completionPerMillion: 160 },
  'gpt-4.1-nano': { promptPerMillion: 10, completionPerMillion: 40 },
  'gpt-5': { promptPerMillion: 125, completionPerMillion: 1000 },
  'gpt-5-mini': { promptPerMillion: 25, completionPerMillion: 200 },
  'gpt-5-nano': { promptPerMillion: 5, completionPerMillion: 40 },
  'o3-mini': { promptPerMillion: 110, completionPerMillion: 440 },
  'o4-mini': { promptPerMillion: 110, completionPerMillion: 440 },
  // Embedding models (input tokens only).
  'text-embedding-3-small': { promptPerMillion: 2, completionPerMillion: 0 },
  'text-embedding-3-large': { promptPerMillion: 13, completionPerMillion: 0 },
  'text-embedding-ada-002': { promptPerMillion: 10, completionPerMillion: 0 },
  default: { promptPerMillion: 250, completionPerMillion: 1000 },
};

const PriceSchema = z.object({
  promptPerMillion: z.number().check(z.nonnegative()),
  completionPerMillion: z.number().check(z.nonnegative()),
});
const PriceTableSchema = z.record(z.string().check(z.minLength(1)), PriceSchema);

/**
 * Parses `LOUPE_MODEL_PRICES` (JSON object of model → {promptPerMillion, completionPerMillion}, cents)
 * over the defaults. A malformed value fails loudly, naming the variable: silently charging the wrong
 * price is worse than not starting.
 */
export function parsePriceTable(raw: string | undefined): Record<string, ModelPrice> {
  if (!raw || raw.trim() === '') return { ...DEFAULT_PRICES };
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch (e) {
    throw new Error(`Invalid configuration: LOUPE_MODEL_PRICES is not valid JSON (${(e as Error).message}).`);
  }
  const parsed = PriceTableSchema.safeParse(json);
  if (!parsed.success) {
    const problems = parsed.error.issues
      .map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`)
      .join('; ');
    throw new Error(
      `Invalid configuration: LOUPE_MODEL_PRICES must map model names to {"promptPerMillion": cents, "completionPerMillion": cents}: ${problems}`,
    );
  }
  return { ...DEFAULT_PRICES, ...parsed.data };
}

/**
 * The price of a model: an exact entry, else the longest listed name that prefixes it
 * (`gpt-4o-mini-2024-07-18` → `gpt-4o-mini`), else `default`.
 */
export function priceFor(model: string, table: Record<string, ModelPrice>): ModelPrice {
  const name = model.trim().toLowerCase();
  const exact = Object.entries(table).find(([k]) => k.toLowerCase() === name);
  if (exact) return exact[1];
  let best: [string, ModelPrice] | undefined;
  for (const [k, p] of Object.entries(table)) {
    if (k === 'default') continue;
    const key = k.toLowerCase();
    if ((name.startsWith(`${key}-`) || name.startsWith(`${key}:`)) && (!best || key.length > best[0].length))
      best = [key, p];
  }
  return best?.[1] ?? table.default ?? DEFAULT_PRICES.default;
}

/** Cost in (fractional) US cents, rounded to a millionth of a cent to keep sums exact enough. */
export function costCents(price: ModelPrice, promptTokens: number, completionTokens: number): number {
  const cents = (promptTokens * price.promptPerMillion + completionTokens * price.completionPerMillion) / 1e6;
  return Math.round(cents * 1e6) / 1e6;
}

let cache: { raw: string | undefined; table: Record<string, ModelPrice> } | undefined;

/** The configured price table (parsed once per distinct value of LOUPE_MODEL_PRICES). */
export function priceTable(): Record<string, ModelPrice> {
  const raw = config().LOUPE_MODEL_PRICES;
  if (!cache || cache.raw !== raw) cache = { raw, table: parsePriceTable(raw) };
  return cache.table;
}

/** Cost of one model call under the configured prices. */
export function costOf(model: string, promptTokens: number, completionTokens: number): number {
  return costCents(priceFor(model, priceTable()), promptTokens, completionTokens);
}
