// The webhooks file (src/config/webhooks.ts, docs/webhooks.md#set-up): defaults, what
// each field accepts, and errors that name the endpoint and the field without quoting a
// secret; LOGBOOK_WEBHOOKS_FILE in cluster mode is refused (the outbox needs front.mdb).
import test from 'ava';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../../src/config.js';
import { WEBHOOK_EVENTS, globTest, loadWebhookSettings, parseWebhookSettings } from '../../src/config/webhooks.js';

const URL_OK = 'https://hooks.example.com/x';

test('an endpoint with only a name and a URL gets every event, json, unsigned, and the default retry bounds', (t) => {
  const { endpoints, publicUrl } = parseWebhookSettings({ endpoints: [{ name: 'ops', url: URL_OK }] });
  t.is(publicUrl, null);
  t.is(endpoints.length, 1);
  const [ep] = endpoints;
  t.deepEqual([...ep!.events], [...WEBHOOK_EVENTS]);
  t.like(ep, { name: 'ops', url: URL_OK, secret: null, format: 'json', maxBackoffSeconds: 300, giveUpAfterSeconds: 72 * 3600, timeoutSeconds: 10 });
  t.is(parseWebhookSettings({ public_url: 'https://lb.example.com///', endpoints: [] }).publicUrl, 'https://lb.example.com');
});

test('a secret file is read relative to the webhooks file; a short secret is refused without being quoted', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'logbook-webhook-settings-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'ops.secret'), 'a-long-enough-secret-value\n');
  writeFileSync(join(dir, 'webhooks.json'), JSON.stringify({ endpoints: [{ name: 'ops', url: URL_OK, secret_file: 'ops.secret' }] }));
  t.is(loadWebhookSettings(join(dir, 'webhooks.json')).endpoints[0]!.secret, 'a-long-enough-secret-value');
  const err = t.throws(() => parseWebhookSettings({ endpoints: [{ name: 'ops', url: URL_OK, secret: 'short-secret' }] }));
  t.regex(err!.message, /endpoint "ops": "secret" must be a string of at least 16 characters/);
  t.notRegex(err!.message, /short-secret/);
});

test('each wrong field is named with its endpoint', (t) => {
  const wrong: Array<[unknown, RegExp]> = [
    [[], /must be a JSON object/],
    [{ endpoints: {} }, /"endpoints" must be a list/],
    [{ endpoints: [], colour: 1 }, /unknown field "colour"/],
    [{ endpoints: [{ url: URL_OK }] }, /endpoint 1: "name" must be/],
    [{ endpoints: [{ name: 'a', url: URL_OK }, { name: 'a', url: URL_OK }] }, /endpoint 2: the name "a" is used twice/],
    [{ endpoints: [{ name: 'a', url: 'ftp://x/' }] }, /endpoint "a": "url" must be an http\(s\) URL/],
    [{ endpoints: [{ name: 'a', url: URL_OK, events: ['run.exploded'] }] }, /unknown event "run\.exploded"/],
    [{ endpoints: [{ name: 'a', url: URL_OK, events: [] }] }, /"events" is empty/],
    [{ endpoints: [{ name: 'a', url: URL_OK, format: 'xml' }] }, /"format" must be "json" or "slack"/],
    [{ endpoints: [{ name: 'a', url: URL_OK, labels: 'prod' }] }, /"labels" must be a list of non-empty strings/],
    [{ endpoints: [{ name: 'a', url: URL_OK, max_backoff_seconds: 0 }] }, /"max_backoff_seconds" must be a number from 1 to 86400/],
    [{ endpoints: [{ name: 'a', url: URL_OK, secret: 'x'.repeat(20), secret_file: '/f' }] }, /give "secret" or "secret_file", not both/],
    [{ endpoints: [{ name: 'a', url: URL_OK, retries: 3 }] }, /unknown field "retries"/],
  ];
  for (const [doc, message] of wrong) t.throws(() => parseWebhookSettings(doc), { message }, JSON.stringify(doc));
});

test('paths and names: exact, or * for any characters; none given passes every run', (t) => {
  const test1 = globTest(['/srv/deploy/*', 'site.yml']);
  t.true(test1('/srv/deploy/web.yml'));
  t.true(test1('site.yml'));
  t.false(test1('/srv/site.yml'));
  t.false(test1('/srv/deploy')); // the slash is part of the pattern
  t.true(globTest([])('anything'));
  t.false(globTest(['a.b'])('aXb')); // a dot is a dot
});

test('LOGBOOK_WEBHOOKS_FILE: checked at start-up; refused in cluster mode', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'logbook-webhook-settings-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'webhooks.json');
  writeFileSync(file, JSON.stringify({ endpoints: [{ name: 'ops', url: URL_OK }] }));
  t.is(loadConfig({ LOGBOOK_WEBHOOKS_FILE: file }, []).webhooksFile, file);
  t.throws(() => loadConfig({ LOGBOOK_WEBHOOKS_FILE: join(dir, 'missing.json') }, []), { instanceOf: ConfigError, message: /LOGBOOK_WEBHOOKS_FILE: .*cannot read it/ });
  writeFileSync(join(dir, 'bad.json'), '{"endpoints": [');
  t.throws(() => loadConfig({ LOGBOOK_WEBHOOKS_FILE: join(dir, 'bad.json') }, []), { message: /it is not JSON/ });
  t.throws(() => loadConfig({ LOGBOOK_WEBHOOKS_FILE: file, LOGBOOK_CLUSTER: 'nats://a:4222', LOGBOOK_NODE: 'n1' }, []),
    { instanceOf: ConfigError, message: /webhooks are not available in cluster mode yet/ });
});
