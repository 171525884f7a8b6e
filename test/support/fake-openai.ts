import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A tool call the scripted model makes; `arguments` objects are JSON-encoded for the wire. */
export interface ScriptedToolCall {
  name: string;
  arguments: unknown;
  id?: string;
}

export interface ScriptedUsage {
  prompt_tokens: number;
  completion_tokens: number;
}

/** One model turn: text, tool calls (optionally with text before them), or an HTTP error. */
export type ScriptedTurn =
  | {
      content?: string;
      toolCalls?: ScriptedToolCall[];
      /** Reported usage; default: ⌈request JSON length / 4⌉ prompt and ⌈output length / 4⌉ completion tokens. */
      usage?: ScriptedUsage | null;
      /** Waits this long before answering (and between streamed chunks when `chunkDelayMs` is set). */
      delayMs?: number;
      chunkDelayMs?: number;
    }
  | { error: { status: number; message: string; type?: string } };

/** A turn, or a function of the request that produces one (to answer from what the service sent). */
export type Turn = ScriptedTurn | ((req: RecordedRequest) => ScriptedTurn);

export interface RecordedRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  /** The parsed JSON body (model, messages, tools, stream…). */
  body: any;
  /** The raw body text, for size assertions. */
  raw: string;
}

/**
 * How `POST /v1/embeddings` answers: `vectors` (default: hashed character trigrams, see trigramVector),
 * an HTTP error, no answer at all (`hang`), a body that is not an embeddings answer (`garbage`), or
 * vectors of the wrong length (`wrong-dimensions`).
 */
export type EmbeddingsMode =
  | 'vectors'
  | 'hang'
  | 'garbage'
  | 'wrong-dimensions'
  | { status: number; message: string };

export interface FakeOpenAI {
  /** Base URL for OPENAI_BASE_URL, ending in /v1. */
  url: string;
  /** The key it requires ('' when started keyless). */
  apiKey: string;
  /** Every request received, in order. */
  requests: RecordedRequest[];
  /** Queues model turns; each chat completion request takes the next one. */
  script(...turns: Turn[]): void;
  /** Turns not yet taken. */
  pending(): number;
  /** Forgets recorded requests and queued turns (the embeddings mode stays). */
  reset(): void;
  /** Sets how /v1/embeddings answers from now on. */
  setEmbeddings(mode: EmbeddingsMode): void;
  stop(): Promise<void>;
}

const estimate = (s: string) => Math.max(1, Math.ceil(s.length / 4));

/**
 * A real OpenAI-compatible HTTP server for tests: `POST /v1/chat/completions` in both the JSON and the
 * streaming (SSE chunk) format, including tool-call deltas split across chunks and the final usage
 * chunk, answering from a script of turns and recording every request. A request with no scripted
 * turn left gets a 500 so that an unexpected model call fails the test.
 */
