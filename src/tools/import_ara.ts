// `logbook import-ara <ARA URL> [--to <logbook URL>]`: copies every playbook of
// a running ARA server into logbook, through both servers' HTTP APIs (so any
// ARA database backend works). Resumable: a state file (src/tools/import/state.ts)
// remembers what was copied; a second run skips it, and a copy interrupted
// half-way is deleted in logbook and made again. The per-playbook copy is in
// src/tools/import/copy.ts, the HTTP client in src/tools/import/http.ts.
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { copyPlaybook } from './import/copy.js';
import { ApiClient, HttpError, UnreachableError, basicAuth } from './import/http.js';
import { ImportState, defaultStatePath } from './import/state.js';

export const HELP = `Usage: logbook import-ara <ARA URL> [--to <logbook URL>] [options]

Copies every playbook of a running ARA server (its /api/v1/ API; any ARA
database backend) into logbook with its plays, tasks, files, hosts (facts,
counters), results (contents), records and labels, keeping timestamps and
statuses. Safe to run again: what was copied is skipped, and a playbook
whose copy was interrupted is deleted in logbook and copied again.

  --to URL              logbook to copy into (default http://127.0.0.1:8000)
  --state FILE          progress file (default ~/.cache/logbook/import-ara-<key>.jsonl,
                        one per pair of servers; $XDG_CACHE_HOME is honoured)
  --ara-user NAME       ARA login (or ARA_API_USERNAME)
  --ara-password PASS   (or ARA_API_PASSWORD)
  --user NAME           logbook login with write scope (or LOGBOOK_API_USERNAME)
  --password PASS       (or LOGBOOK_API_PASSWORD)
  --token NAME.SECRET   logbook bearer token instead (or LOGBOOK_API_TOKEN)
  --timeout SECONDS     per request (default 60)
  --quiet               no progress lines (errors are still printed)
  -h, --help

Progress goes to stderr, one line per playbook. Prefer the environment
variables for passwords: command lines are visible to other users.

Exit codes: 0 every playbook copied or skipped, 1 failure (a server
unreachable, a login refused, a playbook that could not be copied),
2 usage (bad arguments).
`;

const OPTIONS = {
  to: { type: 'string' },
  state: { type: 'string' },
  'ara-user': { type: 'string' },
  'ara-password': { type: 'string' },
  user: { type: 'string' },
  password: { type: 'string' },
  token: { type: 'string' },
  timeout: { type: 'string' },
  quiet: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} satisfies ParseArgsConfig['options'];

class UsageError extends Error {}

interface Settings {
  araUrl: string;
  toUrl: string;
  statePath: string;
  araAuth: string | null;
  lbAuth: string | null;
  timeoutMs: number;
  quiet: boolean;
}

function httpUrl(value: string, what: string): string {
  let u: URL;
  try { u = new URL(value); } catch { throw new UsageError(`${what} is not a URL: ${value}`); }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new UsageError(`${what} must be an http:// or https:// URL: ${value}`);
  return value.replace(/\/+$/, '').replace(/\/api\/v1$/, '');
}

function settings(argv: string[], env: NodeJS.ProcessEnv): Settings | 'help' {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const v = parsed.values;
  if (v.help) return 'help';
  if (parsed.positionals.length !== 1) throw new UsageError('expected one ARA URL, e.g. logbook import-ara http://ara.example:8000');
  const araUrl = httpUrl(parsed.positionals[0]!, 'the ARA URL');
  const toUrl = httpUrl(v.to ?? 'http://127.0.0.1:8000', '--to');
  const timeout = Number(v.timeout ?? '60');
  if (!Number.isFinite(timeout) || timeout <= 0) throw new UsageError('--timeout must be a positive number of seconds');

  const araUser = v['ara-user'] ?? env.ARA_API_USERNAME;
  const araPassword = v['ara-password'] ?? env.ARA_API_PASSWORD;
  const user = v.user ?? env.LOGBOOK_API_USERNAME;
  const password = v.password ?? env.LOGBOOK_API_PASSWORD;
  const token = v.token ?? env.LOGBOOK_API_TOKEN;
  if (!araUser !== !araPassword) throw new UsageError('--ara-user and --ara-password go together');
  if (!user !== !password) throw new UsageError('--user and --password go together');
  if (token && user) throw new UsageError('give logbook either --token or --user/--password, not both');
  return {
    araUrl, toUrl,
    statePath: v.state ?? defaultStatePath(araUrl, toUrl, env),
    araAuth: araUser ? basicAuth(araUser, araPassword!) : null,
    lbAuth: token ? `Bearer ${token}` : user ? basicAuth(user, password!) : null,
    timeoutMs: timeout * 1000,
    quiet: v.quiet === true,
  };
}

