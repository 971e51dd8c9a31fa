// Time of a shard's part of a list page in every documented order and with
// `status` filters, in one process, without HTTP: `node dist/bench/list_pages.js
// [results=1000000]`. One shard holds every result (the worst case: a server
// spreads them over its shards). For each order: the first list that asks for
// it (which builds the order it is kept in, src/shard/list_orders.ts), then
// the median of 7 first pages and of 7 cursor pages half-way down (100 rows,
// rendered as a single-shard list renders them); for a few ARA defaults, the
// same pages by the scan every list used before (forced with a filter every
// row matches). The read scenario times the same over HTTP on the shared store.
import { ORDER_KEYS, RESULT_STATUSES, RUN_STATUSES } from '../src/api/resources.js';
import { runList } from '../src/shard/list.js';
import type { ListQuery, NormalizedFilter } from '../src/shard/protocol.js';
import { Serializer } from '../src/shard/serialize.js';
import { ShardState } from '../src/shard/state.js';

const RESULTS = Number(process.argv[2] ?? 1_000_000);
const HOSTS = 10, TASKS = 100;
const PLAYBOOKS = Math.max(1, Math.round(RESULTS / (HOSTS * TASKS)));

/** A deterministic stream of numbers in [0, 1). */
let seed = 7;
const rnd = (): number => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };

function build(): ShardState {
  const state = new ShardState();
  const ids = [0, 0, 0, 0, 0, 0, 0, 0];
  const next = (code: number): number => ++ids[code]!;
  const t0 = Date.parse('2026-01-01T00:00:00Z') * 1000;
  for (let p = 0; p < PLAYBOOKS; p++) {
    const pid = next(1);
    const started = t0 + p * 60_000_000;
    const running = p % 50 === 0;
    const ended = running ? null : started + TASKS * 1_000_000;
    state.apply({ e: 'create', t: 'playbook', p: pid, d: { id: pid, created: started, updated: ended ?? started, started, ended, name: `site-${p % 37}`, runner_version: '2.16.0', status: running ? 'running' : rnd() < 0.1 ? 'failed' : 'completed', path: `/srv/site-${p % 37}.yml`, labels: [] } });
    const file = next(6);
    state.apply({ e: 'create', t: 'file', p: pid, d: { id: file, playbook: pid, created: started, updated: started, path: `/srv/site-${p % 37}.yml`, sha1: `sha-${p % 37}` } });
    const play = next(2);
    state.apply({ e: 'create', t: 'play', p: pid, d: { id: play, playbook: pid, created: started, updated: started, started, ended, name: 'all', uuid: `00000000-0000-0000-0000-${String(play).padStart(12, '0')}`, status: running ? 'running' : 'completed' } });
    const hosts: number[] = [];
    for (let h = 0; h < HOSTS; h++) {
      const id = next(4);
      hosts.push(id);
      state.apply({ e: 'create', t: 'host', p: pid, d: { id, playbook: pid, created: started, updated: started, name: `web-${h}.example.org` } });
    }
    for (let k = 0; k < TASKS; k++) {
      const task = next(3);
      const ts = started + k * 1_000_000;
      state.apply({ e: 'create', t: 'task', p: pid, d: { id: task, playbook: pid, play, file, created: ts, updated: ts + 900_000, started: ts, ended: ts + 900_000, name: `task ${k}`, action: 'apt', lineno: k, handler: false, status: 'completed' } });
      for (const host of hosts) {
        const id = next(5);
        const rs = ts + Math.floor(rnd() * 500_000);
        const r = rnd();
        const status = r < 0.02 ? 'failed' : r < 0.09 ? 'skipped' : r < 0.1 ? 'unreachable' : 'ok';
        state.apply({ e: 'create', t: 'result', p: pid, d: { id, playbook: pid, play, task, host, created: rs + 400_000, updated: rs + 400_000, started: rs, ended: rs + Math.floor(rnd() * 400_000), status, changed: status === 'ok' && rnd() < 0.3, ignore_errors: false, delegated_to: [] } });
      }
    }
    if (p % 10 === 0) state.apply({ e: 'create', t: 'record', p: pid, d: { id: next(7), playbook: pid, created: started, updated: started, key: `k${p % 13}`, type: 'text' } });
  }
  return state;
}