export async function startFakeOpenAI(opts: { apiKey?: string | null } = {}): Promise<FakeOpenAI> {
  // null: a keyless server, as Ollama, vLLM and LM Studio run on a laptop (any Authorization, or none).
  const keyless = opts.apiKey === null;
  const apiKey = opts.apiKey ?? (keyless ? '' : 'sk-test-fake-openai');
  const queue: Turn[] = [];
  const requests: RecordedRequest[] = [];
  let seq = 0;
  let embeddings: EmbeddingsMode = 'vectors';

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((e) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: String(e), type: 'server_error' } }));
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    let body: any;
    try {
      body = raw ? JSON.parse(raw) : undefined;
    } catch {
      body = undefined;
    }
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const recorded: RecordedRequest = { method: req.method ?? 'GET', path, headers: req.headers, body, raw };
    requests.push(recorded);

    const json = (status: number, payload: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(payload));
    };
    if (!keyless && req.headers.authorization !== `Bearer ${apiKey}`)
      return json(401, {
        error: {
          message: 'Incorrect API key provided.',
          type: 'invalid_request_error',
          code: 'invalid_api_key',
        },
      });
    if (req.method === 'GET' && path === '/v1/models')
      return json(200, {
        object: 'list',
        data: [{ id: 'fake-model', object: 'model', created: 0, owned_by: 'test' }],
      });
    if (req.method === 'POST' && path === '/v1/embeddings') {
      const inputs: unknown[] = Array.isArray(body?.input) ? body.input : [body?.input];
      if (!body?.model || inputs.some((x) => typeof x !== 'string'))
        return json(400, {
          error: { message: 'model and input are required', type: 'invalid_request_error' },
        });
      const mode = embeddings;
      if (mode === 'hang') return; // never answers (the client times out)
      if (typeof mode === 'object')
        return json(mode.status, { error: { message: mode.message, type: 'api_error' } });
      if (mode === 'garbage') return json(200, { object: 'list', data: 'not vectors', usage: null });
      const dims = Number(body.dimensions) || DEFAULT_DIMENSIONS;
      return json(200, {
        object: 'list',
        model: String(body.model),
        data: (inputs as string[]).map((text, index) => ({
          object: 'embedding',
          index,
          embedding: trigramVector(text, mode === 'wrong-dimensions' ? dims + 3 : dims),
        })),
        usage: {
          prompt_tokens: (inputs as string[]).reduce((n, t) => n + estimate(t), 0),
          total_tokens: (inputs as string[]).reduce((n, t) => n + estimate(t), 0),
        },
      });
    }
    if (req.method !== 'POST' || path !== '/v1/chat/completions')
      return json(404, {
        error: { message: `No route ${req.method} ${path}`, type: 'invalid_request_error' },
      });
    if (!body || !Array.isArray(body.messages))
      return json(400, { error: { message: 'messages is required', type: 'invalid_request_error' } });

    const next = queue.shift();
    if (!next)
      return json(500, {
        error: { message: 'fake-openai: no scripted turn left for this request', type: 'server_error' },
      });
    const turn = typeof next === 'function' ? next(recorded) : next;
    if ('error' in turn)
      return json(turn.error.status, {
        error: { message: turn.error.message, type: turn.error.type ?? 'api_error' },
      });
    if (turn.delayMs) await sleep(turn.delayMs);

    const id = `chatcmpl-fake-${++seq}`;
    const created = Math.floor(Date.now() / 1000);
    const model = String(body.model ?? 'fake-model');
    const toolCalls = (turn.toolCalls ?? []).map((t, i) => ({
      id: t.id ?? `call_${seq}_${i}`,
      type: 'function' as const,
      function: {
        name: t.name,
        arguments: typeof t.arguments === 'string' ? t.arguments : JSON.stringify(t.arguments),
      },
    }));
    const content = turn.content ?? (toolCalls.length ? null : '');
    const output = (content ?? '') + toolCalls.map((t) => t.function.name + t.function.arguments).join('');
    const usage =
      turn.usage === null
        ? undefined
        : {
            prompt_tokens: turn.usage?.prompt_tokens ?? estimate(raw),
            completion_tokens: turn.usage?.completion_tokens ?? estimate(output),
          };
    const usageOut = usage && { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens };
    const finish = toolCalls.length ? 'tool_calls' : 'stop';

    if (!body.stream) {
      return json(200, {
        id,
        object: 'chat.completion',
        created,
        model,
        choices: [
          {
            index: 0,
            message: {
              role: 'assistant',
              content,
              refusal: null,
              ...(toolCalls.length ? { tool_calls: toolCalls } : {}),
            },
            logprobs: null,
            finish_reason: finish,
          },
        ],
        ...(usageOut ? { usage: usageOut } : {}),
      });
    }

    res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    });
    const send = async (delta: unknown, finishReason: string | null = null) => {
      const chunk = {
        id,
        object: 'chat.completion.chunk',
        created,
        model,
        choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
      };
      res.write(`data: ${JSON.stringify(chunk)}\n\n`);
      if (turn.chunkDelayMs) await sleep(turn.chunkDelayMs);
    };
    await send({ role: 'assistant', content: '' });
    for (const piece of pieces(content ?? '', 7)) await send({ content: piece });
    for (const [index, t] of toolCalls.entries()) {
      await send({
        tool_calls: [
          { index, id: t.id, type: 'function', function: { name: t.function.name, arguments: '' } },
        ],
      });
      for (const piece of pieces(t.function.arguments, 11))
        await send({ tool_calls: [{ index, function: { arguments: piece } }] });
    }
    await send({}, finish);
    if (body.stream_options?.include_usage && usageOut)
      res.write(
        `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [], usage: usageOut })}\n\n`,
      );
    res.write('data: [DONE]\n\n');
    res.end();
  }

  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', () => ok()));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    apiKey,
    requests,
    script: (...turns) => {
      queue.push(...turns);
    },
    pending: () => queue.length,
    reset: () => {
      queue.length = 0;
      requests.length = 0;
    },
    setEmbeddings: (mode) => {
      embeddings = mode;
    },
    stop: () =>
      new Promise<void>((ok) => {
        server.close(() => ok());
        server.closeAllConnections();
      }),
  };
}

function pieces(s: string, size: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < s.length; i += size) out.push(s.slice(i, i + size));
  return out;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Vector length of the fake embeddings when the request asks for none. */
export const DEFAULT_DIMENSIONS = 256;

/**
 * A deterministic embedding: counts of the character trigrams of each lowercased word (padded with a
 * space each side), hashed (FNV-1a) into `dims` buckets, scaled to length 1. Texts sharing many
 * trigrams are close: a misspelling (`reimbursments`) or another form of a word (`shipping`,
 * `shipment`) stays near the original, which a stemmer and exact terms miss.
 */
export function trigramVector(text: string, dims: number): number[] {
  const v = new Array<number>(dims).fill(0);
  for (const word of text.toLowerCase().split(/[^\p{L}\p{N}]+/u)) {
    if (!word) continue;
    const w = ` ${word} `;
    for (let i = 0; i + 3 <= w.length; i++) {
      let h = 0x811c9dc5;
      for (const ch of w.slice(i, i + 3)) h = Math.imul(h ^ ch.codePointAt(0)!, 0x01000193) >>> 0;
      v[h % dims] += 1;
    }
  }
  const n = Math.sqrt(v.reduce((a, x) => a + x * x, 0)) || 1;
  return v.map((x) => x / n);
}

/** Embeddings requests only, for assertions. */
export const embeddingRequests = (f: FakeOpenAI) => f.requests.filter((r) => r.path === '/v1/embeddings');

/** Model requests only (the chat completions calls), for assertions. */
export const completions = (f: FakeOpenAI) => f.requests.filter((r) => r.path === '/v1/chat/completions');
