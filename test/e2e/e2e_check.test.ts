// The data directory check on what real tools write: a multi-play
// `ansible-playbook` recorded by the stock ARA callback (which also PUTs
// Ansible's own host totals at the end) passes `check`, whether its rows are in
// snapshots or only in the journal; and a journal entry removed from the middle
// of the tail is reported.
import { runCheck } from '../helpers/cli.js';
import test from 'ava';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, cpSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { open } from 'lmdb';
import { hasAnsible, runPlaybook } from '../helpers/ansible.js';
import { startLogbook } from '../helpers/server.js';

const here = dirname(fileURLToPath(import.meta.url));

const check = runCheck;

const ansibleInstalled = hasAnsible();
if (!ansibleInstalled) console.warn('e2e_check: ansible-playbook and the ARA callback are not installed (Debian: ansible-core python3-ara); skipped');

for (const [name, env] of [
  ['journal only (no snapshot yet)', { LOGBOOK_SNAPSHOT_EVERY: '100000000', LOGBOOK_SNAPSHOT_INTERVAL: '86400' }],
  ['snapshots', { LOGBOOK_SNAPSHOT_EVERY: '10', LOGBOOK_SNAPSHOT_INTERVAL: '1' }],
] as const) {
  (ansibleInstalled ? test.serial : test.serial.skip)(`a real ansible-playbook run recorded by the ARA callback passes check (${name})`, async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'logbook-check-ansible-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const lb = await startLogbook({ dataDir: dir, env: { LOGBOOK_SHARDS: '2', ...env } });
    try {
      const run = await runPlaybook(lb.url);
      t.deepEqual(run.callbackErrors, []);
      if (name === 'snapshots') await new Promise((r) => setTimeout(r, 1500));
    } finally {
      t.is(await lb.stop(), 0);
    }
    const r = await check(dir);
    t.is(r.code, 0, r.output);
    t.regex(r.output, /records: 1 playbooks, [1-9]\d* plays, [1-9]\d* tasks, [1-9]\d* hosts, [1-9]\d* results/);
    if (name !== 'snapshots') t.regex(r.output, /journal entries replayed: [1-9]/);

    if (name === 'snapshots') return;
    // remove one journal entry from the middle of the tail: check names the gap
    const bad = mkdtempSync(join(tmpdir(), 'logbook-check-gap-'));
    t.teardown(() => rmSync(bad, { recursive: true, force: true }));
    cpSync(dir, bad, { recursive: true });
    let removed = 0;
    for (let k = 0; k < 2 && !removed; k++) {
      const envDb = open({ path: join(bad, `shard-${k}.mdb`), maxDbs: 4 });
      const journal = envDb.openDB<unknown, number>({ name: 'journal', keyEncoding: 'uint32', encoding: 'msgpack' });
      const keys = [...journal.getKeys()];
      if (keys.length >= 3) { removed = keys[Math.floor(keys.length / 2)]!; await journal.remove(removed); }
      await envDb.close();
    }
    t.true(removed > 0, 'a shard had a journal tail');
    const g = await check(bad);
    t.is(g.code, 1, g.output);
    t.regex(g.output, new RegExp(`journal entries ${removed}–${removed} are missing`));
  });
}
