// How a node connects to NATS: its servers, and the credentials and TLS a real
// NATS deployment asks for (LOGBOOK_CLUSTER_USER/PASSWORD, _TOKEN, _CREDS,
// _TLS_CA, _TLS_CERT/_TLS_KEY). The front and every partition worker open their
// own connection with the same options, so they are plain data (they cross to
// the workers) and files are read where the connection is made.
import { readFileSync } from 'node:fs';
import { connect, credsAuthenticator, type ConnectionOptions, type NatsConnection } from '@nats-io/transport-node';
import type { NatsAuth } from '../config/cluster.js';
import { log } from '../log.js';

/** The options every NATS connection of a node is opened with. */
export function natsConnectionOptions(servers: string[], name: string, auth: NatsAuth): ConnectionOptions {
  const options: ConnectionOptions = {
    servers, name, maxReconnectAttempts: -1, reconnectTimeWait: 250,
    // no stack capture per request (nats-core builds one for every request error otherwise: ~6 % of a node's main thread)
    noAsyncTraces: true,
  };
  if (auth.user !== undefined) { options.user = auth.user; options.pass = auth.password ?? ''; }
  if (auth.token !== undefined) options.token = auth.token;
  if (auth.credsFile !== undefined) options.authenticator = credsAuthenticator(readFileSync(auth.credsFile));
  if (auth.tlsCa !== undefined || auth.tlsCert !== undefined || servers.some((s) => s.startsWith('tls://'))) {
    options.tls = {
      ...(auth.tlsCa !== undefined ? { caFile: auth.tlsCa } : {}),
      ...(auth.tlsCert !== undefined ? { certFile: auth.tlsCert, keyFile: auth.tlsKey! } : {}),
    };
  }
  return options;
}

/** The node cannot use the NATS servers as configured: wrong credentials, or a certificate it does not trust. */
export class NatsAccessError extends Error {
  override name = 'NatsAccessError';
}

/**
 * The node's first connection. Servers not reachable yet (starting up, a
 * network blip) are waited for, with a log line every few attempts; a refusal
 * that waiting cannot fix (authorization, TLS verification) stops start-up
 * with what the server or TLS said, instead of retrying silently forever.
 */
export async function connectNode(options: ConnectionOptions): Promise<NatsConnection> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await connect(options);
    } catch (err) {
      const text = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
      if (isAccessRefusal(err)) {
        throw new NatsAccessError(`cannot use the NATS servers ${(options.servers as string[]).join(', ')}: ${text} (check LOGBOOK_CLUSTER_USER/PASSWORD, _TOKEN, _CREDS and _TLS_CA)`);
      }
      if (attempt === 1 || attempt % 10 === 0) log.warn('NATS not reachable yet; retrying', { servers: options.servers, attempt, err: text });
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

function isAccessRefusal(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (err.name === 'AuthorizationError' || /authori[sz]ation violation|authentication/i.test(err.message)) return true;
  // Node's TLS verification failures (unknown issuer, self-signed, name mismatch, expired)
  const code = (err as { code?: string }).code ?? (err.cause as { code?: string } | undefined)?.code ?? '';
  return /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS/.test(code) || /certificate|altnames/i.test(err.message);
}
