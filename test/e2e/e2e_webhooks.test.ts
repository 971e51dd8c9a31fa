// Webhooks (docs/webhooks.md): a real logbook process with a webhooks file, and a
// real HTTP receiver in this test process. A failed run recorded by a real
// ansible-playbook reaches the receiver, signed; the next good run of its series
// is "fixed"; filters pick what each endpoint gets; a receiver that is down
// loses nothing and gets it all in order once back; kill -9 of logbook, in the
// middle of a delivery or right after a run's end was acknowledged, loses
// nothing either (the delivery comes again after the restart, with its id).
import test from 'ava';
import { createHmac } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { api, startLogbook, type Logbook } from '../helpers/server.js';
import { createPlaybook, patch, uniq, type Json } from '../helpers/fixtures.js';
import { eventually } from '../helpers/ops.js';
import { hasAnsible, runPlaybook } from '../helpers/ansible.js';

const SECRET = 'a-secret-of-at-least-16-chars';

interface Delivery { event: string; id: string; signature: string; body: string; json: Json }

/** An HTTP receiver: records what it is sent; `mode` decides how it answers. */
class Receiver {
  readonly got: Delivery[] = [];
  mode: 'ok' | 'fail' | 'hold' = 'ok';
  private held: ServerResponse[] = [];
  private server: Server | null = null;
  port = 0;

  async start(port = 0): Promise<this> {
    this.server = createServer((req, res) => this.handle(req, res));
    await new Promise<void>((resolve, reject) => { this.server!.once('error', reject); this.server!.listen(port, '127.0.0.1', resolve); });
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  get url(): string { return `http://127.0.0.1:${this.port}/hook`; }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => { body += d; });
    req.on('end', () => {
      let json: Json = null;
      try { json = JSON.parse(body); } catch { /* recorded as it is */ }
      this.got.push({
        event: String(req.headers['x-logbook-event'] ?? ''), id: String(req.headers['x-logbook-delivery'] ?? ''),
        signature: String(req.headers['x-logbook-signature'] ?? ''), body, json,
      });
      if (this.mode === 'hold') { this.held.push(res); return; }
      res.writeHead(this.mode === 'ok' ? 204 : 500).end();
    });
  }

  async stop(): Promise<void> {
    for (const res of this.held) res.destroy();
    this.held = [];
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server ? this.server.close(() => resolve()) : resolve());
    this.server = null;
  }

  of(event: string, playbook?: number): Delivery[] {
    return this.got.filter((d) => d.event === event && (playbook === undefined || d.json?.playbook?.id === playbook));
  }
}

/** Check a signature as docs/webhooks.md tells a receiver to. */
function verify(d: Delivery, secret = SECRET): boolean {
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(d.signature);
  if (m === null) return false;
  const expected = createHmac('sha256', secret).update(`${m[1]}.${d.body}`).digest('hex');
  return expected === m[2] && Math.abs(Date.now() / 1000 - Number(m[1])) < 300;
}

function webhooksFile(endpoints: Json[], extra: Json = {}): { path: string; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'logbook-webhooks-'));
  const path = join(dir, 'webhooks.json');
  writeFileSync(path, JSON.stringify({ endpoints, ...extra }));
  return { path, dir };
}

async function start(file: string, options: { dataDir?: string } = {}): Promise<Logbook> {
  return startLogbook({ env: { LOGBOOK_SHARDS: '2', LOGBOOK_WEBHOOKS_FILE: file }, dataDir: options.dataDir, keepData: options.dataDir !== undefined });
}

