// JSON representations of every resource (docs/api.md#representations), built by string concatenation
// in the exact key order the contract fixes. Stored JSON values (content, facts,
// arguments, tags, value) are spliced in as the text the client sent.
import { formatTimestamp, formatDuration } from '../api/time.js';
import { VERSION } from '../version.js';
import type { Aggregate, ShardState } from './state.js';
import { BLOB_DEFAULT, blobKey, type BlobKey, type BlobReader } from './blobs.js';
import {
  shownStatus, type PlaybookRow, type PlayRow, type TaskRow, type HostRow,
  type ResultRow, type FileRow, type RecordRow,
} from './rows.js';

const str = (s: string | null): string => (s === null ? 'null' : JSON.stringify(s));
const ts = (us: number | null): string => (us === null ? 'null' : '"' + formatTimestamp(us) + '"');

/** `"started":…,"ended":…,"duration":…` shared by every timed resource. */
function timing(row: { started: number; ended: number | null }): string {
  return '"started":' + ts(row.started) + ',"ended":' + ts(row.ended) + ',"duration":'
    + (row.ended === null ? 'null' : '"' + formatDuration(row.ended - row.started) + '"');
}
const stamps = (row: { created: number; updated: number }): string =>
  '"created":' + ts(row.created) + ',"updated":' + ts(row.updated);

export type Form = 'list' | 'detail' | 'write';

/**
 * A result's list row as its fields rather than its text. The live stream's
 * change log keeps this for every result a commit writes (most of a batch's
 * changes), so the shard neither builds nor encodes the text: the front renders
 * it (resultListJson) only when a subscriber is sent it, live or on replay. The
 * compat fields are null without compat mode, so a logged row renders as it was
 * written whatever the server's mode is later.
 */
export type ResultListFields = [
  id: number, status: string, playbook: number, play: number, task: number, host: number,
  started: number, ended: number | null, changed: boolean, ignoreErrors: boolean,
  delegatedTo: readonly number[] | null, created: number | null, updated: number | null,
];

/** ARA's playbook `server_version`: the server that answers (logbook's version). */
const SERVER_VERSION = JSON.stringify(VERSION);

export function resultListFields(r: ResultRow, compat: boolean): ResultListFields {
  return [r.id, shownStatus(r), r.playbook, r.play, r.task, r.host, r.started, r.ended, r.changed, r.ignoreErrors,
    compat ? r.delegatedTo : null, compat ? r.created : null, compat ? r.updated : null];
}

/** A result's list row (docs/api.md#representations, its key order) from its fields; GET /results renders its rows with it too. */
export function resultListJson(f: ResultListFields): string {
  const delegatedTo = f[10];
  const created = f[11];
  return '{"id":' + f[0] + ',"status":' + JSON.stringify(f[1]) + ',"playbook":' + f[2] + ',"play":' + f[3] + ',"task":' + f[4]
    + ',"host":' + f[5] + ',' + timing({ started: f[6], ended: f[7] }) + ',"changed":' + f[8] + ',"ignore_errors":' + f[9]
    + (delegatedTo === null ? '' : ',"delegated_to":[' + delegatedTo.join(',') + ']')
    + (created === null ? '' : ',' + stamps({ created, updated: f[12] ?? created })) + '}';
}

export class Serializer {
  constructor(private readonly state: ShardState, private readonly blobs: BlobReader, readonly compat: boolean) {}

  private blob(key: BlobKey, fallback: string): string {
    return this.blobs.getBlob(key) ?? fallback;
  }

  /** Extra keys ARA 1.5 clients read (docs/api.md#the-ara-dialect); empty with compat mode off. */
  private compatPlaybook(pb: PlaybookRow): string {
    return this.compat
      ? ',"ansible_version":' + str(pb.runnerVersion) + ',"controller":' + str(pb.controller) + ',"user":' + str(pb.user)
        + ',"uuid":' + str(pb.uuid) + ',"client_version":' + str(pb.clientVersion) + ',"server_version":' + SERVER_VERSION
        + ',"python_version":' + str(pb.pythonVersion)
      : '';
  }
  private compatStamps(row: { created: number; updated: number }): string {
    return this.compat ? ',' + stamps(row) : '';
  }