const tb = performance.now();
const state = build();
console.log(`built ${state.results.size.toLocaleString('en-US')} results, ${state.tasks.size.toLocaleString('en-US')} tasks, ${state.hosts.size.toLocaleString('en-US')} hosts, ${state.aggregates.size} playbooks in ${((performance.now() - tb) / 1000).toFixed(1)} s`);
const serializer = new Serializer(state, { getBlob: () => undefined }, false);

const median = (xs: number[]): number => xs.sort((a, b) => a - b)[xs.length >> 1]!;
function time(q: ListQuery, runs = 7): number {
  const ms: number[] = [];
  for (let i = 0; i < runs; i++) { const t = performance.now(); runList(state, serializer, q); ms.push(performance.now() - t); }
  return median(ms);
}

type Case = { label: string; q: ListQuery; scan?: boolean };
const cases: Case[] = [];
const status = (values: string[]): NormalizedFilter => ({ kind: 'status', column: 'status', value: values });
for (const [type, keys] of Object.entries(ORDER_KEYS)) {
  if (type === 'label') continue; // labels are the front's
  for (const key of keys) for (const desc of [true, false]) {
    if (key === 'id' && !desc) continue; // the natural order
    const q: ListQuery = { type: type as ListQuery['type'], filters: [], order: [[key, desc]], skip: 0, take: 100 };
    cases.push({ label: `${type}s?order=${desc ? '-' : ''}${key}`, q, scan: desc && ['result:started', 'task:started', 'host:updated', 'playbook:started'].includes(`${type}:${key}`) });
  }
}
for (const s of RESULT_STATUSES) {
  cases.push({ label: `results?status=${s}`, q: { type: 'result', filters: [status([s])], order: [], skip: 0, take: 100 }, scan: s === 'failed' });
  cases.push({ label: `results?status=${s}&order=-started`, q: { type: 'result', filters: [status([s])], order: [['started', true]], skip: 0, take: 100 } });
}
for (const type of ['playbook', 'play', 'task'] as const) for (const s of RUN_STATUSES) {
  cases.push({ label: `${type}s?status=${s}&order=started`, q: { type, filters: [status([s])], order: [['started', false]], skip: 0, take: 100 }, scan: type === 'playbook' && s === 'running' });
}

const rows: string[] = [];
let worstFirst = 0, worstCursor = 0;
for (const { label, q, scan } of cases) {
  const t = performance.now();
  const { count } = runList(state, serializer, { ...q, take: 1 });
  const buildMs = performance.now() - t;
  const first = time(q);
  // the boundary half-way down, then the page after it
  const mid = runList(state, serializer, { ...q, skip: Math.floor(count / 2), take: 1, keysOnly: true }).rows[0];
  const cursorQ: ListQuery | null = mid ? { ...q, bound: { keys: mid.slice(0, -1) as Array<number | string | null>, back: false } } : null;
  const cursor = cursorQ ? time(cursorQ) : 0;
  worstFirst = Math.max(worstFirst, first); worstCursor = Math.max(worstCursor, cursor);
  let before = '';
  if (scan) {
    const every: NormalizedFilter = { kind: 'int_gt', column: 'id', value: 0 };
    const old = time({ ...q, filters: [...q.filters, every] }, 3);
    const oldCursor = cursorQ ? time({ ...cursorQ, filters: [...cursorQ.filters, every] }, 3) : 0;
    before = ` | scan: first ${old.toFixed(1)} ms, cursor ${oldCursor.toFixed(1)} ms`;
  }
  rows.push(`${label.padEnd(40)} ${String(count).padStart(8)} rows | first use ${buildMs.toFixed(0).padStart(5)} ms | first page ${first.toFixed(2)} ms | cursor page ${cursor.toFixed(2)} ms${before}`);
  console.log(rows[rows.length - 1]);
}
console.log(`worst first page ${worstFirst.toFixed(2)} ms, worst cursor page ${worstCursor.toFixed(2)} ms (${cases.length} lists)`);