test('a failed ansible-playbook run reaches the endpoint, signed; the next good run of its series is "fixed"; filters pick what each endpoint gets', async (t) => {
  if (!hasAnsible()) { t.log('skipped: ansible-playbook is not installed'); return; }
  const all = await new Receiver().start();
  const prod = await new Receiver().start();
  const slack = await new Receiver().start();
  const file = webhooksFile([
    { name: 'all', url: all.url, secret: SECRET },
    { name: 'prod-failures', url: prod.url, events: ['run.failed', 'run.fixed'], labels: ['prod'] },
    { name: 'chat', url: slack.url, format: 'slack', events: ['run.failed'] },
  ], { public_url: 'https://logbook.example.com/' });
  const lb = await start(file.path);
  t.teardown(async () => { await lb.stop(); await all.stop(); await prod.stop(); await slack.stop(); rmSync(file.dir, { recursive: true, force: true }); });

  // a real run: web2 fails on purpose, ghost is unreachable
  const run = await runPlaybook(lb.url);
  t.not(run.code, 0);
  t.deepEqual(run.callbackErrors, []);
  const failed = await eventually(async () => all.of('run.failed')[0], 20_000, 'run.failed at the receiver');
  const id = failed.json.playbook.id as number;
  t.true(verify(failed), `signature ${failed.signature}`);
  t.is(failed.json.event, 'run.failed');
  t.is(failed.json.id, failed.id);
  t.is(failed.json.playbook.status, 'failed');
  t.is(failed.json.playbook.url, `https://logbook.example.com/ui/playbooks/${id}`);
  t.regex(failed.json.playbook.path, /playbook\.yml$/);
  // and the rest of the run's story, in order: started … host unreachable … ended, failed
  await eventually(async () => all.of('run.ended', id).length === 1, 10_000, 'run.ended');
  const order = all.got.filter((d) => d.json?.playbook?.id === id).map((d) => d.event);
  t.deepEqual(order.filter((e) => e !== 'host.unreachable'), ['run.started', 'run.ended', 'run.failed']);
  const unreachable = all.of('host.unreachable', id);
  t.deepEqual(unreachable.map((d) => d.json.host.name), ['ghost']);
  t.true(order.indexOf('host.unreachable') < order.indexOf('run.ended'));
  // Slack's body: text only, with the run's link
  const chat = await eventually(async () => slack.of('run.failed', undefined)[0] ?? slack.got[0], 10_000, 'the chat message');
  t.regex(chat.json.text, new RegExp(`^:x: Run failed: <https://logbook\\.example\\.com/ui/playbooks/${id}\\|`));
  t.is(chat.signature, '');
  // no `prod` label on it: the prod endpoint got nothing
  t.is(prod.got.length, 0);

  // a series with the prod label: failed, then completed → fixed; the next success is not "fixed" again
  const path = `/srv/${uniq('site')}.yml`;
  const runs: number[] = [];
  for (const status of ['failed', 'completed', 'completed']) {
    const pb = await createPlaybook(lb.url, { path, name: 'deploy', labels: ['prod'] });
    await patch(lb.url, `/api/v1/playbooks/${pb.id}`, { status });
    runs.push(pb.id);
  }
  // a run of another series (another name) succeeding fixes nothing
  const other = await createPlaybook(lb.url, { path, name: 'other', labels: ['prod'] });
  await patch(lb.url, `/api/v1/playbooks/${other.id}`, { status: 'completed' });
  await eventually(async () => all.of('run.ended', other.id).length === 1, 10_000, 'the last run ended');
  await eventually(async () => prod.got.length >= 2, 10_000, 'the prod endpoint');
  t.deepEqual(prod.got.map((d) => [d.event, d.json.playbook.id]), [['run.failed', runs[0]], ['run.fixed', runs[1]]]);
  t.is(prod.got[1]!.json.previous_status, 'failed');
  t.deepEqual(prod.got[1]!.json.series, { path, name: 'deploy' });
  t.deepEqual(all.of('run.fixed').map((d) => d.json.playbook.id), [runs[1]]);
  // every delivery id is unique
  t.is(new Set(all.got.map((d) => d.id)).size, all.got.length);

  // the API: endpoints with their counts (URL without its path), and each one's delivery log; write scope
  const hooks = await api(lb.url, 'GET', '/api/v1/webhooks');
  t.is(hooks.status, 200);
  t.deepEqual(hooks.body.results.map((h: Json) => h.name), ['all', 'prod-failures', 'chat']);
  t.is(hooks.body.results[0].url, `http://127.0.0.1:${all.port}/…`);
  t.is(hooks.body.results[0].pending, 0);
  t.true(hooks.body.results[0].signed);
  const log = await api(lb.url, 'GET', '/api/v1/webhooks/prod-failures/deliveries');
  t.is(log.status, 200);
  t.deepEqual(log.body.results.map((e: Json) => [e.event, e.outcome, e.status, e.attempt]), [['run.fixed', 'delivered', 204, 1], ['run.failed', 'delivered', 204, 1]]);
  t.is((await api(lb.url, 'GET', '/api/v1/webhooks/nope/deliveries')).status, 404);
  t.deepEqual((await api(lb.url, 'GET', '/api/v1/webhooks/all/deliveries?limit=0')).body, { limit: ['Ensure this value is an integer from 1 to 1000.'] });
  t.deepEqual((await api(lb.url, 'GET', '/api/v1/webhooks/all/deliveries?colour=blue')).body, { colour: ['Unknown query parameter.'] });
  // /metrics
  const metrics = (await api(lb.url, 'GET', '/metrics')).text;
  t.regex(metrics, /logbook_webhook_deliveries_total\{endpoint="prod-failures",outcome="delivered"\} 2/);
  t.regex(metrics, /logbook_webhook_pending\{endpoint="all"\} 0/);
  t.regex(metrics, /\nlogbook_stream_subscribers 0\n/); // the dispatcher reads the stream, and is not a client of it
});

