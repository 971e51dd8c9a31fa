// Admission from the request head (src/http/admission.ts): under a flood the
// server refuses requests with 503 + Retry-After + a JSON body before reading
// their bodies, reads are refused like writes, and every write it acknowledged
// is stored. Outcomes only: no durations are asserted.
import test from 'ava';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hashSecret } from '../../src/config/password.js';
import { api, startLogbook } from '../helpers/server.js';

/**
 * Send a POST head announcing a body that is never sent; resolves with the
 * raw answer, or null if none came within `waitMs` (the server is waiting for
 * the body: it admitted the request).
 */
function headOnly(port: number, waitMs: number): Promise<string | null> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let got = '';
    const done = (v: string | null) => { clearTimeout(timer); socket.destroy(); resolve(v); };
    const timer = setTimeout(() => done(null), waitMs);
    socket.on('data', (d) => {
      got += d.toString('latin1');
      const head = got.indexOf('\r\n\r\n');
      const m = /\r\ncontent-length: *(\d+)/i.exec(got);
      if (head >= 0 && m && got.length >= head + 4 + Number(m[1])) done(got);
    });
    socket.on('error', () => done(got || null));
    socket.write('POST /api/v1/playbooks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n');
  });
}

test.serial('a request refused under overload is answered from its head, before its body arrives', async (t) => {
  // every request beyond 4 in flight at the shard is refused (LOGBOOK_SHARD_QUEUE)
  const lb = await startLogbook({ env: { LOGBOOK_SHARDS: '1', LOGBOOK_SHARD_QUEUE: '4', LOGBOOK_SHARD_QUEUE_DELAY: '0' } });
  try {
    // 64 writers keep the shard full; meanwhile heads announcing a body that never comes
    let answer: string | null = null;
    let stop = false;
    const writers = Promise.all(Array.from({ length: 64 }, async (_, w) => {
      for (let i = 0; !stop && i < 2000; i++) await api(lb.url, 'POST', '/api/v1/playbooks', { path: `/flood/${w}-${i}.yml`, runner_version: '2.16.0' });
    }));
    for (let probe = 0; probe < 40 && answer === null; probe++) answer = await headOnly(lb.port, 500);
    stop = true;
    await writers;
    t.truthy(answer, 'some request head was refused while the shard was full');
    t.regex(answer!, /^HTTP\/1\.1 503 /);
    t.regex(answer!, /\r\nRetry-After: 1\r\n/i);
    t.regex(answer!, /\r\nContent-Type: application\/json\r\n/i);
    t.true(answer!.endsWith('{"detail":"The server is overloaded; retry shortly."}'));
    // the operator's view: the once-a-second `shedding` line puts these refusals down to the length cap
    let shedding: Array<Record<string, unknown>> = [];
    for (let i = 0; i < 40 && !shedding.length; i++) {
      shedding = lb.output().split('\n').filter((l) => l.includes('"msg":"shedding"') && l.endsWith('}')).map((l) => JSON.parse(l));
      if (!shedding.length) await new Promise((r) => setTimeout(r, 100));
    }
    t.true(shedding.length > 0, 'a shedding line was logged');
    const byLength = shedding.reduce((n, l) => n + (l.refusedQueueLength as number), 0);
    const refused = shedding.reduce((n, l) => n + (l.refusedShardDelay as number) + (l.refusedAfterParse as number), 0);
    t.true(byLength > 0, 'refusals by the length cap are counted as such');
    t.is(byLength, refused, 'with no delay bound, every refusal for the shard is the length cap\'s');
    t.deepEqual(shedding.map((l) => (l.shardAnswerRatePerS as unknown[]).length), shedding.map(() => 1), 'the answer rate admission judges by is reported per shard');
  } finally {
    await lb.stop();
  }
});

