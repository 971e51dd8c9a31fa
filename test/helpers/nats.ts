// A real JetStream cluster for tests: N Debian `nats-server` processes (default 3) on
// free loopback ports, each with its own config file and store directory in one temp
// directory. Children are plain (non-daemon) processes; stop() kills every one still
// running and removes the directory. Leaves the config files in place while running so a
// failing test can be reproduced by hand (`nats-server -c <dir>/n1.conf`).
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, mkdtempSync, mkdirSync, rmSync, writeFileSync, appendFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, onPath } from './ansible.js';

const DEBIAN_NATS = '/usr/sbin/nats-server';

/** the nats-server binary (Debian's /usr/sbin/nats-server, or one on PATH), or null */
export function natsServerBinary(): string | null {
  try {
    accessSync(DEBIAN_NATS, constants.X_OK);
    return DEBIAN_NATS;
  } catch { /* not there */ }
  return onPath('nats-server') ? 'nats-server' : null;
}

export function hasNatsServer(): boolean { return natsServerBinary() !== null; }

export interface NatsServerProc {
  /** server_name, also what JetStream reports as a stream's cluster leader */
  name: string;
  url: string;
  clientPort: number;
  configFile: string;
  child: ChildProcess | null;
}

export interface NatsCluster {
  dir: string;
  servers: NatsServerProc[];
  /** every client URL, for connect({ servers }) */
  urls: string[];
  /** SIGKILL one server (by server_name) and wait for it to exit */
  kill(name: string): Promise<void>;
  /** start a killed server again, on its configuration and store directory, and wait until it is ready */
  restart(name: string): Promise<void>;
  /** the last lines every server logged (for failure messages) */
  logTail(lines?: number): string;
  /** kills every server still running and removes the directory */
  stop(): Promise<void>;
}

export interface NatsClusterOptions {
  size?: number;
  /** max_payload of every server, bytes (NATS default 1 MB); small values make split commits cheap to test */
  maxPayload?: number;
  /** more top-level lines of every server's configuration (e.g. `tls { … }`, `authorization { … }`) */
  extraConfig?: string[];
}

function waitExit(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

export async function startNatsCluster(options: NatsClusterOptions = {}): Promise<NatsCluster> {
  const bin = natsServerBinary();
  if (bin === null) throw new Error('nats-server is not installed (apt-get install nats-server)');
  const size = options.size ?? 3;
  const dir = mkdtempSync(join(tmpdir(), 'logbook-nats-'));
  const clientPorts: number[] = [];
  const routePorts: number[] = [];
  for (let i = 0; i < size; i++) { clientPorts.push(await freePort()); routePorts.push(await freePort()); }
  const servers: NatsServerProc[] = [];
  for (let i = 0; i < size; i++) {
    const name = `n${i + 1}`;
    const store = join(dir, name);
    mkdirSync(store);
    const routes = routePorts.filter((_, j) => j !== i).map((p) => `nats-route://127.0.0.1:${p}`);
    const configFile = join(dir, `${name}.conf`);
    writeFileSync(configFile, [
      `server_name: ${name}`,
      `listen: 127.0.0.1:${clientPorts[i]}`,
      ...(options.maxPayload !== undefined ? [`max_payload: ${options.maxPayload}`] : []),
      'jetstream {',
      `  store_dir: "${store}"`,
      '  max_memory_store: 67108864',
      '  max_file_store: 1073741824',
      '}',
      ...(options.extraConfig ?? []),
      // one server is no cluster (JetStream then runs standalone)
      ...(size > 1 ? [
        'cluster {',
        '  name: logbook-test',
        `  listen: 127.0.0.1:${routePorts[i]}`,
        `  routes: [${routes.join(', ')}]`,
        '}',
      ] : []),
      '',
    ].join('\n'));
    servers.push({ name, url: `nats://127.0.0.1:${clientPorts[i]}`, clientPort: clientPorts[i]!, configFile, child: null });
  }
  const logOf = (s: NatsServerProc) => join(dir, `${s.name}.log`);
  const launch = (s: NatsServerProc): Promise<void> => {
    const child = spawn(bin, ['-c', s.configFile], { stdio: ['ignore', 'pipe', 'pipe'] });
    s.child = child;
    return new Promise<void>((resolve, reject) => {
      let seen = '';
      const timer = setTimeout(() => reject(new Error(`${s.name} not ready in 30 s:\n${seen.slice(-2000)}`)), 30_000);
      const onData = (d: Buffer) => {
        const text = d.toString('utf8');
        appendFileSync(logOf(s), text);
        if (seen.length < 100_000) seen += text;
        if (seen.includes('Server is ready')) { clearTimeout(timer); resolve(); }
      };
      child.stdout!.on('data', onData);
      child.stderr!.on('data', onData);
      child.once('exit', (code, signal) => { clearTimeout(timer); reject(new Error(`${s.name} exited (${code ?? signal}) before ready:\n${seen.slice(-2000)}`)); });
    });
  };
  const ready = servers.map(launch);
  const cluster: NatsCluster = {
    dir,
    servers,
    urls: servers.map((s) => s.url),
    async kill(name) {
      const s = servers.find((x) => x.name === name);
      if (!s?.child) throw new Error(`no running nats server ${name}`);
      const child = s.child;
      child.kill('SIGKILL');
      await waitExit(child);
      s.child = null;
    },
    async restart(name) {
      const s = servers.find((x) => x.name === name);
      if (!s || s.child) throw new Error(`no stopped nats server ${name}`);
      await launch(s);
    },
    logTail(lines = 20) {
      return servers.map((s) => {
        let text = '';
        try { text = readFileSync(logOf(s), 'utf8'); } catch { /* nothing logged */ }
        return `--- ${s.name}\n${text.split('\n').slice(-lines).join('\n')}`;
      }).join('\n');
    },
    async stop() {
      await Promise.all(servers.map(async (s) => {
        if (!s.child) return;
        const child = s.child;
        child.kill('SIGKILL');
        await waitExit(child);
        s.child = null;
      }));
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    await Promise.all(ready);
  } catch (err) {
    await cluster.stop();
    throw err;
  }
  return cluster;
}
