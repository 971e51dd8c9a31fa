// Cluster mode against a NATS server that asks what production servers ask:
// TLS with a private CA and a user with a password (LOGBOOK_CLUSTER_TLS_CA,
// LOGBOOK_CLUSTER_USER, LOGBOOK_CLUSTER_PASSWORD). A real Debian nats-server
// and a real logbook node; certificates made with openssl for the test.
import test from 'ava';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hasNatsServer, startNatsCluster, type NatsCluster } from '../helpers/nats.js';
import { api, startLogbook, type Logbook } from '../helpers/server.js';

const hasNats = hasNatsServer();
if (!hasNats) console.warn('e2e_cluster_auth: nats-server not installed; skipped (apt-get install nats-server)');
const serial = hasNats ? test.serial : test.serial.skip;

let dir: string;
let nats: NatsCluster;
const USER = 'logbook', PASSWORD = 'pass word:with=signs';

test.before(async () => {
  if (!hasNats) return;
  dir = mkdtempSync(join(tmpdir(), 'logbook-nats-auth-'));
  const f = (name: string) => join(dir, name);
  const ssl = (args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' });
  ssl(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=logbook test CA', '-keyout', f('ca.key'), '-out', f('ca.pem')]);
  ssl(['req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=127.0.0.1', '-keyout', f('server.key'), '-out', f('server.csr')]);
  // nats.js names 127.0.0.1 "localhost" for TLS (an IP is no server name)
  writeFileSync(f('san.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  ssl(['x509', '-req', '-in', f('server.csr'), '-CA', f('ca.pem'), '-CAkey', f('ca.key'), '-CAcreateserial', '-days', '2',
    '-extfile', f('san.ext'), '-out', f('server.pem')]);
  nats = await startNatsCluster({
    size: 1,
    extraConfig: [
      'tls {', `  cert_file: "${f('server.pem')}"`, `  key_file: "${f('server.key')}"`, '}',
      'authorization {', `  users: [ { user: "${USER}", password: "${PASSWORD}" } ]`, '}',
    ],
  });
});

test.after.always(async () => {
  await nats?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function nodeEnv(extra: Record<string, string>): Record<string, string> {
  return {
    LOGBOOK_CLUSTER: nats.urls.join(','), LOGBOOK_NODE: 'auth1', LOGBOOK_PARTITIONS: '2', LOGBOOK_REPLICAS: '1',
    LOGBOOK_SHUTDOWN_TIMEOUT: '2', ...extra,
  };
}

serial('a node connects over TLS verified with LOGBOOK_CLUSTER_TLS_CA, as a user with a password, and records and serves', async (t) => {
  const node: Logbook = await startLogbook({
    env: nodeEnv({ LOGBOOK_CLUSTER_TLS_CA: join(dir, 'ca.pem'), LOGBOOK_CLUSTER_USER: USER, LOGBOOK_CLUSTER_PASSWORD: PASSWORD }),
  });
  try {
    // both partitions owned (the node's workers connected with the same credentials)
    let health: any;
    for (let i = 0; i < 200; i++) {
      health = (await api(node.url, 'GET', '/healthz')).body;
      if (health?.cluster && Object.keys(health.cluster.owned).length === 2) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    t.deepEqual(Object.keys(health.cluster.owned).sort(), ['0', '1'], JSON.stringify(health));
    t.is(health.cluster.nats, 'connected');
    const created = await api(node.url, 'POST', '/api/v1/playbooks', { path: '/srv/tls.yml', runner_version: '2.16.0' });
    t.is(created.status, 201, created.text);
    const read = await api(node.url, 'GET', `/api/v1/playbooks/${created.body.id}`);
    t.is(read.status, 200);
    t.is(read.body.path, '/srv/tls.yml');
  } finally {
    await node.stop();
  }
});

serial('without the CA the server certificate is not trusted, and with a wrong password the server refuses: the node stops (exit 2) and says why', async (t) => {
  for (const [what, extra, reason] of [
    ['no CA', { LOGBOOK_CLUSTER_USER: USER, LOGBOOK_CLUSTER_PASSWORD: PASSWORD }, /logbook: cannot use the NATS servers .*certificate/],
    ['wrong password', { LOGBOOK_CLUSTER_TLS_CA: join(dir, 'ca.pem'), LOGBOOK_CLUSTER_USER: USER, LOGBOOK_CLUSTER_PASSWORD: 'wrong' }, /logbook: cannot use the NATS servers .*Authorization Violation/],
  ] as const) {
    const err = await t.throwsAsync(startLogbook({ env: nodeEnv(extra) }), undefined, what);
    t.regex(err!.message, /exited with 2/, `${what}: ${err!.message.slice(-600)}`);
    t.regex(err!.message, reason, `${what}: ${err!.message.slice(-600)}`);
  }
});
