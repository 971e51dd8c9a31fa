// LOGBOOK_CLUSTER / LOGBOOK_NODE / LOGBOOK_PARTITIONS / LOGBOOK_REPLICAS / LOGBOOK_CLUSTER_* parsing
// (src/config/cluster.ts): unset = single process; bad values are refused with a
// message that names the variable.
import test from 'ava';
import { fileURLToPath } from 'node:url';
import { ClusterConfigError, clusterConfigFromEnv } from '../../src/config/cluster.js';

test('unset or empty LOGBOOK_CLUSTER means single-process mode', (t) => {
  t.is(clusterConfigFromEnv({}), null);
  t.is(clusterConfigFromEnv({ LOGBOOK_CLUSTER: '  ' }), null);
});

test('a full cluster configuration, with defaults for partitions and replicas', (t) => {
  t.deepEqual(clusterConfigFromEnv({ LOGBOOK_CLUSTER: 'nats://10.0.0.1:4222, nats://nats-2:4222', LOGBOOK_NODE: 'logbook-1' }), {
    servers: ['nats://10.0.0.1:4222', 'nats://nats-2:4222'], node: 'logbook-1', partitions: 32, replicas: 3, auth: {},
  });
  t.deepEqual(clusterConfigFromEnv({ LOGBOOK_CLUSTER: 'nats://a:4222', LOGBOOK_NODE: 'n_2', LOGBOOK_PARTITIONS: '64', LOGBOOK_REPLICAS: '1' }), {
    servers: ['nats://a:4222'], node: 'n_2', partitions: 64, replicas: 1, auth: {},
  });
});

test('NATS credentials and TLS files: user and password, token, creds file, CA, client certificate', (t) => {
  const base = { LOGBOOK_CLUSTER: 'tls://a:4222', LOGBOOK_NODE: 'n1' };
  const file = fileURLToPath(import.meta.url); // any readable file
  t.deepEqual(clusterConfigFromEnv({ ...base, LOGBOOK_CLUSTER_USER: 'logbook', LOGBOOK_CLUSTER_PASSWORD: 'p:w', LOGBOOK_CLUSTER_TLS_CA: file })!.auth,
    { user: 'logbook', password: 'p:w', tlsCa: file });
  t.deepEqual(clusterConfigFromEnv({ ...base, LOGBOOK_CLUSTER_TOKEN: 's3cret' })!.auth, { token: 's3cret' });
  t.deepEqual(clusterConfigFromEnv({ ...base, LOGBOOK_CLUSTER_CREDS: file, LOGBOOK_CLUSTER_TLS_CERT: file, LOGBOOK_CLUSTER_TLS_KEY: file })!.auth,
    { credsFile: file, tlsCert: file, tlsKey: file });
});


const refused: Array<[string, Record<string, string>, RegExp]> = [
  ['node missing', { LOGBOOK_CLUSTER: 'nats://a:4222' }, /LOGBOOK_NODE is required/],
  ['node with a dot', { LOGBOOK_CLUSTER: 'nats://a:4222', LOGBOOK_NODE: 'a.b' }, /LOGBOOK_NODE="a\.b"/],
  ['http URL', { LOGBOOK_CLUSTER: 'http://a:4222', LOGBOOK_NODE: 'n1' }, /must use nats:\/\//],
  ['not a URL', { LOGBOOK_CLUSTER: 'a:4222:x', LOGBOOK_NODE: 'n1' }, /LOGBOOK_CLUSTER/],
  ['empty entry', { LOGBOOK_CLUSTER: 'nats://a:4222,,nats://b:4222', LOGBOOK_NODE: 'n1' }, /empty entry/],
  ['duplicate URL', { LOGBOOK_CLUSTER: 'nats://a:4222,nats://a:4222', LOGBOOK_NODE: 'n1' }, /listed twice/],
  ['zero partitions', { LOGBOOK_CLUSTER: 'nats://a:4222', LOGBOOK_NODE: 'n1', LOGBOOK_PARTITIONS: '0' }, /LOGBOOK_PARTITIONS=0 is out of range/],
  ['fractional partitions', { LOGBOOK_CLUSTER: 'nats://a:4222', LOGBOOK_NODE: 'n1', LOGBOOK_PARTITIONS: '3.5' }, /LOGBOOK_PARTITIONS="3\.5" is not a whole number/],
  ['six replicas', { LOGBOOK_CLUSTER: 'nats://a:4222', LOGBOOK_NODE: 'n1', LOGBOOK_REPLICAS: '6' }, /LOGBOOK_REPLICAS=6 is out of range; expected 1\.\.5/],
  ['negative replicas', { LOGBOOK_CLUSTER: 'nats://a:4222', LOGBOOK_NODE: 'n1', LOGBOOK_REPLICAS: '-1' }, /LOGBOOK_REPLICAS/],
  ['cluster variables without LOGBOOK_CLUSTER', { LOGBOOK_NODE: 'n1' }, /LOGBOOK_NODE is set but LOGBOOK_CLUSTER is not/],
  ['NATS credentials without LOGBOOK_CLUSTER', { LOGBOOK_CLUSTER_TOKEN: 'x' }, /LOGBOOK_CLUSTER_TOKEN is set but LOGBOOK_CLUSTER is not/],
  ['a password without a user', { LOGBOOK_CLUSTER: 'nats://a:4222', LOGBOOK_NODE: 'n1', LOGBOOK_CLUSTER_PASSWORD: 'x' }, /LOGBOOK_CLUSTER_PASSWORD is set without LOGBOOK_CLUSTER_USER/],
  ['a user and a token', { LOGBOOK_CLUSTER: 'nats://a:4222', LOGBOOK_NODE: 'n1', LOGBOOK_CLUSTER_USER: 'u', LOGBOOK_CLUSTER_TOKEN: 't' }, /not several/],
  ['an unreadable CA file', { LOGBOOK_CLUSTER: 'nats://a:4222', LOGBOOK_NODE: 'n1', LOGBOOK_CLUSTER_TLS_CA: '/nonexistent/ca.pem' }, /LOGBOOK_CLUSTER_TLS_CA=\/nonexistent\/ca\.pem: cannot read it \(ENOENT\)/],
  ['a client certificate without its key', { LOGBOOK_CLUSTER: 'nats://a:4222', LOGBOOK_NODE: 'n1', LOGBOOK_CLUSTER_TLS_CERT: '/etc/hostname' }, /go together/],
];
for (const [what, env, message] of refused) {
  test(`refused: ${what}`, (t) => {
    const err = t.throws(() => clusterConfigFromEnv(env), { instanceOf: ClusterConfigError });
    t.regex(err!.message, message);
  });
}
