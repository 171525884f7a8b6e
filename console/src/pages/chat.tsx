import { useState } from 'preact/hooks';
import { type ApiError, api, ok, postSse } from '../api/client';
import { ConnectionSelect } from '../components/connection-select';
import { ErrorAlert, useLoad } from '../components/load';
import { Markdown } from '../components/markdown';
import type { Result } from '../components/result';
import { ResultTable } from '../components/result-table';

interface Turn {
  question: string;
  answer: string;
  sql: string | null;
  result: Result | null;
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
  const [busy, setBusy] = useState(false);
  const conversations = useLoad(
    () => ok(api.GET('/conversations', { params: { query: { pageSize: 20 } } })),
    [conversationId],
  );

  const ask = async (e: Event) => {
    e.preventDefault();
    const q = question.trim();
    if (!q) return;
    setBusy(true);
    setError(null);
    let turn: Turn = { question: q, answer: '', sql: null, result: null, steps: [], done: false };
    const index = turns.length;
    const update = (t: Partial<Turn>) => {
      turn = { ...turn, ...t };
      setTurns((all) => [...all.slice(0, index), turn]);
    };
    update({});
    try {
      await postSse(
        '/chat',
        { message: q, connectionId: conn || null, conversationId, stream: true },
        (ev) => {
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
              setError({ code: String(ev.code), message: String(ev.message), status: 500 } as ApiError);
              break;
          }
        },
      );
      setQuestion('');
    } catch (err) {
      setTurns((all) => all.slice(0, index));
      setError(err as ApiError);
    } finally {
      setBusy(false);
    }
  };

  return (
    <>
      <h1>Chat</h1>
      <div class="split">
        <div>
          <form onSubmit={ask} class="stack">
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
              <button type="submit" disabled={busy}>
                Ask
              </button>{' '}
              <button
                type="button"
                class="secondary"
                onClick={() => {
                  setConversationId(null);
                  setTurns([]);
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
                  {t.result && <ResultTable result={t.result} csvName="answer.csv" caption="Answer data" />}
                </article>
              </li>
            ))}
          </ol>
        </div>
        <section aria-labelledby="conv-title">
          <h2 id="conv-title">Conversations</h2>
          <ul class="history">
            {(conversations.data ?? []).map((c) => (
              <li key={c.id}>
                <button type="button" class="link" onClick={() => loadConversation(c.id)}>
                  {c.title || 'Untitled'}
                </button>
              </li>
            ))}
          </ul>
        </section>
      </div>
    </>
  );

  async function loadConversation(id: string) {
    try {
      const msgs = await ok(
        api.GET('/conversations/{id}/messages', { params: { path: { id }, query: { pageSize: 100 } } }),
      );
      const out: Turn[] = [];
      for (const m of msgs as { role: string; content: string; sqlQuery?: string | null }[]) {
        if (m.role === 'user')
          out.push({ question: m.content, answer: '', sql: null, result: null, steps: [], done: true });
        else if (out.length)
          Object.assign(out[out.length - 1], { answer: m.content, sql: m.sqlQuery ?? null });
      }
      setTurns(out);
      setConversationId(id);
    } catch (err) {
      setError(err as ApiError);
    }
  }
}
