// GET /api/v1/playbooks/<id>/junit.xml (docs/api.md#junit-xml), read as CI reads it: by a real JUnit
// consumer (Debian's python3-junitparser, the library CI report tools build on) and checked
// well-formed by xmllint. The run is recorded through batch ingest with every result status,
// and text XML cannot carry as is (ANSI colour escapes, quotes, markup).
import test, { type ExecutionContext } from 'ava';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { api, startLogbook, type Logbook } from '../helpers/server.js';
import { SERVER_ENV, call, post } from '../helpers/fixtures.js';

let lb: Logbook;
test.before(async () => { lb = await startLogbook({ env: SERVER_ENV }); });
test.after.always(async () => { await lb?.stop(); });

// Debian's python (the package's), not another python3 that may come first on PATH
const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
const hasJunitparser = spawnSync(PYTHON, ['-c', 'import junitparser'], { encoding: 'utf8' }).status === 0;
const hasXmllint = spawnSync('xmllint', ['--version'], { encoding: 'utf8' }).error === undefined;

/** The report as junitparser reads it: suites with their totals and cases with their outcome. */
function readWithJunitparser(xml: string): any {
  const script = `
import json, sys
from junitparser import JUnitXml, Failure, Error, Skipped
xml = JUnitXml.fromstring(sys.stdin.read())
out = {"tests": xml.tests, "failures": xml.failures, "errors": xml.errors, "skipped": xml.skipped, "suites": []}
for suite in xml:
    cases = []
    for case in suite:
        kinds = [type(r).__name__ for r in case.result]
        msgs = [r.message for r in case.result]
        texts = [r.text for r in case.result]
        cases.append({"classname": case.classname, "name": case.name, "time": case.time, "result": kinds, "message": msgs, "text": texts})
    out["suites"].append({"name": suite.name, "tests": suite.tests, "failures": suite.failures, "errors": suite.errors, "skipped": suite.skipped, "cases": cases})
print(json.dumps(out))
`;
  const r = spawnSync(PYTHON, ['-c', script], { input: xml, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`junitparser: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

async function recordRun(t0: ExecutionContext): Promise<number> {
  const play1 = '5254000b-0000-0000-0000-0000000000a1';
  const play2 = '5254000b-0000-0000-0000-0000000000a2';
  const r = await call(lb.url, 'POST', '/api/v1/ingest', {
    playbook: { uuid: `junit-${Date.now()}`, path: '/srv/site.yml', name: 'deploy <site> & "db"', runner_version: '2.16.3' },
    seq: 1,
    events: [
      { kind: 'file', path: '/srv/site.yml', content: '- hosts: all\n' },
      { kind: 'play', uuid: play1, name: 'web', status: 'completed' },
      { kind: 'play', uuid: play2, name: 'db', status: 'completed' },
      { kind: 'task', uuid: 't1', play: play1, file: '/srv/site.yml', name: 'install nginx', action: 'apt', lineno: 3, handler: false },
      { kind: 'task', uuid: 't2', play: play1, file: '/srv/site.yml', name: 'start it', action: 'service', lineno: 9, handler: false },
      { kind: 'task', uuid: 't3', play: play2, file: '/srv/site.yml', name: '', action: 'command', lineno: 20, handler: false },
      { kind: 'result', task: 't1', host: 'web-1', status: 'ok', changed: true, started: '2026-01-01T00:00:00Z', ended: '2026-01-01T00:00:02.5Z', content: {} },
      { kind: 'result', task: 't1', host: 'web-2', status: 'failed', started: '2026-01-01T00:00:00Z', ended: '2026-01-01T00:00:01Z',
        content: { msg: 'No package matching \'nginx<2\' is available\nsecond line', stderr: '\u001b[31mE: Unable to locate package\u001b[0m' } },
      { kind: 'result', task: 't2', host: 'web-1', status: 'skipped', content: { skip_reason: 'Conditional result was False' } },
      { kind: 'result', task: 't2', host: 'web-3', status: 'unreachable', content: { msg: 'Failed to connect to the host via ssh' } },
      { kind: 'result', task: 't3', host: 'db-1', status: 'failed', ignore_errors: true, content: { msg: 'ignored failure' } },
      { kind: 'playbook', status: 'failed' },
    ],
  }, 200);
  t0.is(r.body.applied, 12);
  return r.body.playbook;
}

(hasJunitparser ? test : test.skip)('a run as JUnit XML: a suite per play, a case per result, failures with their message, read by junitparser', async (t) => {
  if (!hasJunitparser) t.log('python3-junitparser is not installed (.ci/run installs it)');
  const id = await recordRun(t);
  const res = await fetch(`${lb.url}/api/v1/playbooks/${id}/junit.xml`);
  t.is(res.status, 200);
  t.regex(res.headers.get('content-type') ?? '', /^application\/xml/);
  const xml = await res.text();
  if (hasXmllint) {
    const lint = spawnSync('xmllint', ['--noout', '-'], { input: xml, encoding: 'utf8' });
    t.is(lint.status, 0, `xmllint: ${lint.stderr}`);
  } else t.log('xmllint is not installed: well-formedness checked by junitparser only');
  const report = readWithJunitparser(xml);
  t.like(report, { tests: 5, failures: 1, errors: 1, skipped: 1 });
  t.deepEqual(report.suites.map((s: any) => [s.name, s.tests, s.failures, s.errors, s.skipped]), [['web', 4, 1, 1, 1], ['db', 1, 0, 0, 0]]);
  const cases = report.suites.flatMap((s: any) => s.cases);
  t.deepEqual(cases.map((c: any) => [c.name, c.result]), [
    ['[web-1] web: install nginx', []],
    ['[web-2] web: install nginx', ['Failure']],
    ['[web-1] web: start it', ['Skipped']],
    ['[web-3] web: start it', ['Error']],
    ['[db-1] db: command', []], // an ignored failure passes, as ansible's junit callback has it by default
  ]);
  t.true(cases.every((c: any) => c.classname === '/srv/site.yml'));
  t.is(cases[0].time, 2.5);
  const failed = cases[1];
  t.is(failed.message[0], 'No package matching \'nginx<2\' is available', 'the first line of msg');
  t.true(failed.text[0].includes('second line'));
  t.true(failed.text[0].includes('\ufffd[31mE: Unable to locate package'), 'an ANSI escape, not allowed in XML, is replaced');
  t.is(cases[3].message[0], 'Failed to connect to the host via ssh');
});

test('junit.xml of a playbook that does not exist → 404 JSON; other methods → 405; the route is in the OpenAPI document', async (t) => {
  const missing = await api(lb.url, 'GET', '/api/v1/playbooks/999999/junit.xml');
  t.is(missing.status, 404);
  t.deepEqual(missing.body, { detail: 'Not found.' });
  const empty = await post(lb.url, '/api/v1/playbooks', { path: '/srv/empty.yml', runner_version: '2.16.3' });
  const none = await fetch(`${lb.url}/api/v1/playbooks/${empty.id}/junit.xml`);
  t.is(none.status, 200);
  t.regex(await none.text(), /<testsuites name="\/srv\/empty.yml" tests="0" failures="0" errors="0" skipped="0" time="0.000" timestamp="[^"]+"><\/testsuites>/);
  const posted = await api(lb.url, 'POST', `/api/v1/playbooks/${empty.id}/junit.xml`, {});
  t.is(posted.status, 405);
  const doc = (await api(lb.url, 'GET', '/api/v1/openapi.json')).body;
  t.truthy(doc.paths['/api/v1/playbooks/{id}/junit.xml']?.get);
});
