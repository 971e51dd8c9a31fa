// What an ARA import has copied so far, so that a second run skips it and an
// interrupted run leaves no half copy behind for good.
//
// An append-only file of JSON lines, one per step of one ARA playbook:
//   {"ara":7,"step":"creating","path":"…","started":"…"}  before the POST of the playbook
//   {"ara":7,"step":"copying","logbook":42}                  once logbook gave it an id
//   {"ara":7,"step":"complete","logbook":42}                 after its last result and counter
//   {"ara":7,"step":"discarded"}                             its partial copy was deleted
// The last line of a playbook wins. Appending (with fsync) costs the same for the
// 10,000th playbook as for the first, unlike rewriting a JSON map; a line cut
// short by a crash is ignored, which at worst repeats one step.
import { appendFileSync, closeSync, fsyncSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';

export type Step =
  | { ara: number; step: 'creating'; path: string; started: string | null }
  | { ara: number; step: 'copying'; logbook: number }
  | { ara: number; step: 'complete'; logbook: number }
  | { ara: number; step: 'discarded' };

/** `$XDG_CACHE_HOME/logbook/` (or `~/.cache/logbook/`), one file per (ARA, logbook) pair. */
export function defaultStatePath(araUrl: string, logbookUrl: string, env: NodeJS.ProcessEnv = process.env): string {
  const cache = env.XDG_CACHE_HOME && env.XDG_CACHE_HOME.startsWith('/') ? env.XDG_CACHE_HOME : join(homedir(), '.cache');
  const key = createHash('sha256').update(`${araUrl.replace(/\/+$/, '')}\n${logbookUrl.replace(/\/+$/, '')}`).digest('hex').slice(0, 16);
  return join(cache, 'logbook', `import-ara-${key}.jsonl`);
}

export class ImportState {
  private readonly last = new Map<number, Step>();
  /** the file ends in a line cut short: the next step starts on a new line */
  private cutShort = false;

  constructor(readonly path: string) {
    let text = '';
    try { text = readFileSync(path, 'utf8'); } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    this.cutShort = text.length > 0 && !text.endsWith('\n');
    for (const line of text.split('\n')) {
      if (!line.trim()) continue;
      let step: Step;
      try { step = JSON.parse(line) as Step; } catch { continue; /* cut short by a crash */ }
      if (typeof step?.ara === 'number') this.last.set(step.ara, step);
    }
  }

  get(araId: number): Step | undefined { return this.last.get(araId); }

  /** Logbook ids of playbooks marked complete (never deleted as strays). */
  completeLogbookIds(): Set<number> {
    const out = new Set<number>();
    for (const s of this.last.values()) if (s.step === 'complete') out.add(s.logbook);
    return out;
  }

  /** Every playbook whose copy was started but not completed. */
  unfinished(): Step[] {
    return [...this.last.values()].filter((s) => s.step === 'creating' || s.step === 'copying');
  }

  record(step: Step): void {
    mkdirSync(dirname(this.path), { recursive: true });
    const fd = openSync(this.path, 'a', 0o600);
    try {
      appendFileSync(fd, `${this.cutShort ? '\n' : ''}${JSON.stringify(step)}\n`);
      this.cutShort = false;
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    this.last.set(step.ara, step);
  }
}