  private labels(pb: PlaybookRow): string {
    let out = '[';
    for (const id of pb.labels) {
      const name = this.state.labels.get(id);
      if (name === undefined) continue; // deleted on the front; the id is never reused
      out += (out.length > 1 ? ',' : '') + '{"id":' + id + ',"name":' + JSON.stringify(name) + '}';
    }
    return out + ']';
  }

  private playbookItems(agg: Aggregate): string {
    return '{"plays":' + agg.plays.size + ',"tasks":' + agg.tasks.size + ',"results":' + agg.results.size
      + ',"hosts":' + agg.hosts.size + ',"files":' + agg.files.size + ',"records":' + agg.records.size + '}';
  }

  /** The fields after `labels` that every playbook form shares. */
  private playbookTail(pb: PlaybookRow): string {
    return timing(pb) + ',"name":' + str(pb.name) + ',"runner_version":' + str(pb.runnerVersion)
      + ',"status":' + str(pb.status) + ',"path":' + str(pb.path) + this.compatPlaybook(pb) + '}';
  }

  playbookSummary(agg: Aggregate): string {
    const pb = agg.playbook;
    if (this.compat) {
      // ARA's nested playbook (SimplePlaybookSerializer) carries `arguments`, which can be
      // megabytes: rendered per read, not cached beside every playbook an ARA client looked at
      return '{"id":' + pb.id + ',"items":' + this.playbookItems(agg) + ',"arguments":' + this.blob(blobKey.arguments(pb.id), BLOB_DEFAULT.arguments)
        + ',"labels":' + this.labels(pb) + ',' + this.playbookTail(pb);
    }
    if (pb.summaryCache !== null) return pb.summaryCache;
    const json = '{"id":' + pb.id + ',"items":' + this.playbookItems(agg) + ',"labels":' + this.labels(pb)
      + ',' + this.playbookTail(pb);
    pb.summaryCache = json;
    return json;
  }

  /**
   * A playbook's row in the live stream: its list row without `arguments`. The row is re-sent on
   * every change of its counters, to every subscriber, and `arguments` can be megabytes; a client
   * reads them once from the playbook (docs/api.md#live-stream).
   */
  playbookStreamRow(agg: Aggregate): string {
    const pb = agg.playbook;
    return '{"id":' + pb.id + ',"items":' + this.playbookItems(agg) + ',"labels":' + this.labels(pb) + ','
      + (this.compat ? stamps(pb) + ',' : '') + this.playbookTail(pb);
  }

  playbook(agg: Aggregate, form: Form): string {
    const pb = agg.playbook;
    const head = '{"id":' + pb.id + ',"items":' + this.playbookItems(agg) + ',"arguments":' + this.blob(blobKey.arguments(pb.id), BLOB_DEFAULT.arguments)
      + ',"labels":' + this.labels(pb) + ',';
    // list rows have no created/updated (compat mode adds them); detail and write responses do
    const middle = form === 'list' && !this.compat ? '' : stamps(pb) + ',';
    return head + middle + this.playbookTail(pb);
  }

  private playItems(p: PlayRow): string { return '{"tasks":' + p.tasks + ',"results":' + p.results + '}'; }

  playSummary(p: PlayRow): string {
    return '{"id":' + p.id + ',"items":' + this.playItems(p) + ',' + timing(p) + ',"name":' + str(p.name)
      + ',"status":' + str(p.status) + ',"playbook":' + p.playbook + '}';
  }

  play(agg: Aggregate, p: PlayRow, form: Form): string {
    const tail = ',' + timing(p) + ',"name":' + str(p.name) + ',"uuid":' + str(p.uuid) + ',"status":' + str(p.status);
    const head = '{"id":' + p.id + ',"items":' + this.playItems(p);
    switch (form) {
      case 'list': return head + tail + ',"playbook":' + p.playbook + this.compatStamps(p) + '}';
      case 'detail': return head + ',"playbook":' + this.playbookSummary(agg) + ',' + stamps(p) + tail + '}';
      case 'write': return head + ',' + stamps(p) + tail + ',"playbook":' + p.playbook + '}';
    }
  }

