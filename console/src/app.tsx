import { useEffect, useRef, useState } from 'preact/hooks';
import { ApprovalsPage } from './pages/approvals';
import { ChatPage } from './pages/chat';
import { ConnectionsPage } from './pages/connections';
import { DashboardsPage } from './pages/dashboards';
import { MetricsPage } from './pages/metrics';
import { QueryPage } from './pages/query';
import { SavedQueriesPage } from './pages/saved-queries';
import { SettingsPage } from './pages/settings';
import { SignIn } from './pages/sign-in';
import { WorkflowsPage } from './pages/workflows';
import { href, useRoute } from './router';
import { session } from './session';

const PAGES = [
  ['connections', 'Connections'],
  ['query', 'Query'],
  ['chat', 'Chat'],
  ['dashboards', 'Dashboards'],
  ['saved-queries', 'Saved queries'],
  ['metrics', 'Metrics'],
  ['workflows', 'Workflows'],
  ['approvals', 'Approvals'],
  ['settings', 'Settings'],
] as const;

export function App() {
  const [signedIn, setSignedIn] = useState(() => session.key() !== null);
  const [reason, setReason] = useState<string | null>(null);
  useEffect(
    () =>
      session.onChange((why) => {
        setSignedIn(session.key() !== null);
        setReason(why);
      }),
    [],
  );
  if (!signedIn) return <SignIn reason={reason} />;
  return <Shell />;
}

function Shell() {
  const [page, ...rest] = useRoute();
  const main = useRef<HTMLElement>(null);
  const title = PAGES.find(([p]) => p === page)?.[1] ?? 'Not found';
  useEffect(() => {
    document.title = `${title} · Loupe`;
  }, [title]);
  return (
    <div class="shell">
      <button type="button" class="skip" onClick={() => main.current?.focus()}>
        Skip to content
      </button>
      <header class="top">
        <span class="brand">Loupe</span>
        <nav aria-label="Main">
          <ul>
            {PAGES.map(([p, label]) => (
              <li key={p}>
                <a href={href(p)} aria-current={p === page ? 'page' : undefined}>
                  {label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <button type="button" class="secondary" onClick={() => session.signOut()}>
          Sign out
        </button>
      </header>
      <main id="main" ref={main} tabIndex={-1}>
        {page === 'connections' && <ConnectionsPage id={rest[0]} />}
        {page === 'query' && <QueryPage connectionId={rest[0]} />}
        {page === 'chat' && <ChatPage />}
        {page === 'dashboards' && <DashboardsPage id={rest[0]} />}
        {page === 'saved-queries' && <SavedQueriesPage id={rest[0]} />}
        {page === 'metrics' && <MetricsPage id={rest[0]} />}
        {page === 'workflows' && <WorkflowsPage id={rest[0]} />}
        {page === 'approvals' && <ApprovalsPage />}
        {page === 'settings' && <SettingsPage />}
        {title === 'Not found' && (
          <>
            <h1>Not found</h1>
            <p>
              There is no page here. <a href={href('dashboards')}>Go to dashboards</a>.
            </p>
          </>
        )}
      </main>
    </div>
  );
}
