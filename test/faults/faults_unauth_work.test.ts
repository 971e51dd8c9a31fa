// Unauthenticated work is cheap (issue #51, item 4), against a real server with
// logins required: large bodies of requests whose credentials are still being
// verified cannot take the body budget from an authenticated writer, and one
// client's flood of password checks cannot lock out another client's login.
import test from 'ava';
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { api, startLogbook, type Logbook } from '../helpers/server.js';
import { hashSecret } from '../../src/config/password.js';

// the production cost: a check takes tenths of a second here, so a queue of them lasts
const LN = 15;
const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

const dir = mkdtempSync(join(tmpdir(), 'logbook-unauth-'));
const USERS = join(dir, 'users');
let lb: Logbook;

test.before(async () => {
  writeFileSync(USERS, `alice:${await hashSecret(Buffer.from('alice-pw'), LN)}:write\ncarol:${await hashSecret(Buffer.from('carol-pw'), LN)}:read\n`);
  lb = await startLogbook({ env: { LOGBOOK_READ_LOGIN_REQUIRED: 'true', LOGBOOK_WRITE_LOGIN_REQUIRED: 'true', LOGBOOK_USERS_FILE: USERS } });
});

test.after.always(async () => {
  await lb?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** A request from a given local address (127.0.0.x): status and body. */
function from(localAddress: string, method: string, path: string, authorization: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: lb.port, method, path, localAddress, headers: { authorization }, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => { body += d; }).on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

test.serial('bodies of requests whose credentials are being verified do not take the body budget from an authenticated writer', async (t) => {
  const alice = basic('alice', 'alice-pw');
  // alice's credentials are verified once, then remembered (no KDF for her later requests)
  const pb = await api(lb.url, 'POST', '/api/v1/playbooks', { path: '/budget.yml', runner_version: '2.16.1' }, { authorization: alice });
  t.is(pb.status, 201);
  // 40 clients announce 32 MiB bodies with wrong (distinct) passwords and start sending them:
  // their credentials wait in the password-check queue meanwhile (a body's announced length
  // is held from its first chunk)
  const size = 32 * 1024 * 1024 - 1024; // just under LOGBOOK_MAX_BODY_BYTES: 8 of them fill the shared budget
  const sockets: Socket[] = [];
  t.teardown(() => { for (const s of sockets) s.destroy(); });
  const chunk = Buffer.alloc(64 * 1024, 0x20);
  for (let i = 0; i < 40; i++) {
    const s = connect(lb.port, '127.0.0.1');
    s.on('error', () => {});
    sockets.push(s);
    s.write(`POST /api/v1/records HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${size}\r\nAuthorization: ${basic('mallory', 'guess-' + i)}\r\n\r\n`);
    s.write(chunk);
  }
  await new Promise((r) => setTimeout(r, 300));
  // meanwhile alice's 2 MB write is stored
  let statuses: number[] = [];
  for (let round = 0; round < 3; round++) {
    const res = await api(lb.url, 'POST', '/api/v1/records',
      { playbook: pb.body.id, key: `big${round}`, type: 'text', value: 'x'.repeat(2 * 1024 * 1024) }, { authorization: alice });
    statuses.push(res.status);
  }
  t.deepEqual(statuses, [201, 201, 201], 'the authenticated writer is not refused');
});

test.serial('one client\'s flood of password checks does not lock out another client\'s login', async (t) => {
  // 100 distinct wrong passwords at once from 127.0.0.2: far more than the password-check queue
  const flood = Array.from({ length: 100 }, (_, i) => from('127.0.0.2', 'GET', '/api/v1/playbooks', basic('mallory', `flood-${i}`)));
  await new Promise((r) => setTimeout(r, 100));
  // a fresh login (not remembered yet) from another address
  const carol = await from('127.0.0.1', 'GET', '/api/v1/playbooks', basic('carol', 'carol-pw'));
  const results = await Promise.all(flood);
  const byStatus: Record<number, number> = {};
  for (const r of results) byStatus[r.status] = (byStatus[r.status] ?? 0) + 1;
  t.log(`flood: ${JSON.stringify(byStatus)}; carol: ${carol.status}`);
  t.is(carol.status, 200, carol.body);
  t.true((byStatus[503] ?? 0) > 0, 'the flood was refused past its share (503)');
  t.false(results.some((r) => r.status === 200), 'no wrong password passed');
});