  private taskPath(agg: Aggregate, t: TaskRow): string | null {
    return agg.files.get(t.file)?.path ?? null;
  }

  private taskBody(t: TaskRow): string {
    return timing(t) + ',"name":' + str(t.name) + ',"action":' + str(t.action) + ',"lineno":' + t.lineno
      + ',"handler":' + t.handler + ',"status":' + str(t.status) + (this.compat ? ',"uuid":' + str(t.uuid) + ',"warnings":' + t.warnings + ',"deprecations":' + t.deprecations
        + ',"exceptions":' + t.exceptions : '');
  }
  private taskIds(t: TaskRow): string {
    return ',"play":' + t.play + ',"file":' + t.file + ',"playbook":' + t.playbook;
  }

  taskSummary(agg: Aggregate, t: TaskRow): string {
    // ARA's nested task (SimpleTaskSerializer) has its tags; the seed's summary does not
    return '{"id":' + t.id + ',"items":{"results":' + t.results + '},"path":' + str(this.taskPath(agg, t)) + ','
      + (this.compat ? '"tags":' + t.tags + ',' : '')
      + this.taskBody(t) + this.taskIds(t) + '}';
  }

  task(agg: Aggregate, t: TaskRow, form: Form): string {
    const head = '{"id":' + t.id + ',"items":{"results":' + t.results + '},"path":' + str(this.taskPath(agg, t))
      + ',"tags":' + t.tags + ',';
    switch (form) {
      case 'list': return head + this.taskBody(t) + this.taskIds(t) + this.compatStamps(t) + '}';
      case 'detail': {
        const play = agg.plays.get(t.play);
        const file = agg.files.get(t.file);
        return head + '"playbook":' + this.playbookSummary(agg)
          + ',"play":' + (play ? this.playSummary(play) : 'null')
          + ',"file":' + (file ? this.file(agg, file, 'list') : 'null')
          + ',' + stamps(t) + ',' + this.taskBody(t) + '}';
      }
      case 'write': return head + stamps(t) + ',' + this.taskBody(t) + this.taskIds(t) + '}';
    }
  }

  private hostCounters(h: HostRow): string {
    return ',"changed":' + h.changed + ',"failed":' + h.failed + ',"ok":' + h.ok + ',"skipped":' + h.skipped
      + ',"unreachable":' + h.unreachable;
  }

  hostSummary(h: HostRow): string {
    return '{"id":' + h.id + ',"name":' + str(h.name) + this.hostCounters(h) + ',"playbook":' + h.playbook + '}';
  }

  host(agg: Aggregate, h: HostRow, form: Form): string {
    const tail = ',' + stamps(h) + ',"name":' + str(h.name) + this.hostCounters(h);
    switch (form) {
      case 'list': return '{"id":' + h.id + ',"playbook":' + h.playbook + tail + '}';
      case 'detail': return '{"id":' + h.id + ',"playbook":' + this.playbookSummary(agg) + ',"facts":' + this.blob(blobKey.facts(h.id), BLOB_DEFAULT.facts) + tail + '}';
      case 'write': return '{"id":' + h.id + ',"facts":' + this.blob(blobKey.facts(h.id), BLOB_DEFAULT.facts) + tail + ',"playbook":' + h.playbook + '}';
    }
  }

  private resultFlags(r: ResultRow): string {
    return ',"changed":' + r.changed + ',"ignore_errors":' + r.ignoreErrors;
  }
  private delegated(r: ResultRow): string {
    return this.compat ? ',"delegated_to":[' + r.delegatedTo.join(',') + ']' : '';
  }
  /** A result's detail shows its delegates as it shows its host (ARA: ids in rows and write answers, hosts here). */
  private delegatedHosts(agg: Aggregate, r: ResultRow): string {
    if (!this.compat) return '';
    let out = '';
    for (const id of r.delegatedTo) {
      const h = agg.hosts.get(id);
      if (h) out += (out ? ',' : '') + this.hostSummary(h);
    }
    return ',"delegated_to":[' + out + ']';
  }

