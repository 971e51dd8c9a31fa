// Every bound the server keeps, in one place (TigerBeetle's constants.zig, piscina's
// maxQueue, TypeBox's maxErrors): what is bounded, the value, and why that value.
// Options a deployment may tune (body size, page sizes, shard queue) take their
// defaults and ceilings from here; the rest are fixed. Relations between values
// are asserted at the bottom so a bad edit fails at start-up, not under load.
// A test may move a few write bounds (src/test_hooks.ts writeBound).
import { TEST_HOOKS } from './test_hooks.js';

const KiB = 1024;
const MiB = 1024 * KiB;
/** see labelsPerPlaybook and labelsPerBatch below */
const LABELS_PER_PLAYBOOK = TEST_HOOKS.writeBound('labels', 1000);
const LABELS_PER_BATCH = TEST_HOOKS.writeBound('batchLabels', 1000);

export const LIMITS = {
  // ---- HTTP (the front) ------------------------------------------------------

  /** Default LOGBOOK_MAX_BODY_BYTES. A result with large facts or a file with
   * big content fits easily; the ARA callback sends one record per request. */
  maxBodyBytes: 32 * MiB,
  /** Ceiling for LOGBOOK_MAX_BODY_BYTES: bodies are buffered whole before parsing. */
  maxBodyBytesCeiling: 1024 * MiB,
  /** Bytes of request bodies being received at once, all connections together,
   * in max-size bodies (8 × 32 MiB = 256 MiB by default). Past it new body bytes
   * get 503 + Retry-After: hundreds of connections each trickling a large body
   * cannot exhaust memory. Bodies that arrive whole (the usual few KB) are
   * released in the same callback and hardly count. */
  bodiesInFlight: 8,
  /** Request line + headers, CRLFs included: a query string shares this budget.
   * Enforced by uWebSockets.js itself (431 with a small HTML body, connection
   * closed), which reads it from UWS_HTTP_MAX_HEADERS_SIZE when it loads; its own
   * default is 4 KiB. src/http/uws_env.ts sets this value unless the operator set
   * one: 16 KiB holds list filters with a few hundred repeated values
   * (`status=…&status=…`) or long name/path substrings; browsers and proxies cap
   * URLs near 8–16 KiB too (nginx's large_client_header_buffers, HAProxy's bufsize). */
  headerBytes: 16 * KiB,
  /** Accepted range for an operator's UWS_HTTP_MAX_HEADERS_SIZE: below 1 KiB
   * ordinary clients' heads (User-Agent, Authorization, cookies) no longer fit;
   * uWS buffers a head that arrives in pieces up to this size per connection. */
  headerBytesMin: 1 * KiB,
  headerBytesMax: 1 * MiB,
  /** Header fields per request: enforced by uWebSockets.js (431 and close at 99). */
  headerCount: 98,
  /** uWS closes an HTTP connection idle (or whose request or body has not
   * completed) for about this long; it is compiled into uWS. It bounds slow-loris
   * headers, trickled or abandoned bodies and half-open connections. */
  idleTimeoutSeconds: 10,
  /** Deepest JSON nesting accepted in a body. Ansible facts and results nest a
   * few dozen levels; Python clients (ARA's CLI, the callback) hit their
   * recursion limit near 1000, so anything stored must stay well below it. */
  jsonDepth: 512,

  // ---- resources ---------------------------------------------------------------

  /** Names, keys, versions, labels: ARA's CharField(max_length=255). */
  nameLength: 255,
  /** Playbook and file paths: ARA caps at 255, real role paths exceed it. */
  pathLength: 4096,
  /** Client keys of batch ingest: playbook, play and task `uuid` (docs/api.md#batch-ingest). */
  uuidLength: 64,
  /**
   * Label names in one playbook write (`labels` replaces the set, so this also
   * bounds the labels of a playbook); more → 400 in DRF's ListField wording,
   * nothing changed. ARA's users tag a playbook with a handful (environment,
   * team, check mode); a thousand leaves room for generated ones. Every list
   * row and stream message of a playbook carries its labels' names: ~200
   * playbooks of 100 k labels made one list page too large to build.
   * Data written before the bound still loads and reads.
   */
  labelsPerPlaybook: LABELS_PER_PLAYBOOK,
  /**
   * Distinct label names one batch (`POST /api/v1/ingest`) may name, its
   * playbook events and the new stream's header together; more → 413, nothing
   * changed. New ones are created in one step (labelChangesPerCommit), so this
   * is what one batch can hold other label writers back by.
   */
  labelsPerBatch: LABELS_PER_BATCH,
  /**
   * Bytes of a playbook's `arguments` as stored (its minified JSON text); more
   * → 400 naming the bound, nothing changed. Ansible's arguments (its CLI
   * options and extra vars) are a few KB; every list row and stream message of
   * the playbook carries them, so 30 MB arguments made one page of 18
   * playbooks too large to build. Data written before the bound still reads.
   */
  playbookArgumentsBytes: TEST_HOOKS.writeBound('argumentsBytes', 1 * MiB),
  /**
   * Label changes the front hands the shards as one batch, logged by each as
   * one commit (src/http/label_changes.ts): a playbook write's or a batch's new
   * labels all go in one (they may name labelsPerPlaybook / labelsPerBatch),
   * and another writer's label change waits for at most one such batch.
   */
  labelChangesPerCommit: Math.max(1000, LABELS_PER_PLAYBOOK, LABELS_PER_BATCH),

  // ---- batch ingest (docs/api.md#batch-ingest) -------------------------------------------------

  /** Events in one `POST /api/v1/ingest` batch; more → 413. One batch is one
   * journal entry decided in one pass of its shard: 10,000 results of 1.6 KB
   * are ~16 MB, half the default body limit, and ~0.2 s of one shard's time. */
  ingestEvents: 10_000,
  /** Rejected events listed in a batch's answer (the first ones; `applied` counts all). */
  ingestRejectedListed: 100,
  /**
   * Events of a batch a shard applies per event-loop turn. Between slices the
   * shard's thread takes in the commits that became durable meanwhile, so their
   * replies are not held for the whole of a large batch (src/shard/shard.ts ingest).
   */
  ingestSliceEvents: 128,

  /** Default LOGBOOK_PAGE_SIZE (ARA's PAGE_SIZE). */
  pageSize: 100,
  /** Default LOGBOOK_MAX_PAGE_SIZE: larger `limit`s are clamped to it. */
  maxPageSize: 1000,
  /**
   * Bytes of rows one list page carries. Past it the page stops early: a smaller
   * page (at least one row) whose `next` goes on from its last row. A page is one
   * string, and V8 cannot make a string past ~512 MiB (2^29 characters): a page of
   * 100 playbooks whose `arguments` are 30 MB each threw RangeError out of the
   * page's assembly and stopped the process. 64 MiB keeps every page well inside
   * that and inside what a client wants to parse in one piece.
   */
  pageBytes: 64 * MiB,
  /** Ceiling for both page options: a page is built in memory on the front. */
  pageSizeCeiling: 100_000,
  /** Largest list `offset` (larger → 400). Every shard keeps its best
   * offset + limit rows (a bounded heap) and the front merges them, so a page's
   * cost grows with its offset on every shard: 100 000 rows is a few ms and a few
   * MB. Deeper pages are reached by the keyset `cursor` that `next` and
   * `previous` links carry past it (src/api/page_cursor.ts), at the cost of a
   * page of `limit` rows. Default LOGBOOK_MAX_LIST_OFFSET. */
  maxListOffset: 100_000,
  maxListOffsetCeiling: 10_000_000,

  // ---- shards --------------------------------------------------------------------

  /** Default LOGBOOK_SHARD_QUEUE: requests in flight to one shard (sent, not yet
   * answered). Beyond it the front answers 503 + Retry-After instead of letting
   * the shard's mailbox and the front's pending table grow without bound: a
   * memory bound (4096 results of 1.6 KB are ~7 MB of bodies), not the latency bound,
   * which is the queueing delay's (shardQueueDelayMs). Was 1024: at half the
   * sustainable load (~10 k writes/s) a fsync stalled for 150–300 ms piles up
   * more than that, and the cap refused 1–2 k requests the next group commit
   * would have taken whole (bench overload, after the drop: every refusal was
   * the cap's). 4096 rides out ~0.4 s of such a stall at that rate. */
  shardQueue: 4096,
  shardQueueCeiling: 1_000_000,
  /** Default LOGBOOK_SHARD_QUEUE_DELAY (ms; 0 = off): the queueing delay bound
   * of admission (src/http/admission.ts). A request is answered 503 +
   * Retry-After from its head, before its body is read, while its shard's oldest
   * unanswered request has waited longer than this for shardQueueDelayIntervalMs
   * (with at least shardQueueDelayMinimum in flight), and within such an episode
   * while its shard has more in flight than drain within the bound at the rate
   * it answers; or while the front's event loop has lagged more than half of it
   * (≥ 10 ms) for 100 ms with as many requests in flight. On by default from
   * measurements (bench overload, open loop, 1 shard, the 2-core machine; README,
   * Benchmarks). 2026-11-24, 20,000 writes/s offered for 60 s, the same load for
   * each bound: 5 ms admitted 9,442/s at p99 27.5 ms; 10 ms 12,502–12,523/s at
   * p99 46.5–46.8 ms; 25 ms 14,551–14,849/s at p99 103–130 ms. 10 ms keeps
   * admitted writes well under the 100 ms target while admitting 84 % of what
   * 25 ms admits (earlier: 25 ms beat 50 ms, p99 75 against 176 ms; with the
   * length bound alone admitted writes waited p99 1–6 s).
   * A refusal costs 16–19 µs of CPU. 0 restores the length bound alone: for
   * ARA's callback (it does not retry a 503) on a disk so slow that 32 of its
   * requests wait longer than the bound. */
  shardQueueDelayMs: 10,
  shardQueueDelayCeiling: 60_000,
  /** How long (ms) a shard's requests must keep waiting longer than the delay
   * bound before new ones are refused (CoDel's interval; at most four times the
   * bound): a single slow group commit under a light load sheds nothing. */
  shardQueueDelayIntervalMs: 100,
  /** An overload episode of a shard lasts this long (ms) past its last refusal
   * for delay: meanwhile it admits only what drains within the bound at its
   * answer rate, and refuses as soon as its oldest request waits longer than
   * the bound, without a new interval (else under a steady flood its queue
   * swings up to bound + interval). Was 1 s: at half the load after a flood, a
   * GC pause or slow commit then kept a shard refusing 2–20 % of requests. */
  shardQueueDelayRecentMs: 200,
  /** Requests in flight to a shard that are always admitted, whatever the delay:
   * a few slow fsyncs under light load must not shed anything. */
  shardQueueDelayMinimum: 32,
  /** Results per stored part of a playbook's snapshot (src/store/snapshot_format.ts
   * splitResults): a shard encodes one part at a time between other work, ~5 ms
   * each, instead of a large playbook's results in one value (365 k results:
   * ~0.2 s of msgpack in one go, a stall every snapshot round). */
  snapshotPartRows: 16_384,
  /** Window (ms) over which a shard's answer rate is measured for admission:
   * within an overload episode a shard admits at most rate × delay bound
   * requests in flight (Little's law), so its queue drains within the bound. */
  shardRateWindowMs: 100,
  /** A shard is refused requests for their queueing delay only while it is
   * offered more than this many times what it answers: in each of the last two
   * 100 ms windows, arrivals (refused ones included) against its answers in
   * that window (then, within the episode, while arrivals exceed answers at all:
   * src/shard/pool.ts oversubscribed()). A queue only grows without bound when
   * arrivals outrun answers: a closed population (N clients, each waiting for
   * its answer, as the stock ARA callback does) has a queue of at most N
   * however slow the shard is, and refusing it only turns writes into failures
   * (the stock callback does not retry a 503; wrk sends again at once: 128, 256
   * and 512 such writers had 0–57, 55–79 and 93–96 % of their requests
   * refused, and 512 got 2–4 k writes/s through instead of ~13–19 k,
   * bench/closed_loop.sh; now 0 %). After a flood the shard is offered less than it
   * answers at once, so a GC pause at half the load refuses nothing. 1.5 leaves
   * room for a closed population's ramp-up and windows of uneven commits; a 2×
   * flood offers 2–4× what is answered. */
  shardOfferedRateFactor: 1.5,
  /** … and only while what it is offered (refused requests included) exceeds
   * this share of what it can answer (its answer rate with a queue, the
   * decaying peak: src/shard/pool.ts countAnswer). Arrivals against answers
   * alone said "flood" after any stall: a GC pause at half the load leaves two
   * windows without answers, the queue it piles up is refused, and each refusal
   * is an arrival without an answer, so the episode fed itself (bench overload:
   * after the drop to half the load, 1–23 % refused for 5–15 s). Half the load
   * offers half the capacity; a 2× flood offers twice it, still more than this
   * share of a peak inflated by a burst of answers after a stall. */
  shardOfferedCapacityShare: 0.75,
  /** Young generation of a shard worker (MiB). Recovery and ingest allocate
   * millions of short-lived objects; with V8's default (~16 MiB semi-spaces) a
   * third of recovery time was scavenging. 192 MiB (64 MiB semi-spaces) took 1 M
   * results from ~580 k/s to ~690 k/s recovered; it is reserved address space,
   * committed only as it fills. */
  shardYoungGenerationMb: 192,
  /** Live-stream changes a shard keeps in memory for replays (src/shard/changes.ts;
   * older ones are read from its change log). Each holds its row's JSON text; kept
   * for seconds under load they outlived two scavenges and went to the old
   * generation as garbage (20,000 were ~2 s of a flood): the shard's major GCs,
   * whose marking stalled it for 100-200 ms, came every ~15 s. */
  streamChangesInMemory: 2_000,
  /** Retry-After (seconds) on every 503: recovery, overload, storage failure. */
  retryAfterSeconds: 1,

  // ---- authentication (src/http/auth.ts) --------------------------------------------

  /** Longest Authorization header verified; longer ones are wrong credentials.
   * Bounds what is hashed and base64-decoded per request. */
  authHeaderBytes: 1 * KiB,
  /** Verified credentials remembered (by keyed hash of the header), so that a
   * client pays the KDF once, not per request. One entry is ~200 bytes. */
  authCacheEntries: 10_000,
  /** Refused credentials remembered the same way: repeating a wrong password
   * costs a map lookup, not a KDF. Kept apart so refusals cannot evict grants. */
  authRefusedEntries: 10_000,
  /** KDF computations running at once (libuv pool threads; the machine has 2 cores). */
  authKdfConcurrency: 2,
  /** KDF computations waiting; beyond it a new credential gets 503 + Retry-After,
   * so a flood of distinct wrong passwords costs at most this much queued work. */
  authKdfQueue: 64,
  /** Password/token verifications (KDF runs) one client address may have
   * running or waiting at once; past it that client's new credentials get
   * 503 + Retry-After while other clients' go on, so one client's flood cannot
   * fill the queue above and lock everyone else out. Verified credentials are
   * remembered, so a valid client pays this once. */
  authKdfPerClient: 4,
  /** Bytes of request bodies received while their credentials are still being
   * verified (a KDF), all such requests together. Past it such a request gets
   * 503 and its connection is closed: bodies of not-yet-authenticated requests
   * cannot take the shared body budget (bodiesInFlight) from authenticated
   * writers. A known credential is checked from a cache before any body is read
   * and never counts here. */
  unverifiedBodyBytes: 4 * MiB,
  /** Live-stream subscribers (SSE and WebSocket) at once, and per credential
   * (per client address for anonymous ones): past either a new subscription is
   * answered 503 + Retry-After. Each may hold LOGBOOK_STREAM_MAX_BUFFER bytes. */
  streamSubscribers: 512,
  streamSubscribersPerClient: 64,
  /** A users/tokens file larger than this is refused (a line is ~100 bytes). */
  authFileBytes: 4 * MiB,
  /** How often the users/tokens files are stat'ed for changes (SIGHUP is immediate). */
  authFilePollMs: 1000,
  /** scrypt cost written by `npm run hash-password`: N = 2^15, r = 8, p = 1
   * (32 MiB, ~0.1–0.3 s here). Paid once per credential thanks to the cache. */
  scryptLogN: 15,
  scryptR: 8,
  scryptP: 1,
  /** Largest scrypt parameters accepted from a hash (a hostile or mistaken file
   * must not make one verification take a gigabyte or a minute). */
  scryptMaxMemoryBytes: 256 * MiB,
  scryptMaxLogN: 20,
  scryptMaxP: 16,
  scryptSaltBytes: 16,
  scryptKeyBytes: 32,
} as const;

