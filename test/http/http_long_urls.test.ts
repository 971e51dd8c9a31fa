// Long list URLs: logbook raises uWebSockets.js's request-head limit
// (UWS_HTTP_MAX_HEADERS_SIZE, read by uWS once when it loads) from uWS's 4 KiB
// to LIMITS.headerBytes (16 KiB), unless the operator set it. A request head of
// exactly the limit — request line with many `status=` values and a long name
// filter, Host header, CRLFs — gets a JSON list; one byte more gets uWS's own
// 431 (a small HTML body) and a closed connection.
import test from 'ava';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LIMITS } from '../../src/limits.js';
import { createPlaybook, list, serveForFile, uniq, type Json } from '../helpers/fixtures.js';
import { runUntilExit } from '../helpers/process.js';
import { rawExchange } from '../helpers/raw_http.js';
import { startLogbook, type Logbook } from '../helpers/server.js';

let lb: Logbook;
serveForFile((server) => { lb = server; });

const STATUSES = ['completed', 'failed', 'running', 'expired', 'unknown'];
/** What uWS answers past the limit, byte for byte (its body, not ours: logbook never sees the request). */
const UWS_431_BODY = '<h1>Request Header Fields Too Large</h1><hr><i>uWebSockets/20 Server</i>';

/**
 * A `GET /api/v1/playbooks` head of exactly `bytes` bytes: name filter `name`,
 * then `status=` values (cycling through every status) and a final `format` (DRF's
 * format override: read and ignored, whatever its value)
 * that makes the length exact.
 */
function listHead(port: number, name: string, bytes: number): { head: string; statuses: number } {
  const tail = ` HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAccept: application/json\r\n\r\n`;
  let target = `/api/v1/playbooks?name=${encodeURIComponent(name)}`;
  let statuses = 0;
  for (;;) {
    const next = `&status=${STATUSES[statuses % STATUSES.length]}`;
    // keep room for the final `&format=` with at least one byte
    if (`GET ${target}${next}&format=x${tail}`.length > bytes) break;
    target += next;
    statuses++;
  }
  const fill = bytes - `GET ${target}&format=${tail}`.length;
  if (fill < 1) throw new Error('cannot pad to the exact length');
  const head = `GET ${target}&format=${'x'.repeat(fill)}${tail}`;
  if (head.length !== bytes) throw new Error(`head is ${head.length} bytes, wanted ${bytes}`);
  return { head, statuses };
}

test('a list request head of exactly the 16 KiB limit, with hundreds of status values and a long name filter, answers JSON', async (t) => {
  const name = `${uniq('long-url')}-${'n'.repeat(200)}`;
  t.true(name.length <= LIMITS.nameLength);
  const pb = await createPlaybook(lb.url, { name });
  await createPlaybook(lb.url, { name: uniq('other') });
  const { head, statuses } = listHead(lb.port, name, LIMITS.headerBytes);
  t.true(statuses > 500, `${statuses} status values`);
  const r = await rawExchange(lb.port, [head]);
  t.is(r.responses.length, 1);
  const res = r.responses[0]!;
  t.is(res.status, 200, res.body.slice(0, 300));
  t.is(res.headers.get('content-type')?.[0], 'application/json');
  const body = JSON.parse(res.body) as Json;
  t.is(body.count, 1);
  t.deepEqual(body.results.map((p: Json) => p.id), [pb.id]);
  t.false(r.closed, 'the connection stays open');
});

test('one byte over the limit: uWebSockets.js answers 431 with its own HTML body and closes; logbook keeps serving', async (t) => {
  const { head } = listHead(lb.port, uniq('long-url'), LIMITS.headerBytes + 1);
  const r = await rawExchange(lb.port, [head]);
  t.true(r.closed, 'connection closed');
  t.is(r.responses.length, 1);
  const res = r.responses[0]!;
  t.is(res.status, 431);
  t.deepEqual(res.headers.get('connection'), ['close']);
  t.is(res.headers.get('content-type'), undefined, 'no Content-Type: not JSON, not from logbook');
  t.is(res.body, UWS_431_BODY);
  // Nothing broke: the next request on a new connection is served.
  const ok = await list(lb.url, 'playbooks', { limit: 1 });
  t.is(typeof ok.count, 'number');
});

test('fetch with a ~15 KB filter URL works end to end (lists, links keep every value)', async (t) => {
  const name = uniq('fetch-long');
  const pb = await createPlaybook(lb.url, { name, status: 'failed' });
  await createPlaybook(lb.url, { name: `${name}-2`, status: 'failed' });
  const status = Array.from({ length: 900 }, (_, i) => STATUSES[i % STATUSES.length]!);
  const page = await list(lb.url, 'playbooks', { name, status, limit: 1 });
  t.is(page.count, 2);
  t.deepEqual(page.results.map((p: Json) => p.id), [pb.id]);
  const url = `/api/v1/playbooks?${new URLSearchParams([['name', name], ...status.map((v): [string, string] => ['status', v]), ['limit', '1']])}`;
  t.true(url.length > 13_000, `${url.length}-byte URL`);
  t.is(String(page.next).match(/[?&]status=/g)?.length, status.length, 'next keeps every status value');
});

test('an operator-set UWS_HTTP_MAX_HEADERS_SIZE wins; a value uWS would misread stops start-up', async (t) => {
  const small = await startLogbook({ env: { LOGBOOK_SHARDS: '1', UWS_HTTP_MAX_HEADERS_SIZE: '8192' } });
  t.teardown(() => small.stop());
  t.regex(small.output(), /"maxHeaderBytes":8192/);
  const at = await rawExchange(small.port, [listHead(small.port, 'x', 8192).head]);
  t.is(at.responses[0]?.status, 200);
  const over = await rawExchange(small.port, [listHead(small.port, 'x', 8193).head]);
  t.is(over.responses[0]?.status, 431);

  const dataDir = mkdtempSync(join(tmpdir(), 'logbook-hdr-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const bad = await runUntilExit({ dataDir, env: { LOGBOOK_SHARDS: '1', UWS_HTTP_MAX_HEADERS_SIZE: '16k' } });
  t.is(bad.code, 2);
  t.regex(bad.output, /UWS_HTTP_MAX_HEADERS_SIZE must be a byte count from 1024 to 1048576, got "16k"/);
});