test('a receiver that is down loses nothing: retried with backoff, delivered in order once it is back; the log shows the failures', async (t) => {
  const receiver = new Receiver();
  await receiver.start();
  const port = receiver.port;
  await receiver.stop(); // down: nothing listens on its port
  const file = webhooksFile([{ name: 'down', url: `http://127.0.0.1:${port}/hook`, events: ['run.failed', 'run.ended'], max_backoff_seconds: 1 }]);
  const lb = await start(file.path);
  t.teardown(async () => { await lb.stop(); await receiver.stop(); rmSync(file.dir, { recursive: true, force: true }); });
  const ids: number[] = [];
  for (let i = 0; i < 5; i++) {
    const pb = await createPlaybook(lb.url, { path: `/srv/${uniq('down')}.yml` });
    await patch(lb.url, `/api/v1/playbooks/${pb.id}`, { status: i % 2 ? 'completed' : 'failed' });
    ids.push(pb.id);
  }
  const failing = await eventually(async () => {
    const log = await api(lb.url, 'GET', '/api/v1/webhooks/down/deliveries');
    return log.body.results.length >= 3 ? log.body : null;
  }, 20_000, 'failed attempts in the log');
  t.is(failing.pending, 8); // 5 ended + 3 failed
  t.true(failing.results.every((e: Json) => e.outcome === 'failed' && e.status === null && e.error === 'ECONNREFUSED'), JSON.stringify(failing.results[0]));
  t.deepEqual([...new Set(failing.results.map((e: Json) => e.playbook))], [ids[0]]); // the queue waits behind its head
  // back on the same port: everything arrives, in the order it happened
  await receiver.start(port);
  await eventually(async () => receiver.got.length >= 8, 20_000, 'every delivery');
  const expected = ids.flatMap((id, i) => (i % 2 ? [['run.ended', id]] : [['run.ended', id], ['run.failed', id]]));
  t.deepEqual(receiver.got.map((d) => [d.event, d.json.playbook.id]), expected);
  const after = (await api(lb.url, 'GET', '/api/v1/webhooks')).body.results[0];
  t.is(after.pending, 0);
  t.is(after.delivered, 8);
  t.true(after.failed_attempts >= 3);
});

test('kill -9 of logbook in the middle of a delivery, or right after a run ended: nothing is lost, a delivery comes again with its id', async (t) => {
  const receiver = await new Receiver().start();
  receiver.mode = 'hold'; // takes the request and never answers
  const file = webhooksFile([{ name: 'r', url: receiver.url, events: ['run.failed'], max_backoff_seconds: 1, timeout_seconds: 60 }]);
  const dataDir = mkdtempSync(join(tmpdir(), 'logbook-webhooks-data-'));
  let lb = await start(file.path, { dataDir });
  t.teardown(async () => { await lb.stop(); await receiver.stop(); rmSync(file.dir, { recursive: true, force: true }); rmSync(dataDir, { recursive: true, force: true }); });
  const first = await createPlaybook(lb.url, { path: `/srv/${uniq('kill')}.yml` });
  await patch(lb.url, `/api/v1/playbooks/${first.id}`, { status: 'failed' });
  const held = await eventually(async () => receiver.got[0], 10_000, 'the delivery in flight');
  lb.child.kill('SIGKILL');
  await lb.stop();
  receiver.mode = 'ok';
  lb = await start(file.path, { dataDir });
  const again = await eventually(async () => receiver.got[1], 20_000, 'the delivery again');
  t.is(again.id, held.id);
  t.is(again.json.playbook.id, first.id);

  // the end acknowledged, then kill -9 at once: the restarted logbook reads the stream again from its stored position
  const second = await createPlaybook(lb.url, { path: `/srv/${uniq('kill')}.yml` });
  await patch(lb.url, `/api/v1/playbooks/${second.id}`, { status: 'failed' });
  lb.child.kill('SIGKILL');
  await lb.stop();
  lb = await start(file.path, { dataDir });
  await eventually(async () => receiver.of('run.failed', second.id).length >= 1, 20_000, 'the second run\'s failure');
  // nothing else: each run failed once (at least once per delivery; here exactly, as nothing was in flight)
  await new Promise((r) => setTimeout(r, 500));
  t.deepEqual([...new Set(receiver.got.map((d) => d.json.playbook.id))], [first.id, second.id]);
  t.is(receiver.of('run.failed', second.id).length, 1);
});

test('a webhooks file that does not parse stops start-up and says where; the API needs the write scope', async (t) => {
  const bad = webhooksFile([{ name: 'x', url: 'ftp://example.com/', events: ['run.failed'] }]);
  t.teardown(() => rmSync(bad.dir, { recursive: true, force: true }));
  const err = await t.throwsAsync(startLogbook({ env: { LOGBOOK_WEBHOOKS_FILE: bad.path } }));
  t.regex(err!.message, /LOGBOOK_WEBHOOKS_FILE: invalid value .*endpoint "x": "url" must be an http\(s\) URL/);
  const unknown = webhooksFile([{ name: 'x', url: 'http://127.0.0.1:1/', events: ['run.exploded'] }]);
  t.teardown(() => rmSync(unknown.dir, { recursive: true, force: true }));
  const err2 = await t.throwsAsync(startLogbook({ env: { LOGBOOK_WEBHOOKS_FILE: unknown.path } }));
  t.regex(err2!.message, /unknown event "run\.exploded"/);
  // without webhooks: an empty list
  const lb = await startLogbook();
  t.teardown(() => lb.stop());
  t.deepEqual((await api(lb.url, 'GET', '/api/v1/webhooks')).body, { count: 0, next: null, previous: null, results: [] });
  t.is((await api(lb.url, 'POST', '/api/v1/webhooks', {})).status, 405);
});
