// What the front needs of the webhook dispatcher (src/webhooks/dispatcher.ts),
// which sits above the front: it reads the front's live stream and answers
// /api/v1/webhooks. server.ts makes it when LOGBOOK_WEBHOOKS_FILE is set and
// hands it to the Front.
import type { Metrics } from '../metrics.js';
import type { Exchange } from './respond.js';
import type { Stream } from './stream.js';

export interface WebhookService {
  /** the shards have recovered and the stream is live */
  start(stream: Stream, shards: number, metrics: Metrics): void;
  close(): Promise<void>;
  /** GET /api/v1/webhooks */
  list(ex: Exchange): void;
  /** GET /api/v1/webhooks/<name>/deliveries */
  deliveries(ex: Exchange, name: string, query: string): void;
  /** before a /metrics scrape */
  sample(): void;
}
