/** Work the local runtime does after the store is up and before it serves (demo data, workers, …). */
export interface LocalEnv {
  dataDir: string;
  orgId: string;
  adminUserId: string;
  /** True on the very first start of this data directory. */
  firstStart: boolean;
  log: (line: string) => void;
}

export interface LocalService {
  stop(): Promise<void>;
}

/** Capabilities register their local startup tasks here (e.g. demo data, queue and scheduler pollers). */
export const startupTasks: Array<(env: LocalEnv) => Promise<LocalService | undefined>> = [];
