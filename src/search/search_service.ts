// The front's handle on the search worker (src/search_worker.ts): starts it on
// the data directory's index file, hands each shard worker a port to it, and
// asks it queries. If the worker cannot start (better-sqlite3 did not build, the
// file cannot be opened), logbook runs without search and says why: search is
// derived data and never stops the recording.
import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import { join } from 'node:path';
import { log } from '../log.js';
import type { SearchReply, SearchRequest, SearchStats, SearchWorkerInit } from './protocol.js';

export const SEARCH_FILE = 'search.sqlite';

type Pending = (reply: SearchReply | SearchStats) => void;

export class SearchService {
  private readonly pending = new Map<number, Pending>();
  private nextRid = 1;
  private closed = false;
  /** the worker's last pushed stats (each second), for /metrics */
  latest: SearchStats | null = null;

  private constructor(private readonly worker: Worker) {
    worker.on('message', (msg: SearchReply | SearchStats | { k: 'closed' | 'ready' }) => {
      if (msg.k !== 'hits' && msg.k !== 'stats') return;
      if (msg.k === 'stats' && msg.rid === 0) { this.latest = msg; return; }
      const done = this.pending.get(msg.rid);
      this.pending.delete(msg.rid);
      done?.(msg);
    });
    worker.on('exit', (code) => {
      if (!this.closed) log.error('search worker exited; search answers 503 until logbook restarts', { code });
      this.closed = true;
      for (const [rid, done] of this.pending) done({ k: 'hits', rid, hits: [], count: null, error: 'the search worker stopped' });
      this.pending.clear();
    });
  }

  /** Start the worker on `<dataDir>/search.sqlite`; null (and a warning) if it cannot run. */
  static async start(dataDir: string, logLevel?: SearchWorkerInit['logLevel']): Promise<SearchService | null> {
    const init: SearchWorkerInit = { path: join(dataDir, SEARCH_FILE), ...(logLevel ? { logLevel } : {}) };
    const worker = new Worker(new URL('../search_worker.js', import.meta.url), { workerData: init });
    const started = await new Promise<string | null>((resolve) => {
      worker.once('message', (msg: { k: string }) => resolve(msg.k === 'ready' ? null : `unexpected ${msg.k}`));
      worker.once('error', (err) => resolve(String(err?.message ?? err)));
      worker.once('exit', (code) => resolve(`exited with code ${code}`));
    });
    if (started !== null) {
      log.warn('search is off: the search worker could not start', { err: started });
      await worker.terminate();
      return null;
    }
    return new SearchService(worker);
  }

  get available(): boolean { return !this.closed; }

  /** A new port for a shard's worker (each start of it: a restarted worker gets a new one). */
  portFor(shard: number): MessagePort | null {
    if (this.closed) return null;
    const { port1, port2 } = new MessageChannel();
    this.worker.postMessage({ k: 'port', shard, port: port1 }, [port1]);
    return port2;
  }

  query(req: Omit<SearchRequest, 'k' | 'rid'>): Promise<SearchReply> {
    if (this.closed) return Promise.resolve({ k: 'hits', rid: 0, hits: [], count: null, error: 'the search worker stopped' });
    const rid = this.nextRid++;
    return new Promise((resolve) => {
      this.pending.set(rid, (r) => resolve(r as SearchReply));
      this.worker.postMessage({ ...req, k: 'query', rid });
    });
  }

  stats(): Promise<SearchStats | null> {
    if (this.closed) return Promise.resolve(null);
    const rid = this.nextRid++;
    return new Promise((resolve) => {
      this.pending.set(rid, (r) => resolve(r as SearchStats));
      this.worker.postMessage({ k: 'stats', rid });
    });
  }

  /** After the shards have stopped (their last batches are posted): close the index and stop. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 5000);
      this.worker.on('message', (msg: { k: string }) => { if (msg.k === 'closed') { clearTimeout(timer); resolve(); } });
      this.worker.postMessage({ k: 'close' });
    });
    await this.worker.terminate();
  }
}
