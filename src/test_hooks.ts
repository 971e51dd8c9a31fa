// Every test hook of logbook, read from the environment in one place. They are
// on only with LOGBOOK_TEST_HOOKS=1 (docs/testing.md): without it every value
// here is its production default, whatever else the environment says, so a
// stray LOGBOOK_TEST_* variable on a server changes nothing. Shard workers see
// the same environment, so both threads read the same values.
const env = process.env;

/** LOGBOOK_TEST_HOOKS=1: the hooks below, and the `POST /__test__/…` routes (src/http/ops.ts). */
export const TEST_HOOKS_ON: boolean = env.LOGBOOK_TEST_HOOKS === '1';

const read = (name: string): string | undefined => (TEST_HOOKS_ON ? env[name] : undefined);
const positive = (name: string): number => {
  const n = Number(read(name) ?? 0);
  return Number.isFinite(n) && n > 0 ? n : 0;
};

export const TEST_HOOKS = {
  /**
   * LOGBOOK_TEST_WRITE_BOUNDS=labels=5,argumentsBytes=100: write bounds a test
   * lowers or raises (src/limits.ts), to check a refusal cheaply or to write
   * data past a default and read it back under it.
   */
  writeBound(name: string, value: number): number {
    for (const pair of (read('LOGBOOK_TEST_WRITE_BOUNDS') ?? '').split(',')) {
      const [key, n] = pair.split('=');
      if (key === name && /^\d+$/.test(n ?? '')) return Number(n);
    }
    return value;
  },
  /** LOGBOOK_TEST_PAGE_BYTES: a small page budget, so a test goes past it without gigabytes (0: the default) */
  pageBytes: positive('LOGBOOK_TEST_PAGE_BYTES'),
  /** LOGBOOK_TEST_RECOVERY_DELAY_MS: a slow shard recovery, so a test can watch the 503s before it */
  recoveryDelayMs: positive('LOGBOOK_TEST_RECOVERY_DELAY_MS'),
  /** LOGBOOK_TEST_SNAPSHOT_SLICE_DELAY_MS: snapshot slices that always yield, for this long (null: off) */
  snapshotSliceDelayMs: read('LOGBOOK_TEST_SNAPSHOT_SLICE_DELAY_MS') ? Number(read('LOGBOOK_TEST_SNAPSHOT_SLICE_DELAY_MS')) : null,
  /** LOGBOOK_TEST_SNAPSHOT_PART_ROWS: results per snapshot part (0: the default, thousands) */
  snapshotPartRows: positive('LOGBOOK_TEST_SNAPSHOT_PART_ROWS'),
  /** LOGBOOK_TEST_KILL_AT=<snapshot|trim>:<count>:<delay ms> (src/shard_worker.ts killAt) */
  killAt: read('LOGBOOK_TEST_KILL_AT'),
  /** LOGBOOK_TEST_STALL_MS: a shorter bound on commits that stopped settling (0: the default) */
  storageStallMs: positive('LOGBOOK_TEST_STALL_MS'),
} as const;