test.serial('under a flood of writes and reads some are refused with 503 + Retry-After, and every acknowledged write is stored', async (t) => {
  const lb = await startLogbook({ env: { LOGBOOK_SHARDS: '2', LOGBOOK_SHARD_QUEUE: '16', LOGBOOK_SHARD_QUEUE_DELAY: '1' } });
  try {
    const first = await api(lb.url, 'POST', '/api/v1/playbooks', { path: '/first.yml', runner_version: '2.16.0' });
    t.is(first.status, 201);
    // A fresh shard is held to its length cap alone (a burst may be a closed
    // population's ramp: see ShardPool.oversubscribed), so the cap is small: on a
    // loaded machine the 400 clients did not put 64 in one shard's queue at once
    // (a fresh-clone CI run: 0 of 600 refused).
    // 600 requests from 400 connections at once: more would overflow the
    // listen backlog (512) of a server whose loop is busy, and a loaded machine
    // then drops connection attempts until the client gives up ("fetch failed")
    const rs: Array<Awaited<ReturnType<typeof api>>> = [];
    let next = 0;
    await Promise.all(Array.from({ length: 400 }, async () => {
      for (let i = next++; i < 600; i = next++) {
        rs[i] = await (i % 3 === 2
          ? api(lb.url, 'GET', `/api/v1/playbooks/${first.body.id}`)
          : api(lb.url, 'POST', '/api/v1/playbooks', { path: `/flood/${i}.yml`, runner_version: '2.16.0', labels: [`l${i % 7}`] }));
      }
    }));
    const writes = rs.filter((_, i) => i % 3 !== 2), reads = rs.filter((_, i) => i % 3 === 2);
    const created = writes.filter((r) => r.status === 201);
    const refused = rs.filter((r) => r.status === 503);
    t.log(`${writes.length} writes: ${created.length} created; ${reads.length} reads: ${reads.filter((r) => r.status === 200).length} answered; ${refused.length} refused`);
    t.deepEqual([...new Set(writes.map((r) => r.status))].filter((s) => s !== 201 && s !== 503), [], 'writes are created or refused');
    t.deepEqual([...new Set(reads.map((r) => r.status))].filter((s) => s !== 200 && s !== 503), [], 'reads are answered or refused');
    t.true(refused.length > 0, 'the flood was shed');
    t.true(created.length > 0, 'the flood was not refused whole');
    for (const r of refused) {
      t.is(r.headers.get('retry-after'), '1');
      t.is(r.headers.get('content-type'), 'application/json');
      t.deepEqual(r.body, { detail: 'The server is overloaded; retry shortly.' });
    }
    // /metrics counts every refusal, by where it was decided
    const metrics = await fetch(`${lb.url}/metrics`).then((r) => r.text());
    const counted = [...metrics.matchAll(/^logbook_requests_refused_total\{reason="(\w+)"\} (\d+)$/gm)];
    t.deepEqual(counted.map((m) => m[1]).sort(), ['after_parse', 'front_lag', 'shard_queue']);
    t.is(counted.reduce((sum, m) => sum + Number(m[2]), 0), refused.length);
    // every acknowledged write is readable, and nothing refused was stored
    for (const r of created) {
      const back = await api(lb.url, 'GET', `/api/v1/playbooks/${r.body.id}`);
      t.is(back.status, 200);
      t.is(back.body.path, r.body.path);
    }
    const list = await api(lb.url, 'GET', '/api/v1/playbooks?limit=1');
    t.is(list.body.count, created.length + 1);
    // and it serves normally once the flood is over
    const after = await api(lb.url, 'POST', '/api/v1/playbooks', { path: '/after.yml', runner_version: '2.16.0' });
    t.is(after.status, 201);
  } finally {
    await lb.stop();
  }
});

test.serial('with login required, an overloaded shard refuses before credentials are checked, and no write without valid credentials is stored', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'logbook-overload-auth-'));
  const tokens = join(dir, 'tokens');
  writeFileSync(tokens, `ci:${await hashSecret(Buffer.from('s3cret'), 14)}:write\n`);
  const lb = await startLogbook({ env: {
    LOGBOOK_SHARDS: '1', LOGBOOK_SHARD_QUEUE: '4', LOGBOOK_SHARD_QUEUE_DELAY: '0',
    LOGBOOK_READ_LOGIN_REQUIRED: 'true', LOGBOOK_WRITE_LOGIN_REQUIRED: 'true', LOGBOOK_TOKENS_FILE: tokens,
  } });
  const valid = { authorization: 'Bearer ci.s3cret' };
  try {
    // 48 writers with the token keep the shard full (4 in flight); meanwhile
    // writers without credentials and with a wrong token, until each has met the overload
    let stop = false;
    const created: number[] = [];
    const writers = Promise.all(Array.from({ length: 48 }, async (_, w) => {
      for (let i = 0; !stop && i < 2000; i++) {
        const r = await api(lb.url, 'POST', '/api/v1/playbooks', { path: `/flood/${w}-${i}.yml`, runner_version: '2.16.0' }, valid);
        if (r.status === 201) created.push(r.body.id);
        else if (r.status !== 503) throw new Error(`a write with the token got ${r.status}`);
      }
    }));
    const intruders: Array<{ status: number; body: unknown }> = [];
    const intrude = async (headers: Record<string, string>): Promise<boolean> => {
      for (let i = 0; i < 400; i++) {
        const r = await api(lb.url, 'POST', '/api/v1/playbooks', { path: `/intruder/${i}.yml`, runner_version: '2.16.0' }, headers);
        intruders.push(r);
        if (r.status === 503) return true;
      }
      return false;
    };
    const [none, wrong] = await Promise.all([intrude({}), intrude({ authorization: 'Bearer ci.wrong' })]);
    stop = true;
    await writers;
    t.true(none, 'a write without credentials met the overload: 503, not 401');
    t.true(wrong, 'a write with a wrong token met the overload: 503, not 401');
    t.deepEqual([...new Set(intruders.map((r) => r.status))].filter((s) => s !== 401 && s !== 503), [], 'refused, never stored');
    for (const r of intruders.filter((x) => x.status === 503)) t.deepEqual(r.body, { detail: 'The server is overloaded; retry shortly.' });
    // what was stored is exactly what the token holder was told was created
    const list = await api(lb.url, 'GET', '/api/v1/playbooks?limit=1', undefined, valid);
    t.is(list.status, 200);
    t.is(list.body.count, created.length);
    // and once the flood is over, credentials are checked as ever
    t.is((await api(lb.url, 'POST', '/api/v1/playbooks', { path: '/after.yml', runner_version: '2.16.0' })).status, 401);
    t.is((await api(lb.url, 'POST', '/api/v1/playbooks', { path: '/after.yml', runner_version: '2.16.0' }, valid)).status, 201);
  } finally {
    await lb.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
