// kill -9 while results are being written and indexed (docs/search.md#how-it-works):
// the index may lose its last batches, but a restart sees that it is not at
// the shards' journal numbers and rebuilds them, so every acknowledged result
// is findable again, and nothing that was not acknowledged is.
import test from 'ava';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { api, startLogbook } from '../helpers/server.js';

const ENV = { LOGBOOK_SHARDS: '2' };

test('after kill -9 under writes, every acknowledged result is findable, by a common word and by its own', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'logbook-search-crash-'));
  let lb = await startLogbook({ env: ENV, dataDir });
  try {
    const acked: Array<{ id: number; token: string }> = [];
    const stop = { now: false };
    const writer = async (w: number) => {
      const post = async (path: string, body: unknown) => {
        try { const r = await api(lb.url, 'POST', path, body); return r.status === 201 ? r.body : null; } catch { return null; }
      };
      const pb = await post('/api/v1/playbooks', { path: `/crash/${w}.yml`, runner_version: '2.16.1' });
      const file = await post('/api/v1/files', { playbook: pb.id, path: `/crash/${w}.yml`, content: '- hosts: all' });
      const play = await post('/api/v1/plays', { playbook: pb.id, name: 'p', uuid: crypto.randomUUID() });
      const task = await post('/api/v1/tasks', { playbook: pb.id, play: play.id, file: file.id, name: 't', action: 'debug', lineno: 1, handler: false });
      const host = await post('/api/v1/hosts', { playbook: pb.id, name: `h${w}` });
      for (let i = 0; !stop.now; i++) {
        const token = `tok${w}x${i}q`;
        const r = await post('/api/v1/results', { playbook: pb.id, play: play.id, task: task.id, host: host.id, status: 'ok', content: { msg: `crashword ${token}` } });
        if (r) acked.push({ id: r.id, token });
      }
    };
    const writers = Array.from({ length: 4 }, (_, w) => writer(w));
    while (acked.length < 400) await new Promise((r) => setTimeout(r, 20));
    await lb.stop('SIGKILL');
    stop.now = true;
    await Promise.all(writers);
    t.log(`${acked.length} results acknowledged before kill -9`);

    lb = await startLogbook({ env: ENV, dataDir });
    let found: any = null;
    for (let i = 0; i < 200; i++) {
      found = (await api(lb.url, 'GET', '/api/v1/search?q=crashword&type=result&limit=1')).body;
      if (found?.count >= acked.length) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    // what was written after the last acknowledgement the client saw may be there too (written, answer lost): never fewer
    t.true(found.count >= acked.length, `${found.count} found of ${acked.length} acknowledged`);
    const listed = (await api(lb.url, 'GET', '/api/v1/results?limit=1')).body.count;
    t.is(found.count, listed, 'the index holds exactly the results the server holds');
    for (const a of [acked[0]!, acked[Math.floor(acked.length / 2)]!, acked.at(-1)!]) {
      const one = (await api(lb.url, 'GET', `/api/v1/search?q=${a.token}`)).body;
      t.deepEqual(one.results.map((h: any) => [h.type, h.id]), [['result', a.id]], a.token);
    }
  } finally {
    await lb.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
});
