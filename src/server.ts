// Wires the parts together: shards first, then the HTTP front on its port.
// Used by main.ts and by benchmarks that want a server in-process.
import { App, us_listen_socket_close, us_socket_local_port, type us_listen_socket } from 'uWebSockets.js';
import type { Config } from './config.js';
import { Front } from './http/front.js';
import { ShardPool } from './shard/pool.js';
import { VERSION } from './version.js';

export interface Server {
  port: number;
  close(): Promise<void>;
}

export async function startServer(config: Config): Promise<Server> {
  const pool = await ShardPool.start({ shards: config.shards, compat: config.araCompat });
  const front = new Front(config, pool, VERSION);
  const app = App();
  app.any('/*', (res, req) => front.onRequest(res, req));
  const socket = await new Promise<us_listen_socket>((resolve, reject) => {
    app.listen(config.host, config.port, (s) => (s ? resolve(s) : reject(new Error(`cannot listen on ${config.host}:${config.port}`))));
  });
  front.port = us_socket_local_port(socket);
  return {
    port: front.port,
    async close() {
      us_listen_socket_close(socket);
      await pool.close();
    },
  };
}