/**
 * Deletes, in logbook, every copy a previous run started and did not finish:
 * those it knows the id of, and those interrupted between the POST and the
 * answer (found by path and exact `started`, unless marked complete).
 */
async function discardUnfinished(lb: ApiClient, state: ImportState, say: (line: string) => void): Promise<void> {
  const keep = state.completeLogbookIds();
  for (const step of state.unfinished()) {
    if (step.step === 'copying') {
      await lb.delete('playbooks', step.logbook);
      say(`deleted the interrupted copy of ARA playbook ${step.ara} (logbook playbook ${step.logbook})`);
    } else if (step.step === 'creating' && step.started) {
      const q = `path=${encodeURIComponent(step.path)}&started_after=${encodeURIComponent(step.started)}&started_before=${encodeURIComponent(step.started)}`;
      const strays: number[] = []; // collected first: deleting while paging would shift the pages
      for await (const page of lb.pages('playbooks', q, 100)) {
        for (const p of page) if (p.path === step.path && !keep.has(Number(p.id))) strays.push(Number(p.id));
      }
      for (const id of strays) {
        await lb.delete('playbooks', id);
        say(`deleted the interrupted copy of ARA playbook ${step.ara} (logbook playbook ${id})`);
      }
    }
    state.record({ ara: step.ara, step: 'discarded' });
  }
}

async function exists(lb: ApiClient, id: number): Promise<boolean> {
  try {
    await lb.get(`/api/v1/playbooks/${id}`);
    return true;
  } catch (err) {
    if (err instanceof HttpError && err.status === 404) return false;
    throw err;
  }
}

async function run(s: Settings): Promise<number> {
  const say = (line: string) => { if (!s.quiet) process.stderr.write(`${line}\n`); };
  const ara = new ApiClient({ label: 'ARA', baseUrl: s.araUrl, authorization: s.araAuth, timeoutMs: s.timeoutMs, retries: 3 });
  const lb = new ApiClient({ label: 'logbook', baseUrl: s.toUrl, authorization: s.lbAuth, timeoutMs: s.timeoutMs, retries: 3 });
  // Both servers answer (and the logins work) before anything is written.
  const total = await ara.count('playbooks');
  await lb.count('playbooks');
  const state = new ImportState(s.statePath);
  await discardUnfinished(lb, state, say);

  let n = 0;
  let copied = 0;
  let skipped = 0;
  let failed = 0;
  for await (const page of ara.pages('playbooks', '', 100)) {
    for (const row of page) {
      n++;
      const araId = Number(row.id);
      const title = `${row.name ?? row.path} (ARA #${araId})`;
      const done = state.get(araId);
      if (done?.step === 'complete' && await exists(lb, done.logbook)) {
        skipped++;
        say(`[${n}/${total}] ${title}: skipped, already copied as logbook #${done.logbook}`);
        continue;
      }
      state.record({ ara: araId, step: 'creating', path: String(row.path), started: typeof row.started === 'string' ? row.started : null });
      let logbookId: number | null = null;
      try {
        const out = await copyPlaybook(ara, lb, row, { pageSize: 100, readWidth: 8 }, (id) => {
          logbookId = id;
          state.record({ ara: araId, step: 'copying', logbook: id });
        });
        // A playbook still running in ARA is copied as it is now, but not marked
        // complete: the next run copies it again, with what came since.
        if (row.status === 'running') {
          say(`[${n}/${total}] ${title}: ${out.results} results copied as logbook #${out.logbookId} (still running in ARA: copied again next time)`);
        } else {
          state.record({ ara: araId, step: 'complete', logbook: out.logbookId });
          say(`[${n}/${total}] ${title}: ${out.results} results copied as logbook #${out.logbookId}`);
        }
        copied++;
      } catch (err) {
        if (err instanceof UnreachableError) throw err; // the next run deletes and redoes this one
        failed++;
        process.stderr.write(`[${n}/${total}] ${title}: not copied: ${(err as Error).message}\n`);
        if (logbookId !== null) {
          await lb.delete('playbooks', logbookId);
          state.record({ ara: araId, step: 'discarded' });
        }
      }
    }
  }
  say(`${copied} copied, ${skipped} skipped (already copied), ${failed} failed; progress in ${s.statePath}`);
  return failed > 0 ? 1 : 0;
}

export async function main(argv: string[]): Promise<number> {
  let s: Settings | 'help';
  try {
    s = settings(argv, process.env);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`import-ara: ${err.message}\n\n${HELP}`);
    return 2;
  }
  if (s === 'help') { process.stdout.write(HELP); return 0; }
  try {
    return await run(s);
  } catch (err) {
    if (err instanceof UnreachableError || err instanceof HttpError) {
      process.stderr.write(`import-ara: ${err.message}\n`);
      return 1;
    }
    process.stderr.write(`import-ara: ${(err as Error).stack ?? String(err)}\n`);
    return 1;
  }
}
