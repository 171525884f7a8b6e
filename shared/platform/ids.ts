import { randomUUID } from 'node:crypto';

export const newId = (): string => randomUUID();
export const nowIso = (): string => new Date().toISOString();

/** Zero-padded sequence so that lexical order of sort keys equals numeric order. */
export const padSeq = (n: number): string => String(n).padStart(12, '0');
