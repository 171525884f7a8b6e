import { useState } from 'preact/hooks';
import { ApiError } from '../api/client';
import { href } from '../router';
import { ErrorAlert, useLoad } from './load';
import { PAGE_SIZE } from './page-size';

/**
 * A list read one page at a time from a paginated API operation (`okPage` gives its items and the total
 * the API counted). Changing `deps` goes back to the first page.
 */
export function usePaged<T>(
  fetchPage: (query: { page: number; pageSize: number }) => Promise<{ items: T[]; total: number }>,
  deps: unknown[] = [],
) {
  const [page, setPage] = useState(1);
  const [depsKey, setDepsKey] = useState(() => JSON.stringify(deps));
  const key = JSON.stringify(deps);
  if (key !== depsKey) {
    setDepsKey(key);
    setPage(1);
  }
  const loaded = useLoad(() => fetchPage({ page, pageSize: PAGE_SIZE }), [page, key]);
  const total = loaded.data?.total;
  const pages = Math.max(1, Math.ceil((total ?? 0) / PAGE_SIZE));
  // A deletion can leave the last page empty: step back to the new last page.
  if (loaded.data && loaded.data.items.length === 0 && page > pages) setPage(pages);
  return { ...loaded, data: loaded.data?.items, total, page, pages, setPage };
}

/** Previous / Next under a paged list, with where the reader is ("Page 2 of 3, 45 in all"). */
export function Pager({
  label,
  list,
}: {
  label: string;
  list: { page: number; pages: number; total?: number; setPage: (p: number) => void; loading: boolean };
}) {
  if (list.total === undefined || list.pages <= 1) return null;
  return (
    <nav aria-label={`${label} pages`} class="pager">
      <button
        type="button"
        class="secondary"
        disabled={list.page <= 1 || list.loading}
        onClick={() => list.setPage(list.page - 1)}
      >
        Previous page
      </button>{' '}
      <span aria-live="polite">
        Page {list.page} of {list.pages}, {list.total} in all
      </span>{' '}
      <button
        type="button"
        class="secondary"
        disabled={list.page >= list.pages || list.loading}
        onClick={() => list.setPage(list.page + 1)}
      >
        Next page
      </button>
    </nav>
  );
}

/**
 * The record `id` of a paged list (a deep link): from the page shown, or read by its id when it is on
 * another page. `error` is the read's error (a 404 when there is no such record for this key).
 */
export function useSelected<T extends { id: string }>(
  list: { data?: T[]; reload: () => void },
  id: string | undefined,
  readOne: (id: string) => Promise<T>,
) {
  const listed = list.data?.find((x) => x.id === id);
  const direct = useLoad(
    () => (id && list.data && !listed ? readOne(id) : Promise.resolve(null)),
    [id, !!list.data, !!listed],
  );
  return {
    selected: listed ?? direct.data ?? undefined,
    error: direct.error,
    reload: () => {
      list.reload();
      direct.reload();
    },
  };
}

/** Why a deep-linked record is not shown: "not found" with a link back to its list, or the API's error. */
export function NotShown({
  error,
  id,
  what,
  route,
}: {
  error?: Error;
  id?: string;
  what: 'connection' | 'workflow' | 'saved query' | 'metric';
  route: 'connections' | 'workflows' | 'saved-queries' | 'metrics';
}) {
  if (!(error instanceof ApiError && error.status === 404)) return <ErrorAlert error={error} />;
  return (
    <p role="alert" class="alert">
      {what[0].toUpperCase() + what.slice(1)} not found: there is no {what} with the id “{id}” that this key
      can see. <a href={href(route)}>Show all {route.replace('-', ' ')}</a>.
    </p>
  );
}
