// CORS (LOGBOOK_CORS_ORIGINS), as django-cors-headers does it for ARA
// (docs/security.md#cors): a response to an allowed Origin echoes
// it in Access-Control-Allow-Origin; a preflight (OPTIONS with
// Access-Control-Request-Method) from an allowed origin gets 200 with the allowed
// methods and headers and needs no credentials; other origins get no CORS
// headers. While CORS is on, every response varies on Origin.

/** What preflights answer (ARA's lists, plus HEAD and `prefer` for `Prefer: return=minimal`). */
const PREFLIGHT: ReadonlyArray<[string, string]> = [
  ['Access-Control-Allow-Methods', 'DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT'],
  ['Access-Control-Allow-Headers',
    'accept, accept-encoding, authorization, content-type, dnt, origin, prefer, user-agent, x-csrftoken, x-requested-with'],
  ['Access-Control-Max-Age', '86400'],
];

export class Cors {
  private readonly origins: ReadonlySet<string>;
  private readonly any: boolean;
  readonly enabled: boolean;

  /** `origins`: exact origins (`https://ui.example:8443`), or `*` for any. */
  constructor(origins: readonly string[]) {
    this.any = origins.includes('*');
    this.origins = new Set(origins.map((o) => o.replace(/\/+$/, '').toLowerCase()));
    this.enabled = origins.length > 0;
  }

  /**
   * The value of Exchange.cors for a request's Origin header: null when CORS is
   * off, '' when on but this origin is not allowed (or absent), else the origin.
   */
  match(origin: string): string | null {
    if (!this.enabled) return null;
    if (origin === '' || origin.length > 1024) return '';
    return this.any || this.origins.has(origin.toLowerCase()) ? origin : '';
  }

  /** Headers of a preflight answer (ACAO and Vary come from Exchange.cors). */
  preflightHeaders(): Array<[string, string]> {
    return PREFLIGHT.map(([k, v]) => [k, v]);
  }
}
