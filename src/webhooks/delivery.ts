// What a webhook request carries (docs/webhooks.md#what-a-receiver-gets): the
// event document (or Slack's `{"text": …}`), the headers that name it, and the
// signature a receiver checks it with: HMAC-SHA256, keyed with the endpoint's
// secret, of `<timestamp>.<body>`, so that a captured request cannot be replayed
// later with a fresh timestamp (the receiver refuses old ones).
import { createHmac } from 'node:crypto';
import type { WebhookEndpoint } from '../config/webhooks.js';
import type { RunEvent } from './run_events.js';
import { VERSION } from '../version.js';

export const HEADER_EVENT = 'X-Logbook-Event';
export const HEADER_DELIVERY = 'X-Logbook-Delivery';
export const HEADER_SIGNATURE = 'X-Logbook-Signature';

/** Does the endpoint want this event (its event types, labels, paths and names)? */
export function wants(endpoint: WebhookEndpoint, tests: EndpointTests, event: RunEvent): boolean {
  if (!endpoint.events.has(event.type)) return false;
  if (endpoint.labels.length && !event.facts.labels.some((l) => endpoint.labels.includes(l))) return false;
  return tests.path(event.facts.path) && tests.name(event.facts.name ?? '');
}

export interface EndpointTests { path: (path: string) => boolean; name: (name: string) => boolean }

/** The request body of an event for an endpoint. `base`: where the web UI is reached. */
export function eventBody(endpoint: WebhookEndpoint, event: RunEvent, base: string): string {
  const url = `${base}/ui/playbooks/${event.playbookId}`;
  if (endpoint.format === 'slack') return JSON.stringify({ text: slackText(event, url) });
  const doc: Record<string, unknown> = {
    id: event.id,
    event: event.type,
    time: new Date().toISOString(),
    playbook: { ...event.playbook, url },
    series: { path: event.facts.path, name: event.facts.name },
  };
  if (event.previousStatus !== undefined) doc.previous_status = event.previousStatus;
  if (event.host !== undefined) doc.host = event.host;
  return JSON.stringify(doc);
}

function slackText(event: RunEvent, url: string): string {
  const title = event.facts.name ?? event.facts.path.split('/').pop() ?? event.facts.path;
  const run = `<${url}|${escapeSlack(title)}> (${escapeSlack(event.facts.path)})`;
  const took = typeof event.playbook.duration === 'string' ? ` after ${event.playbook.duration}` : '';
  switch (event.type) {
    case 'run.failed': return `:x: Run failed: ${run}${took}`;
    case 'run.fixed': return `:white_check_mark: Run fixed: ${run} succeeded; the run before it failed`;
    case 'run.started': return `:arrow_forward: Run started: ${run}`;
    case 'run.ended': return `Run ${escapeSlack(event.facts.status)}: ${run}${took}`;
    case 'host.unreachable': return `:warning: Host ${escapeSlack(String(event.host?.name ?? '?'))} unreachable in ${run}`;
  }
}

/** Slack's three control characters (https://api.slack.com/reference/surfaces/formatting#escaping). */
function escapeSlack(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** The signature header's value for a body sent at `unixSeconds`. */
export function signature(secret: string, unixSeconds: number, body: string): string {
  return `t=${unixSeconds},v1=` + createHmac('sha256', secret).update(`${unixSeconds}.${body}`).digest('hex');
}

export interface AttemptResult { ok: boolean; status: number | null; error: string | null; ms: number }

/** One attempt: POST the body; ok on any 2xx. Never throws. */
export async function attempt(endpoint: WebhookEndpoint, id: string, event: string, body: string, signal: AbortSignal): Promise<AttemptResult> {
  const headers: Record<string, string> = {
    'Content-Type': 'application/json',
    'User-Agent': `logbook-webhooks/${VERSION}`,
    [HEADER_EVENT]: event,
    [HEADER_DELIVERY]: id,
  };
  if (endpoint.secret !== null) headers[HEADER_SIGNATURE] = signature(endpoint.secret, Math.floor(Date.now() / 1000), body);
  const t0 = performance.now();
  const timeout = AbortSignal.timeout(endpoint.timeoutSeconds * 1000);
  try {
    // a redirect is not followed: the body and its signature are for the URL configured
    const res = await fetch(endpoint.url, { method: 'POST', headers, body, redirect: 'manual', signal: AbortSignal.any([signal, timeout]) });
    await res.arrayBuffer().catch(() => undefined); // free the connection for the next delivery
    const ms = Math.round(performance.now() - t0);
    return res.status >= 200 && res.status < 300
      ? { ok: true, status: res.status, error: null, ms }
      : { ok: false, status: res.status, error: `HTTP ${res.status}`, ms };
  } catch (err) {
    const ms = Math.round(performance.now() - t0);
    if (timeout.aborted) return { ok: false, status: null, error: `no answer within ${endpoint.timeoutSeconds} s`, ms };
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    return { ok: false, status: null, error: cause?.code ?? cause?.message ?? (err as Error).message, ms };
  }
}
