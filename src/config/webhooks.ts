// The webhooks file (LOGBOOK_WEBHOOKS_FILE; docs/webhooks.md): which endpoints are
// told of which run events. Parsed at start-up by config.ts (a file that does not
// parse stops start-up, naming the endpoint and field at fault, never quoting a
// secret) and again by the webhook dispatcher (src/webhooks/) when it starts.
import { readFileSync } from 'node:fs';
import { globRegExp } from './glob.js';

/** What can happen to a run that an endpoint may be told of. */
export const WEBHOOK_EVENTS = ['run.started', 'run.ended', 'run.failed', 'run.fixed', 'host.unreachable'] as const;
export type WebhookEvent = typeof WEBHOOK_EVENTS[number];

export interface WebhookEndpoint {
  /** names the endpoint in the API, the delivery log and /metrics */
  readonly name: string;
  readonly url: string;
  /** HMAC-SHA256 key of the signature header; null: deliveries are not signed */
  readonly secret: string | null;
  readonly events: ReadonlySet<WebhookEvent>;
  /** the run must carry one of these labels (empty: any run) */
  readonly labels: readonly string[];
  /** the run's path must match one of these (`*`: any characters; empty: any path) */
  readonly paths: readonly string[];
  /** the run's name must match one of these (`*`: any characters; empty: any name) */
  readonly names: readonly string[];
  /** `json`: logbook's event document; `slack`: `{"text": …}`, which Slack, Mattermost and Rocket.Chat take */
  readonly format: 'json' | 'slack';
  /** the longest wait between two attempts of one delivery */
  readonly maxBackoffSeconds: number;
  /** a delivery not accepted this long after its event is dropped (and logged as given up) */
  readonly giveUpAfterSeconds: number;
  /** one attempt's bound */
  readonly timeoutSeconds: number;
}

export interface WebhookSettings {
  /** the base of the links in events (the web UI's address as people reach it); null: the listening address */
  readonly publicUrl: string | null;
  readonly endpoints: readonly WebhookEndpoint[];
}

const NAME = /^[A-Za-z0-9_.-]{1,64}$/;
const FIELDS = new Set(['name', 'url', 'secret', 'secret_file', 'events', 'labels', 'paths', 'names', 'format',
  'max_backoff_seconds', 'give_up_after_hours', 'timeout_seconds']);

/** Read and check a webhooks file. Throws an Error that says what is wrong and where. */
export function loadWebhookSettings(path: string): WebhookSettings {
  let text: string;
  try { text = readFileSync(path, 'utf8'); } catch (err) { throw new Error(`cannot read it: ${(err as Error).message}`); }
  let doc: unknown;
  try { doc = JSON.parse(text); } catch (err) { throw new Error(`it is not JSON: ${(err as Error).message}`); }
  return parseWebhookSettings(doc, path);
}

export function parseWebhookSettings(doc: unknown, path = ''): WebhookSettings {
  if (!isObject(doc)) throw new Error('it must be a JSON object with an "endpoints" list');
  for (const key of Object.keys(doc)) if (key !== 'endpoints' && key !== 'public_url') throw new Error(`unknown field "${key}" (endpoints, public_url)`);
  let publicUrl: string | null = null;
  if (doc.public_url !== undefined) {
    if (typeof doc.public_url !== 'string' || !isHttpUrl(doc.public_url)) throw new Error('public_url must be an http(s) URL');
    publicUrl = doc.public_url.replace(/\/+$/, '');
  }
  if (!Array.isArray(doc.endpoints)) throw new Error('"endpoints" must be a list');
  const endpoints: WebhookEndpoint[] = [];
  const seen = new Set<string>();
  doc.endpoints.forEach((raw: unknown, i: number) => {
    const where = `endpoint ${i + 1}`;
    const fail = (why: string): never => { throw new Error(`${where}: ${why}`); };
    if (!isObject(raw)) return fail('must be an object');
    for (const key of Object.keys(raw)) if (!FIELDS.has(key)) fail(`unknown field "${key}"`);
    const name = raw.name;
    if (typeof name !== 'string' || !NAME.test(name)) return fail('"name" must be 1-64 letters, digits, _ . or -');
    if (seen.has(name)) fail(`the name "${name}" is used twice`);
    seen.add(name);
    const named = (why: string): never => { throw new Error(`endpoint "${name}": ${why}`); };
    if (typeof raw.url !== 'string' || !isHttpUrl(raw.url)) named('"url" must be an http(s) URL');
    let secret: string | null = null;
    if (raw.secret !== undefined && raw.secret_file !== undefined) named('give "secret" or "secret_file", not both');
    if (raw.secret !== undefined) {
      if (typeof raw.secret !== 'string' || raw.secret.length < 16) named('"secret" must be a string of at least 16 characters');
      secret = raw.secret as string;
    } else if (raw.secret_file !== undefined) {
      if (typeof raw.secret_file !== 'string') named('"secret_file" must be a path');
      try { secret = readFileSync(resolveFrom(path, raw.secret_file as string), 'utf8').trim(); } catch (err) { named(`cannot read "secret_file": ${(err as Error).message}`); }
      if (secret!.length < 16) named('the secret in "secret_file" must be at least 16 characters');
    }
    const strings = (field: string): string[] => {
      const v = raw[field];
      if (v === undefined) return [];
      if (!Array.isArray(v) || !v.every((s) => typeof s === 'string' && s !== '')) return named(`"${field}" must be a list of non-empty strings`);
      return v as string[];
    };
    const eventNames = raw.events === undefined ? [...WEBHOOK_EVENTS] : strings('events');
    for (const e of eventNames) if (!(WEBHOOK_EVENTS as readonly string[]).includes(e)) named(`unknown event "${e}" (${WEBHOOK_EVENTS.join(', ')})`);
    if (!eventNames.length) named('"events" is empty: the endpoint would never be told anything');
    const format = raw.format ?? 'json';
    if (format !== 'json' && format !== 'slack') named('"format" must be "json" or "slack"');
    const number = (field: string, def: number, min: number, max: number): number => {
      const v = raw[field];
      if (v === undefined) return def;
      if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max) return named(`"${field}" must be a number from ${min} to ${max}`);
      return v;
    };
    endpoints.push({
      name, url: raw.url as string, secret,
      events: new Set(eventNames as WebhookEvent[]),
      labels: strings('labels'), paths: strings('paths'), names: strings('names'),
      format: format as 'json' | 'slack',
      maxBackoffSeconds: number('max_backoff_seconds', 300, 1, 86_400),
      giveUpAfterSeconds: number('give_up_after_hours', 72, 0.001, 24 * 365) * 3600,
      timeoutSeconds: number('timeout_seconds', 10, 1, 300),
    });
  });
  return { publicUrl, endpoints };
}

/** A pattern list as one test: exact, or `*` for any characters; an empty list passes everything. */
export function globTest(patterns: readonly string[]): (value: string) => boolean {
  const re = globRegExp(patterns);
  return re === null ? () => true : (value) => re.test(value);
}

function isObject(v: unknown): v is Record<string, any> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isHttpUrl(v: string): boolean {
  try { const u = new URL(v); return u.protocol === 'http:' || u.protocol === 'https:'; } catch { return false; }
}

/** A relative secret_file is relative to the webhooks file's folder. */
function resolveFrom(file: string, target: string): string {
  if (target.startsWith('/') || file === '') return target;
  const slash = file.lastIndexOf('/');
  return slash < 0 ? target : file.slice(0, slash + 1) + target;
}
