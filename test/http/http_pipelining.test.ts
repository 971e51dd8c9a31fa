// HTTP/1.1 pipelining (a request written before the previous answer on the same connection came
// back), exactly as docs/operations.md#pipelining says: uWebSockets.js answers pipelined requests
// the front answers at once, in order; behind a request that waits for a shard (every API read and
// write) it refuses the next request by closing the connection, so neither is answered (answers
// cannot be mixed up). The server keeps serving; a write in such a request is applied at most once.
import test from 'ava';
import { startLogbook, type Logbook } from '../helpers/server.js';
import { list, uniq } from '../helpers/fixtures.js';
import { rawExchange } from '../helpers/raw_http.js';

let server: Logbook;
test.before(async () => { server = await startLogbook({ env: { LOGBOOK_SHARDS: '2' }, startTimeoutMs: 120_000 }); });
test.after.always(async () => { await server?.stop(); });

const get = (path: string) => `GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`;

test('requests the front answers at once, pipelined in one write: every one answered, in order', async (t) => {
  const piped = await rawExchange(server.port, [get('/healthz') + `OPTIONS /api/v1/playbooks HTTP/1.1\r\nHost: x\r\n\r\n` + get('/healthz')],
    { waitMs: 30_000, untilResponses: 3 });
  t.deepEqual(piped.responses.map((r) => r.status), [200, 200, 200]);
  t.like(JSON.parse(piped.responses[0]!.body), { status: 'ok' });
  t.is(piped.responses[1]!.headers.get('allow')?.[0], 'GET, POST, HEAD, OPTIONS', 'the second answer is the OPTIONS one');
  t.like(JSON.parse(piped.responses[2]!.body), { status: 'ok' });
  t.false(piped.closed, 'the connection stays open');
});

test('a request pipelined behind one that waits for a shard: the connection is closed, neither answered; the server keeps serving', async (t) => {
  for (const [what, second] of [['two list reads', get('/api/v1/playbooks')], ['a list read, then /healthz', get('/healthz')]] as const) {
    const piped = await rawExchange(server.port, [get('/api/v1/playbooks') + second], { waitMs: 30_000, untilResponses: 2 });
    t.true(piped.closed, `${what}: closed`);
    t.deepEqual(piped.responses, [], `${what}: no answer at all (never a partial or a mixed-up one)`);
  }
  const alone = await rawExchange(server.port, [get('/api/v1/playbooks')], { waitMs: 30_000, untilResponses: 1 });
  t.deepEqual(alone.responses.map((r) => r.status), [200], 'the same request alone is answered');
});

test('a write pipelined with a read: closed unanswered; the write is applied at most once, so a client retries as after any lost connection', async (t) => {
  const path = `/${uniq('pipelined')}.yml`;
  const body = JSON.stringify({ path, runner_version: '2.16.0' });
  const post = `POST /api/v1/playbooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  const piped = await rawExchange(server.port, [post + get('/healthz')], { waitMs: 30_000, untilResponses: 2 });
  t.true(piped.closed);
  t.deepEqual(piped.responses, []);
  // the close does not undo a write its shard already took; it never applies twice
  const count = (await list(server.url, 'playbooks', { path })).count as number;
  t.true(count <= 1, `${count} playbooks`);
});
