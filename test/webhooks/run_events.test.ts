// Run events from live-stream changes (src/webhooks/run_events.ts): a run ends once
// however often it is written after; "fixed" is the first success of a series after a
// failure; a run that ended before webhooks were switched on is not news; a host is
// reported unreachable once per run; the ids are the same when the changes are read again.
import test from 'ava';
import { RunWatcher, type ChangeMessage, type PlaybookFacts, type WatchState } from '../../src/webhooks/run_events.js';

/** The watcher's state in maps (the dispatcher keeps it in front.mdb: src/webhooks/outbox.ts). */
class MemoryState implements WatchState {
  readonly playbooks = new Map<number, PlaybookFacts>();
  readonly series = new Map<string, string>();
  readonly hosts = new Set<string>();
  playbook(id: number) { return this.playbooks.get(id); }
  setPlaybook(id: number, facts: PlaybookFacts | null) { if (facts) this.playbooks.set(id, facts); else this.playbooks.delete(id); }
  seriesLast(s: string) { return this.series.get(s); }
  setSeriesLast(s: string, status: string) { this.series.set(s, status); }
  hostNotified(p: number, h: number) { return this.hosts.has(`${p}:${h}`); }
  setHostNotified(p: number, h: number) { this.hosts.add(`${p}:${h}`); }
  forgetHosts(p: number) { for (const k of [...this.hosts]) if (k.startsWith(`${p}:`)) this.hosts.delete(k); }
}

const WATCHING_SINCE = Date.parse('2026-11-01T00:00:00Z');
const row = (id: number, status: string, extra: Record<string, unknown> = {}) =>
  ({ id, status, path: '/srv/site.yml', name: 'deploy', labels: [{ id: 1, name: 'prod' }], ended: status === 'running' ? null : '2026-11-29T01:00:00.000000Z', ...extra });
const pb = (op: ChangeMessage['op'], id: number, status: string, extra: Record<string, unknown> = {}): ChangeMessage =>
  ({ op, type: 'playbook', id, playbook: id, row: op === 'delete' ? null : row(id, status, extra) });
const host = (id: number, playbook: number, unreachable: number): ChangeMessage =>
  ({ op: 'update', type: 'host', id, playbook, row: { id, name: `h${id}`, playbook, unreachable } });

function watcher() {
  const state = new MemoryState();
  const w = new RunWatcher(state, WATCHING_SINCE);
  let seq = 0;
  const see = (msg: ChangeMessage) => w.observe(0, ++seq, msg).map((e) => e.type);
  return { state, w, see };
}

test('a run: started, then one end however often it is written after; a failure is run.ended then run.failed', (t) => {
  const { see } = watcher();
  t.deepEqual(see(pb('create', 1, 'running')), ['run.started']);
  t.deepEqual(see(pb('update', 1, 'running')), []);
  t.deepEqual(see(pb('update', 1, 'failed')), ['run.ended', 'run.failed']);
  t.deepEqual(see(pb('update', 1, 'failed', { labels: [{ id: 2, name: 'late' }] })), []);
  t.deepEqual(see(pb('update', 1, 'completed')), [], 'from one end to another is not a new end');
  // a run created already ended (one batch): started and ended at once; after run 1's failure it fixes the series
  t.deepEqual(see(pb('create', 2, 'completed')), ['run.started', 'run.ended', 'run.fixed']);
});

test('fixed: the first success of a series after a failure; expired runs and other series do not count', (t) => {
  const { see } = watcher();
  const run = (id: number, status: string, extra: Record<string, unknown> = {}) => { see(pb('create', id, 'running', extra)); return see(pb('update', id, status, extra)); };
  t.deepEqual(run(1, 'completed'), ['run.ended']);
  t.deepEqual(run(2, 'failed'), ['run.ended', 'run.failed']);
  t.deepEqual(run(3, 'completed', { name: 'other' }), ['run.ended'], 'another name is another series');
  t.deepEqual(run(4, 'expired'), ['run.ended'], 'an expired run neither fails nor fixes');
  t.deepEqual(run(5, 'completed'), ['run.ended', 'run.fixed']);
  t.deepEqual(run(6, 'completed'), ['run.ended']);
});

test('a run never seen before: its end is news only if it ended since webhooks were switched on', (t) => {
  const { see } = watcher();
  t.deepEqual(see(pb('update', 7, 'completed', { ended: '2026-10-01T00:00:00.000000Z' })), [], 'ended before: a late write to an old run');
  t.deepEqual(see(pb('update', 8, 'failed')), ['run.ended', 'run.failed'], 'ran across the switch-on');
  t.deepEqual(see(pb('update', 9, 'running')), []);
  t.deepEqual(see(pb('update', 9, 'completed')), ['run.ended', 'run.fixed'], 'after run 8\'s failure');
});

test('a host is reported unreachable once per run, only while the run is running; ids name the change', (t) => {
  const { see, w } = watcher();
  see(pb('create', 1, 'running'));
  t.deepEqual(see(host(10, 1, 0)), []);
  t.deepEqual(see(host(10, 1, 1)), ['host.unreachable']);
  t.deepEqual(see(host(10, 1, 2)), []);
  t.deepEqual(see(host(11, 1, 1)), ['host.unreachable']);
  t.deepEqual(see(host(12, 99, 1)), [], 'a run the watcher never saw start');
  see(pb('update', 1, 'failed'));
  t.deepEqual(see(host(13, 1, 1)), [], 'after the end');
  const [event] = w.observe(3, 42, pb('create', 20, 'running'));
  t.is(event!.id, '3.42.run.started');
  t.deepEqual(w.observe(3, 43, host(21, 20, 1)).map((e) => [e.id, e.host?.name, e.playbook.path]), [['3.43.host.unreachable', 'h21', '/srv/site.yml']]);
});

test('a deleted run is forgotten', (t) => {
  const { see, state } = watcher();
  see(pb('create', 1, 'running'));
  see(host(10, 1, 1));
  t.deepEqual(see(pb('delete', 1, 'running')), []);
  t.is(state.playbooks.size, 0);
  t.is(state.hosts.size, 0);
});