function assert(ok: boolean, what: string): void {
  if (!ok) throw new Error(`limits.ts: ${what}`);
}

assert(LIMITS.pageSize <= LIMITS.maxPageSize && LIMITS.maxPageSize <= LIMITS.pageSizeCeiling, 'pageSize ≤ maxPageSize ≤ pageSizeCeiling');
assert(LIMITS.maxBodyBytes <= LIMITS.maxBodyBytesCeiling, 'maxBodyBytes ≤ maxBodyBytesCeiling');
assert(LIMITS.bodiesInFlight >= 1, 'at least one body can be received');
assert(LIMITS.shardQueue >= 1 && LIMITS.shardQueue <= LIMITS.shardQueueCeiling, '1 ≤ shardQueue ≤ shardQueueCeiling');
assert(LIMITS.shardQueueDelayMinimum <= LIMITS.shardQueue, 'shardQueueDelayMinimum ≤ shardQueue');
assert(LIMITS.shardQueueDelayMs >= 0 && LIMITS.shardQueueDelayMs <= LIMITS.shardQueueDelayCeiling, '0 ≤ shardQueueDelayMs ≤ shardQueueDelayCeiling');
assert(LIMITS.nameLength <= LIMITS.pathLength, 'nameLength ≤ pathLength');
assert(LIMITS.labelChangesPerCommit >= Math.max(LIMITS.labelsPerPlaybook, LIMITS.labelsPerBatch), 'one write\'s new labels are one commit');
assert(LIMITS.headerBytesMin <= LIMITS.headerBytes && LIMITS.headerBytes <= LIMITS.headerBytesMax, 'headerBytesMin ≤ headerBytes ≤ headerBytesMax');
assert(128 * 2 ** LIMITS.scryptLogN * LIMITS.scryptR <= LIMITS.scryptMaxMemoryBytes, 'default scrypt cost within the accepted maximum');
assert(LIMITS.authKdfConcurrency >= 1 && LIMITS.authKdfQueue >= LIMITS.authKdfConcurrency, 'KDF queue holds at least one round');
