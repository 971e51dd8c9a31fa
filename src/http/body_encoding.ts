// A request body as sent with Content-Encoding: identity as is, gzip inflated
// off the main thread and stopped at the body limit (a gzip bomb costs at most
// max_body_bytes of output, never its full expansion); any other encoding is
// refused with 415. Every endpoint that takes a body decodes it here, so that
// a write is never parsed as JSON in an encoding it was not sent in.
import { gunzip } from 'node:zlib';
import { Errors } from '../api/errors.js';
import { log } from '../log.js';
import { reply, type Exchange } from './respond.js';

/** Calls `then` with the decoded body (at once for identity), or answers 400/413/415 itself. */
export function decodedBody(ex: Exchange, encoding: string, body: Buffer, maxBodyBytes: number, then: (bytes: Buffer) => void): void {
  const enc = encoding === '' ? '' : encoding.trim().toLowerCase();
  if (enc === '' || enc === 'identity') return then(body);
  if (enc !== 'gzip' && enc !== 'x-gzip') return reply(ex, 415, Errors.unsupportedEncoding(encoding));
  gunzip(Buffer.from(body), { maxOutputLength: maxBodyBytes }, (err, out) => {
    if (err) {
      if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' || err instanceof RangeError) {
        ex.close = false;
        return reply(ex, 413, Errors.tooLarge(maxBodyBytes));
      }
      return reply(ex, 400, Errors.badGzip());
    }
    try {
      then(out);
    } catch (e) {
      log.error('request failed', { err: String((e as Error)?.stack ?? e) });
      reply(ex, 500, Errors.internal());
    }
  });
}
