import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, api, ok, okPage, postSse } from '../api/client';
import { ConnectionSelect } from '../components/connection-select';
import { ErrorAlert } from '../components/load';
import { Markdown } from '../components/markdown';
import { Pager, usePaged } from '../components/pager';
import type { Result } from '../components/result';
import { ResultTable } from '../components/result-table';
import { submitWith, useSubmit } from '../components/use-submit';

interface Turn {
  question: string;
  answer: string;
  sql: string | null;
  result: Result | null;
  /** A reopened turn's stored summary of its result (the rows themselves are not stored). */
  summary: string | null;
  steps: string[];
  done: boolean;
}

/** Chat: a question about a connection, answered as a stream of Server-Sent Events (POST /v1/chat). */
export function ChatPage() {
  const [conn, setConn] = useState('');
  const [question, setQuestion] = useState('');
  const [conversationId, setConversationId] = useState<string | null>(null);
  const [turns, setTurns] = useState<Turn[]>([]);
  const [error, setError] = useState<ApiError | null>(null);
  // Each conversation shown (a new one, a reopened one) is a generation: a streaming answer, a reopen or a
  // "Run the SQL again" started in an earlier generation is aborted or ignored, never written into this one.
  const generation = useRef(0);
  const streaming = useRef<AbortController | null>(null);
  const supersede = () => {
    generation.current += 1;
    streaming.current?.abort();
    streaming.current = null;
    return generation.current;
  };
  // Leaving the page closes a stream still open.
  useEffect(() => () => void supersede(), []);
  const conversations = usePaged(
    (query) => okPage(api.GET('/conversations', { params: { query } })),
    [conversationId],
  );

  const ask = useSubmit(async () => {
    const q = question.trim();
    if (!q) return;
    setError(null);
    const gen = generation.current;
    const stream = new AbortController();
    streaming.current = stream;
    const current = () => gen === generation.current;
    let failed = false;
    let turn: Turn = {
      question: q,
      answer: '',
      sql: null,
      result: null,
      summary: null,
      steps: [],
      done: false,
    };
    const index = turns.length;
    const update = (t: Partial<Turn>) => {
      if (!current()) return;
      turn = { ...turn, ...t };
      setTurns((all) => [...all.slice(0, index), turn]);
    };
    update({});
    try {
      await postSse(
        '/chat',
        { message: q, connectionId: conn || null, conversationId, stream: true },
        (ev) => {
          if (!current()) return;
          switch (ev.type) {
            case 'start':
              setConversationId(String(ev.conversationId));
              break;
            case 'step':
              update({ steps: [...turn.steps, String(ev.detail ?? ev.action)] });
              break;
            case 'sql':
              update({ sql: String(ev.sql) });
              break;
            case 'result':
              update({ result: ev as unknown as Result });
              break;
            case 'delta':
              update({ answer: turn.answer + String(ev.content) });
              break;
            case 'done':
              update({
                answer: String(ev.content ?? turn.answer),
                sql: (ev.sqlQuery as string | null) ?? turn.sql,
                done: true,
              });
              break;
            case 'error':
              // The answer failed after the stream started: the turn ends, as the API stored it.
              failed = true;
              update({ answer: `No answer: ${String(ev.message)}`, done: true });
              setError(new ApiError(500, String(ev.code), String(ev.message)));
              break;
          }
        },
        stream.signal,
      );
      if (!current()) return;
      if (!turn.done) {
        // The stream closed without its last event (the connection dropped).
        failed = true;
        update({ done: true });
        setError(new ApiError(0, 'STREAM_ENDED', 'The answer stopped before it was complete. Ask again.'));
      }
      // A failed question stays in the box, to ask again.
      if (!failed) setQuestion('');
    } catch (err) {
      // Aborted because another conversation is shown now: that one is left as it is.
      if (!current()) return;
      setTurns((all) => all.slice(0, index));
      setError(err as ApiError);
    } finally {
      if (streaming.current === stream) streaming.current = null;
    }
  });

  return (
    <>
      <h1>Chat</h1>
      <div class="split">
        <div>
          <form onSubmit={submitWith(ask.run)} class="stack">
            <ConnectionSelect value={conn} onChange={setConn} />
            <div class="field">
              <label for="question">Question</label>
              <textarea
                id="question"
                rows={3}
                value={question}
                onInput={(e) => setQuestion(e.currentTarget.value)}
              />
            </div>
            <p>
              <button type="submit" disabled={ask.busy}>
                Ask
              </button>{' '}
              <button
                type="button"
                class="secondary"
                onClick={() => {
                  supersede();
                  setConversationId(null);
                  setTurns([]);
                  setError(null);
                }}
              >
                New conversation
              </button>
            </p>
          </form>
          <ErrorAlert error={error} />
          <ol class="turns" aria-live="polite">
            {turns.map((t, i) => (
              <li key={i} class="turn">
                <p class="question">{t.question}</p>
                <article class="answer" aria-busy={!t.done} aria-label="Answer">
                  <Markdown source={t.answer} />
                  {t.steps.length > 0 && (
                    <details>
                      <summary>Steps</summary>
                      <ul>
                        {t.steps.map((s, j) => (
                          <li key={j}>{s}</li>
                        ))}
                      </ul>
                    </details>
                  )}
                  {t.sql && (
                    <figure>
                      <figcaption>SQL</figcaption>
                      <pre>
                        <code>{t.sql}</code>
                      </pre>
                    </figure>
                  )}
                  {t.summary && !t.result && <p class="muted result-summary">Result: {t.summary}</p>}
                  {t.sql && !t.result && t.done && conn && (
                    <button type="button" class="link" onClick={() => runAgain(i)}>
                      Run the SQL again
                    </button>
                  )}
                  {t.result && <ResultTable result={t.result} csvName="answer.csv" caption="Answer data" />}
                </article>
              </li>
            ))}
          </ol>
        </div>
        <section aria-labelledby="conv-title">
          <h2 id="conv-title">Conversations</h2>
          <ErrorAlert error={conversations.error} />
          <ul class="history">
            {(conversations.data ?? []).map((c) => (
              <li key={c.id}>
                <button
                  type="button"
                  class="link"
                  aria-current={c.id === conversationId ? 'true' : undefined}
                  onClick={() => loadConversation(c.id)}
                >
                  {c.title || 'Untitled'}
                </button>
              </li>
            ))}
          </ul>
          <Pager label="Conversations" list={conversations} />
        </section>
      </div>
    </>
  );

  /** Reopens a conversation: its turns (question, answer, SQL, result summary) and its connection. */
  async function loadConversation(id: string) {
    const gen = supersede();
    setError(null);
    try {
      const c = await ok(api.GET('/conversations/{id}', { params: { path: { id } } }));
      // Another conversation was opened (or a new one started) meanwhile.
      if (gen !== generation.current) return;
      const out: Turn[] = [];
      for (const m of c.messages) {
        if (m.role === 'USER')
          out.push({
            question: m.content,
            answer: '',
            sql: null,
            result: null,
            summary: null,
            steps: [],
            done: true,
          });
        else if (out.length)
          Object.assign(out[out.length - 1], {
            answer: m.content,
            sql: m.sqlQuery,
            summary: m.resultSummary,
          });
      }
      setTurns(out);
      setConversationId(id);
      // A follow-up goes to the conversation's connection, not whichever one was selected before.
      setConn(c.connectionId ?? '');
    } catch (err) {
      if (gen === generation.current) setError(err as ApiError);
    }
  }

  /** Runs a reopened turn's SQL again (read-only) on the conversation's connection, for its result table. */
  async function runAgain(index: number) {
    const t = turns[index];
    if (!t?.sql || !conn) return;
    const gen = generation.current;
    setError(null);
    try {
      const result = await ok(
        api.POST('/connections/{id}/query', {
          params: { path: { id: conn } },
          body: { sql: t.sql, maxRows: 200 },
        }),
      );
      if (gen !== generation.current) return;
      setTurns((all) => all.map((x, j) => (j === index ? { ...x, result } : x)));
    } catch (err) {
      if (gen === generation.current) setError(err as ApiError);
    }
  }
}
