// Types of infra/ensure-deps.mjs (plain JavaScript so that any installed node runs it), for its tests.
export declare const NODE_MAJOR: number;
export declare function missing(exists?: (path: string) => boolean): { deps: boolean; console: boolean };
export declare function introLines(machineNode?: string, packages?: number): string[];
export declare function packagesOf(
  lock: { packages?: Record<string, Record<string, unknown>> },
  platform?: string,
  arch?: string,
): string[];
export declare function progressLine(p: {
  ms: number;
  unpacked: number;
  total: number;
  nodeReady: boolean;
}): string;
export declare class EngineWarnings {
  packages: string[];
  required: Set<string>;
  take(line: string): boolean;
  summary(machineNode?: string): string | undefined;
}
export declare function main(): Promise<number>;
