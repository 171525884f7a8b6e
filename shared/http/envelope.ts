import { nowIso } from '../platform/ids';

export interface Pagination {
  total: number;
  page: number;
  pageSize: number;
  totalPages: number;
}

export interface ErrorBody {
  code: string;
  message: string;
  details?: unknown;
}

export function envelope(requestId: string, data: unknown, error: ErrorBody | null, pagination?: Pagination) {
  return {
    data: error ? null : (data ?? null),
    error,
    meta: { requestId, timestamp: nowIso(), ...(pagination ? { pagination } : {}) },
  };
}

export function pagination(total: number, page: number, pageSize: number): Pagination {
  return { total, page, pageSize, totalPages: total === 0 ? 0 : Math.ceil(total / pageSize) };
}

/** One page of an in-memory list plus its pagination object (for small, bounded collections). */
export function pageOf<T>(items: T[], q: { page: number; pageSize: number }) {
  const start = (q.page - 1) * q.pageSize;
  return {
    data: items.slice(start, start + q.pageSize),
    pagination: pagination(items.length, q.page, q.pageSize),
  };
}