  result(agg: Aggregate, r: ResultRow, form: Form): string {
    if (form === 'list') return resultListJson(resultListFields(r, this.compat));
    const head = '{"id":' + r.id + ',"status":' + str(shownStatus(r));
    switch (form) {
      case 'detail': {
        const play = agg.plays.get(r.play);
        const task = agg.tasks.get(r.task);
        const host = agg.hosts.get(r.host);
        return head + ',"playbook":' + this.playbookSummary(agg)
          + ',"play":' + (play ? this.playSummary(play) : 'null')
          + ',"task":' + (task ? this.taskSummary(agg, task) : 'null')
          + ',"host":' + (host ? this.hostSummary(host) : 'null')
          + ',"content":' + this.blob(blobKey.content(r.id), BLOB_DEFAULT.content) + ',' + stamps(r) + ',' + timing(r)
          + this.resultFlags(r) + this.delegatedHosts(agg, r) + '}';
      }
      case 'write':
        return head + ',"content":' + this.blob(blobKey.content(r.id), BLOB_DEFAULT.content) + ',' + stamps(r) + ',' + timing(r) + this.resultFlags(r)
          + ',"host":' + r.host + ',"task":' + r.task + ',"play":' + r.play + ',"playbook":' + r.playbook
          + this.delegated(r) + '}';
    }
  }

  file(agg: Aggregate, f: FileRow, form: Form): string {
    switch (form) {
      case 'list':
        return '{"id":' + f.id + ',"sha1":"' + f.sha1 + '","playbook":' + f.playbook + ',"path":' + str(f.path)
          + this.compatStamps(f) + '}';
      case 'detail':
        return '{"id":' + f.id + ',"sha1":"' + f.sha1 + '","playbook":' + this.playbookSummary(agg)
          + ',"content":' + this.fileText(f) + ',' + stamps(f) + ',"path":' + str(f.path) + '}';
      case 'write':
        return '{"id":' + f.id + ',"sha1":"' + f.sha1 + '","content":' + this.fileText(f) + ',' + stamps(f)
          + ',"path":' + str(f.path) + ',"playbook":' + f.playbook + '}';
    }
  }

  private fileText(f: FileRow): string {
    return JSON.stringify(this.blobs.getBlob(blobKey.file(f.sha1)) ?? '');
  }

  record(agg: Aggregate, r: RecordRow, form: Form): string {
    const tail = ',"key":' + str(r.key) + ',"type":' + str(r.type);
    switch (form) {
      case 'list': return '{"id":' + r.id + ',"playbook":' + r.playbook + tail + this.compatStamps(r) + '}';
      case 'detail': return '{"id":' + r.id + ',"playbook":' + this.playbookSummary(agg) + ',"value":' + this.blob(blobKey.value(r.id), BLOB_DEFAULT.value) + ',' + stamps(r) + tail + '}';
      case 'write': return '{"id":' + r.id + ',"value":' + this.blob(blobKey.value(r.id), BLOB_DEFAULT.value) + ',' + stamps(r) + tail + ',"playbook":' + r.playbook + '}';
    }
  }

  /** Any row in any form, by type. */
  any(type: string, agg: Aggregate, row: any, form: Form): string {
    switch (type) {
      case 'playbook': return this.playbook(agg, form);
      case 'play': return this.play(agg, row, form);
      case 'task': return this.task(agg, row, form);
      case 'host': return this.host(agg, row, form);
      case 'result': return this.result(agg, row, form);
      case 'file': return this.file(agg, row, form);
      case 'record': return this.record(agg, row, form);
      default: throw new Error(`unknown type ${type}`);
    }
  }
}
