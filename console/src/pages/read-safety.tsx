import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, api, ok } from '../api/client';
import type { components } from '../api/schema.gen';
import type { Connection } from '../components/connection-select';
import { Loading, useLoad } from '../components/load';

export type ReadSafety = components['schemas']['ReadSafety'];
type Escape = ReadSafety['escapes'][number];

/** The inventory's kinds (shared/guard/postgres-escapes.ts) in plain words. */
const KINDS: Record<string, string> = {
  superuser: 'Superuser role',
  replication: 'Replication role',
  'server-role': 'Server files, programs or sessions role',
  'privileged-function': 'Privileged built-in function',
  extension: 'Extension',
  'c-function': 'C function outside an extension',
  'untrusted-language': 'Function in an untrusted language',
  'foreign-server': 'Foreign server',
  'foreign-table': 'Foreign table',
  'security-definer': 'SECURITY DEFINER function',
};
export const escapeKind = (kind: string) => KINDS[kind] ?? kind.replace(/-/g, ' ');

/** The REVOKE statements of every escape, each group under an SQL comment naming it (runs as it is in psql). */
export function revokeScript(escapes: Escape[]): string {
  return escapes
    .map((e) =>
      [
        `-- ${escapeKind(e.kind)}: ${e.object}`,
        ...(e.revoke.length
          ? e.revoke
          : ['-- No statement closes this one from here: connect with a role that does not reach it.']),
      ].join('\n'),
    )
    .join('\n\n');
}

/** Why the inventory could not be read, in plain words (never the API's code). */
function plainError(error: Error): string {
  if (!(error instanceof ApiError)) return 'Loupe could not be reached. Check your network and try again.';
  if (error.code === 'CONNECTION_INACTIVE')
    return 'The connection is inactive: test it or activate it, then check again.';
  if (error.status === 403) return 'Your key may not read this connection’s read safety.';
  if (error.status === 404) return 'This connection no longer exists.';
  if (error.status === 504 || error.code === 'QUERY_TIMEOUT')
    return 'The database took too long to list what the connection’s role can reach. Try again in a moment.';
  if (error.code === 'CONNECTION_FAILED')
    return `${error.message.replace(/[^.]$/, '$&.')} “Test connection” shows what to fix.`;
  return error.message;
}

/**
 * A PostgreSQL connection's read safety (GET /connections/{id}/read-safety): open mode (the role reaches
 * nothing beyond a read-only transaction) or strict mode, with the escapes that cause it and the REVOKE
 * statements that close them. A successful test (`tested`, its result) shows the inventory it found;
 * "Check again" finds it anew. Not shown for other database types.
 */
export function ReadSafetySection({
  connection: c,
  tested,
}: {
  connection: Connection;
  tested: { success: boolean; readSafety?: ReadSafety } | null;
}) {
  const [fromTest, setFromTest] = useState<ReadSafety | null>(null);
  // A check the person asked for ("Check again") that fails is an alert; the automatic one on opening
  // the page is a note (the connection's own status and "Test connection" diagnose a failing login).
  const [asked, setAsked] = useState(false);
  const load = useLoad(
    () =>
      c.type === 'POSTGRES' && c.isActive
        ? ok(api.GET('/connections/{id}/read-safety', { params: { path: { id: c.id } } }))
        : Promise.resolve(null),
    [c.id, c.type, c.isActive],
  );
  // A successful test found the inventory too: show its answer (or read it when the test could not).
  useEffect(() => {
    if (!tested?.success) return;
    if (tested.readSafety) setFromTest(tested.readSafety);
    else {
      setFromTest(null);
      load.reload();
    }
  }, [tested]);
  if (c.type !== 'POSTGRES') return null;
  const checkAgain = () => {
    setAsked(true);
    setFromTest(null);
    load.reload();
  };
  // The later of the test's inventory and the one read (a test may come before or after a read).
  const read = load.loading ? null : (load.data ?? null);
  const data = fromTest && read ? (later(fromTest, read) ? fromTest : read) : (fromTest ?? read);
  return (
    <section aria-labelledby="read-safety-title" class="read-safety">
      <h3 id="read-safety-title">Read safety</h3>
      {!c.isActive ? (
        <p class="muted">
          The connection is inactive: its read safety is checked once a test connects again.
        </p>
      ) : load.loading && !data ? (
        <Loading what="read safety" />
      ) : load.error && !fromTest ? (
        <p role={asked ? 'alert' : undefined} class={asked ? 'alert' : 'muted'}>
          Read safety could not be checked. {plainError(load.error)}
        </p>
      ) : (
        data && <ReadSafetyView safety={data} />
      )}
      {c.isActive && (
        <p>
          <button type="button" class="secondary" onClick={checkAgain} disabled={load.loading}>
            Check again
          </button>{' '}
          {data?.checkedAt && <span class="muted">Checked {new Date(data.checkedAt).toLocaleString()}.</span>}
        </p>
      )}
    </section>
  );
}

const later = (a: ReadSafety, b: ReadSafety) => Date.parse(a.checkedAt ?? '') > Date.parse(b.checkedAt ?? '');

function ReadSafetyView({ safety: s }: { safety: ReadSafety }) {
  if (s.mode === 'not-applicable') return <p class="muted">{s.explanation}</p>;
  const open = s.mode === 'open';
  const n = s.escapes.length;
  return (
    <>
      <p>
        <span class={`badge ${open ? 'success' : 'strict'}`}>{open ? 'Open mode' : 'Strict mode'}</span>{' '}
        {open
          ? 'Reads on this connection rest on PostgreSQL’s read-only transaction alone: its role reaches no escape.'
          : `Reads on this connection are also checked against the catalog: its role reaches ${n === 1 ? 'an escape' : `${n} escapes`}.`}
      </p>
      <p class="muted">{s.explanation}</p>
      {!open && n > 0 && <Escapes escapes={s.escapes} />}
    </>
  );
}

function Escapes({ escapes }: { escapes: Escape[] }) {
  const script = revokeScript(escapes);
  const code = useRef<HTMLPreElement>(null);
  const [copied, setCopied] = useState<'yes' | 'selected' | null>(null);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(script);
      setCopied('yes');
    } catch {
      // No clipboard here (permission, an older browser): select the statements for the reader to copy.
      const range = document.createRange();
      if (code.current) range.selectNodeContents(code.current);
      const sel = window.getSelection();
      sel?.removeAllRanges();
      sel?.addRange(range);
      setCopied('selected');
    }
  };
  return (
    <>
      <h4 id="read-safety-escapes">Escapes the role reaches</h4>
      <ul aria-labelledby="read-safety-escapes" class="escapes">
        {escapes.map((e) => (
          <li key={`${e.kind} ${e.object}`}>
            <strong>{escapeKind(e.kind)}</strong> <code>{e.object}</code>: {e.detail}.
          </li>
        ))}
      </ul>
      <h4 id="read-safety-revoke">Statements that close them</h4>
      <p class="muted">
        Run them as a superuser or the objects’ owner, then check again; or connect with a role that reaches
        none of these.
      </p>
      <pre ref={code} class="revoke">
        <code>{script}</code>
      </pre>
      <p>
        <button type="button" class="secondary" onClick={copy}>
          Copy statements
        </button>{' '}
        <span role="status">
          {copied === 'yes'
            ? 'Copied.'
            : copied === 'selected'
              ? 'The browser did not allow copying: the statements are selected, copy them with Ctrl+C (⌘C).'
              : ''}
        </span>
      </p>
    </>
  );
}
