// Types of bridge.mjs (plain JavaScript so that the published package needs no build), for the CLI and tests.
import type { Readable } from 'node:stream';

export declare const USAGE: string;
export declare function mcpUrl(base: string): URL;
export declare function sseMessages(text: string): unknown[];
export declare function runBridge(o: {
  url: string;
  key: string;
  input?: Readable;
  write?: (line: string) => void;
  log?: (message: string) => void;
}): Promise<void>;
export declare function options(
  argv: string[],
  env?: Record<string, string | undefined>,
): { url?: string; key?: string; help?: boolean; error?: string };
export declare function main(argv?: string[]): Promise<number>;
