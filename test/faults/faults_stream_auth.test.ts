// The live stream obeys authentication for its whole life (issue #51, item 3),
// against a real server: a stream opened with a credential that is then removed
// from the tokens/users file is closed; a WebSocket upgrade from another site's
// page (Origin) is refused unless LOGBOOK_CORS_ORIGINS allows it; subscribers
// are capped in all and per client, and a closed one frees its place.
import test from 'ava';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { api, startLogbook, type Logbook } from '../helpers/server.js';
import { openSse, openWs, type StreamClient } from '../helpers/stream.js';
import { hashSecret } from '../../src/config/password.js';

const LN = 12;
const basic = (user: string, password: string) => ({ authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` });
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

const dir = mkdtempSync(join(tmpdir(), 'logbook-stream-auth-'));
const USERS = join(dir, 'users');
const TOKENS = join(dir, 'tokens');
let lb: Logbook;
let usersText = '';

test.before(async () => {
  usersText = `alice:${await hashSecret(Buffer.from('alice-pw'), LN)}:write\n`;
  writeFileSync(USERS, usersText + `bob:${await hashSecret(Buffer.from('bob-pw'), LN)}:read\n`);
  writeFileSync(TOKENS, `dash:${await hashSecret(Buffer.from('dash-secret'), LN)}:read\nci:${await hashSecret(Buffer.from('ci-secret'), LN)}:write\n`);
  lb = await startLogbook({ env: {
    LOGBOOK_READ_LOGIN_REQUIRED: 'true', LOGBOOK_WRITE_LOGIN_REQUIRED: 'true',
    LOGBOOK_USERS_FILE: USERS, LOGBOOK_TOKENS_FILE: TOKENS,
    LOGBOOK_CORS_ORIGINS: 'https://ui.example',
    LOGBOOK_STREAM_MAX_SUBSCRIBERS: '4', LOGBOOK_STREAM_MAX_PER_CLIENT: '2',
  } });
});

test.after.always(async () => {
  await lb?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** The status an upgrade or SSE request was refused with (0: it opened; the stream is closed again). */
async function refusal(open: Promise<StreamClient>): Promise<number> {
  try {
    const s = await open;
    s.close();
    await s.ended;
    return 0;
  } catch (err) {
    return (err as { status?: number }).status ?? -1;
  }
}

test.serial('a WebSocket upgrade from an origin that is neither the server\'s own nor allowed by CORS is refused 403', async (t) => {
  const auth = basic('alice', 'alice-pw');
  t.is(await refusal(openWs(lb.url, '', { ...auth, origin: 'https://evil.example' })), 403, 'foreign origin');
  t.is(await refusal(openWs(lb.url, '', { ...auth, origin: 'null' })), 403, 'opaque origin');
  t.is(await refusal(openWs(lb.url, '', { ...auth, origin: 'https://ui.example' })), 0, 'allowed by LOGBOOK_CORS_ORIGINS');
  t.is(await refusal(openWs(lb.url, '', { ...auth, origin: 'HTTPS://UI.Example' })), 0, 'scheme and host compared without case');
  t.is(await refusal(openWs(lb.url, '', { ...auth, origin: `http://127.0.0.1:${lb.port}` })), 0, 'the server\'s own origin');
  t.is(await refusal(openWs(lb.url, '', auth)), 0, 'no Origin: not a browser');
  // the refusal comes before credentials: a foreign page learns nothing about them
  t.is(await refusal(openWs(lb.url, '', { origin: 'https://evil.example' })), 403);
});

test.serial('streams opened with a credential that is then revoked are closed (SSE and WebSocket, header and token parameter)', async (t) => {
  const sseHeader = await openSse(lb.url, '', basic('bob', 'bob-pw'));
  const sseToken = await openSse(lb.url, '?token=dash.dash-secret');
  const ws = await openWs(lb.url, '', bearer('dash.dash-secret'));
  const kept = await openSse(lb.url, '', basic('alice', 'alice-pw'));
  for (const s of [sseHeader, sseToken, ws, kept]) await s.waitFor(1);
  // bob leaves the users file, dash the tokens file (the files are polled every second)
  writeFileSync(USERS, usersText);
  writeFileSync(TOKENS, `ci:${await hashSecret(Buffer.from('ci-secret'), LN)}:write\n`);
  const deadline = (p: Promise<number>) => Promise.race([p, new Promise<string>((r) => setTimeout(() => r('still open'), 15_000))]);
  t.is(await deadline(sseHeader.ended), 0, 'SSE with a removed user ends');
  t.is(await deadline(sseToken.ended), 0, 'SSE with a removed token (?token=) ends');
  t.is(await deadline(ws.ended), 4401, 'WebSocket with a removed token is closed 4401');
  // a credential still in force keeps its stream and sees later changes
  const pb = await api(lb.url, 'POST', '/api/v1/playbooks', { path: '/after-revoke.yml', runner_version: '2.16.0' }, basic('alice', 'alice-pw'));
  t.is(pb.status, 201);
  await kept.waitFor((m) => m.some((x) => x.data.type === 'playbook' && x.data.id === pb.body.id), 10_000);
  kept.close();
  await kept.ended;
  // and a new stream with the revoked credential is refused
  t.is(await refusal(openSse(lb.url, '?token=dash.dash-secret')), 401);
});

async function retryWhileBusy<T>(open: () => Promise<T>): Promise<T> {
  for (let i = 0; ; i++) {
    try {
      return await open();
    } catch (err) {
      if ((err as { status?: number }).status !== 503 || i >= 50) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

test.serial('subscribers are capped per client and in all (503), and a closed one frees its place', async (t) => {
  const alice = basic('alice', 'alice-pw');
  // the server learns that an SSE client of the previous test went when its socket closes
  const a1 = await retryWhileBusy(() => openSse(lb.url, '', alice));
  const a2 = await retryWhileBusy(() => openWs(lb.url, '', alice));
  const a3 = await refusal(openSse(lb.url, '', alice));
  t.is(a3, 503, 'a third for the same credential');
  t.is(await refusal(openWs(lb.url, '', alice)), 503, 'also over WebSocket');
  const c1 = await openSse(lb.url, '?token=ci.ci-secret');
  const c2 = await openSse(lb.url, '?token=ci.ci-secret');
  // 4 in all now: another credential is refused too
  const res = await fetch(`${lb.url}/api/v1/stream`, { headers: { accept: 'text/event-stream', ...basic('bob', 'bob-pw') } });
  // bob was removed by the previous test: 401 comes first; use a user that exists
  t.is(res.status, 401);
  await res.body?.cancel();
  writeFileSync(USERS, usersText + `carol:${await hashSecret(Buffer.from('carol-pw'), LN)}:read\n`);
  const carol = basic('carol', 'carol-pw');
  let status = 0;
  for (let i = 0; i < 50 && status !== 503; i++) {
    status = await refusal(openSse(lb.url, '', carol));
    if (status === 401) await new Promise((r) => setTimeout(r, 200)); // the file is polled: not reloaded yet
  }
  t.is(status, 503, 'past LOGBOOK_STREAM_MAX_SUBSCRIBERS');
  a1.close();
  await a1.ended;
  // the place is free once the server has seen the client go
  let reopened = 503;
  for (let i = 0; i < 50 && reopened === 503; i++) {
    reopened = await refusal(openSse(lb.url, '', carol));
    if (reopened === 503) await new Promise((r) => setTimeout(r, 100));
  }
  t.is(reopened, 0);
  for (const s of [a2, c1, c2]) { s.close(); await s.ended; }
});
