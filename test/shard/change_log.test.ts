// The live stream's change log on disk (src/shard/changes.ts, the store's
// `changes` table): a result's row is kept as its fields since session 16, as
// JSON text before. Both kinds, written by a shard's LMDB store and read back
// after reopening it (what a replay after a restart or an upgrade reads), render
// to the list row they stand for: field values that msgpack could bend (null
// `ended`, booleans, delegated hosts, microsecond timestamps past 2^32) come
// back exactly.
import test from 'ava';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OP_CREATE, OP_DELETE, OP_UPDATE, rowJson, type StreamChange } from '../../src/shard/changes.js';
import { encode } from '../../src/shard/protocol.js';
import { resultListJson, type ResultListFields } from '../../src/shard/serialize.js';
import { TYPE_CODE } from '../../src/api/resources.js';
import { LmdbShardStore } from '../../src/store/shard_store.js';

const started = Date.UTC(2026, 10, 24, 7, 0, 0) * 1000 + 123_456; // µs, past 2^32
const running: ResultListFields = [7, 'ok', 1, 2, 3, 4, started, null, false, false, null, null, null];
const ignored: ResultListFields = [8, 'ignored', 1, 2, 3, 5, started, started + 62_377_544, true, true, [4, 5], started - 1, started + 62_377_545];
/** the text a log written before session 16 holds for a result */
const oldText = '{"id":6,"status":"changed","playbook":1,"play":2,"task":3,"host":4,"started":"2026-11-24T06:59:59.000001Z","ended":null,"duration":null,"changed":true,"ignore_errors":false}';
const hostText = '{"id":4,"playbook":1,"name":"web-1","changed":1,"failed":0,"ok":2,"skipped":0,"unreachable":0}';

test('result rows kept as fields and as text (older logs) read back after reopening and render their list rows', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'logbook-change-log-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const R = TYPE_CODE.result;
  const older: StreamChange[] = [[1, OP_CREATE, R, 6, 1, oldText, 11]];
  const newer: StreamChange[] = [
    [2, OP_CREATE, R, 7, 1, running, 12], [3, OP_CREATE, R, 8, 1, ignored, 12],
    [4, OP_UPDATE, TYPE_CODE.host, 4, 1, hostText, 12], [5, OP_DELETE, R, 6, 1, null, 12],
  ];
  const store = new LmdbShardStore(dir, 0, 'commit');
  for (const changes of [older, newer]) {
    // as the shard stages them: the commit's write, then its changes in the same turn
    const durable = store.write([], [], [], []);
    store.changeLog.appendChanges(changes, encode(changes));
    await durable;
  }
  await store.close();

  const reopened = new LmdbShardStore(dir, 0, 'commit');
  t.teardown(() => reopened.close());
  const read = reopened.changeLog.readChanges(0, 5, 10);
  t.deepEqual(read.map((c) => c[0]), [1, 2, 3, 4, 5]);
  t.deepEqual(read.map((c) => rowJson(c[5])), [oldText, resultListJson(running), resultListJson(ignored), hostText, 'null']);
  t.deepEqual(JSON.parse(rowJson(read[1]![5])), {
    id: 7, status: 'ok', playbook: 1, play: 2, task: 3, host: 4,
    started: '2026-11-24T07:00:00.123456Z', ended: null, duration: null, changed: false, ignore_errors: false,
  });
  t.deepEqual(JSON.parse(rowJson(read[2]![5])), {
    id: 8, status: 'ignored', playbook: 1, play: 2, task: 3, host: 5,
    started: '2026-11-24T07:00:00.123456Z', ended: '2026-11-24T07:01:02.501000Z', duration: '00:01:02.377544',
    changed: true, ignore_errors: true, delegated_to: [4, 5],
    created: '2026-11-24T07:00:00.123455Z', updated: '2026-11-24T07:01:02.501001Z',
  });
});

test('the label change a commit logged is stored with it: read back after reopening, not when the commit failed', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'logbook-change-log-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  let fail = false;
  const store = new LmdbShardStore(dir, 0, 'commit', { faults: { fail: (what) => fail && what === 'journal' } });
  t.is(store.changeLog.labelChangeSeq(), 0);
  const label: StreamChange[] = [[1, OP_UPDATE, TYPE_CODE.label, 3, null, '{"id":3}', 1]];
  // as the shard logs a label change: its commit's write, its changes and its number in the same turn
  const durable = store.write([], [], [], []);
  store.changeLog.appendChanges(label, encode(label));
  store.changeLog.noteLabelChange(4);
  await durable;
  t.is(store.changeLog.labelChangeSeq(), 4);
  fail = true;
  const refused = store.write([], [], [], []);
  const next: StreamChange[] = [[2, OP_DELETE, TYPE_CODE.label, 3, null, null, 2]];
  store.changeLog.appendChanges(next, encode(next));
  store.changeLog.noteLabelChange(5);
  await t.throwsAsync(refused);
  await store.close();

  const reopened = new LmdbShardStore(dir, 0, 'commit');
  t.teardown(() => reopened.close());
  t.is(reopened.changeLog.labelChangeSeq(), 4, 'the failed commit left neither its changes nor its number');
  t.deepEqual(reopened.changeLog.readChanges(0, 10, 10).map((c) => [c[0], c[3], c[4]]), [[1, 3, null]]);
});
