// A run as JUnit XML (`GET /api/v1/playbooks/<id>/junit.xml`, docs/api.md#junit-xml): what CI
// systems (GitLab, Jenkins, GitHub Actions' test reporters) read to show which test failed.
// Rendered by the shard that owns the playbook, from its aggregate; content is read only for the
// results that failed (their message), so a 10,000-result run costs one pass over its rows.
//
// The shape follows ansible-core's own `junit` callback, which people already feed to CI:
//   <testsuites>  the playbook: totals over every play
//     <testsuite> one per play (in play id order), name = the play's name
//       <testcase> one per result (task × host): classname = the task's file path, name =
//                  "[host] play: task" (as ansible's junit names them), time in seconds
//         <failure> a failed result (not an ignored one), message = its `msg`
//         <error>   an unreachable host
//         <skipped> a skipped result
// Statuses still running or unknown are counted as passed testcases with no child: JUnit has no
// "in progress" (a CI job fetches the report once the run has ended).
import type { Aggregate } from './state.js';
import type { ResultRow, TaskRow } from './rows.js';
import { shownStatus } from './rows.js';
import { formatTimestamp } from '../api/time.js';

/** What a failure element carries of a result's content at most (the message attribute: less). */
const DETAIL_CHARS = 8 * 1024;
const MESSAGE_CHARS = 1024;

/**
 * Text safe inside XML 1.0: control characters other than tab, LF and CR (ANSI colour escapes),
 * lone surrogates and U+FFFE/U+FFFF are not allowed at all, even escaped: each becomes U+FFFD.
 */
// eslint-disable-next-line no-control-regex
const NOT_XML = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', '\n': '&#10;', '\r': '&#13;', '\t': '&#9;' };
/** An attribute value (line breaks kept as character references: an attribute would fold them). */
const attr = (s: string): string => s.replace(NOT_XML, '\ufffd').replace(/[&<>"\n\r\t]/g, (c) => ESCAPES[c]!);
const text = (s: string): string => s.replace(NOT_XML, '\ufffd').replace(/[&<>]/g, (c) => ESCAPES[c]!);
const seconds = (row: { started: number; ended: number | null }): string =>
  row.ended === null ? '0' : (Math.max(0, row.ended - row.started) / 1e6).toFixed(3);
const clip = (s: string, n: number): string => (s.length > n ? s.slice(0, n) + '…' : s);

/** The message of a failed or unreachable result: its `msg` (or stderr, or the content itself). */
function failureText(contentJson: string | undefined): { message: string; detail: string } {
  if (contentJson === undefined) return { message: '', detail: '' };
  let content: unknown;
  try { content = JSON.parse(contentJson); } catch { return { message: '', detail: clip(contentJson, DETAIL_CHARS) }; }
  const c = (content !== null && typeof content === 'object' ? content : {}) as Record<string, unknown>;
  const asText = (v: unknown): string => (typeof v === 'string' ? v : v === undefined || v === null ? '' : JSON.stringify(v));
  const msg = asText(c.msg) || asText(c.stderr) || asText(c.reason);
  const parts = [msg, asText(c.stderr) !== msg ? asText(c.stderr) : '', asText(c.stdout)].filter((p) => p !== '');
  return { message: clip(msg.split('\n')[0] ?? '', MESSAGE_CHARS), detail: clip(parts.join('\n\n'), DETAIL_CHARS) };
}

interface Counts { tests: number; failures: number; errors: number; skipped: number; time: number }
const zero = (): Counts => ({ tests: 0, failures: 0, errors: 0, skipped: 0, time: 0 });
const countsAttrs = (c: Counts): string =>
  ` tests="${c.tests}" failures="${c.failures}" errors="${c.errors}" skipped="${c.skipped}" time="${c.time.toFixed(3)}"`;

/**
 * The JUnit XML of one playbook. `content(resultId)`: a result's content JSON (undefined: none).
 * `maxBytes`: past it, failures keep their message but lose their detail text (a run with
 * thousands of long failures still renders, bounded).
 */
export function junitXml(agg: Aggregate, content: (resultId: number) => string | undefined, maxBytes: number): string {
  const pb = agg.playbook;
  const byPlay = new Map<number, ResultRow[]>();
  for (const r of agg.results.values()) {
    let list = byPlay.get(r.play);
    if (list === undefined) byPlay.set(r.play, list = []);
    list.push(r);
  }
  const total = zero();
  const suites: string[] = [];
  let bytes = 0;
  const playIds = [...agg.plays.keys()].sort((a, b) => a - b);
  for (const playId of playIds) {
    const play = agg.plays.get(playId)!;
    const playName = play.name ?? '';
    const counts = zero();
    const cases: string[] = [];
    for (const r of byPlay.get(playId) ?? []) {
      const task: TaskRow | undefined = agg.tasks.get(r.task);
      const host = agg.hosts.get(r.host)?.name ?? String(r.host);
      const path = (task && agg.files.get(task.file)?.path) ?? '';
      const taskName = task?.name || task?.action || '';
      const time = r.ended === null ? 0 : Math.max(0, r.ended - r.started) / 1e6;
      counts.tests++; counts.time += time;
      let body = '';
      const status = shownStatus(r);
      if (status === 'failed' || status === 'unreachable') {
        const { message, detail } = failureText(content(r.id));
        const kind = status === 'failed' ? 'failure' : 'error';
        if (status === 'failed') counts.failures++; else counts.errors++;
        const keep = bytes + detail.length < maxBytes ? detail : '';
        body = `\n      <${kind} message="${attr(message)}" type="${attr(status === 'failed' ? task?.action ?? '' : 'unreachable')}">${text(keep)}</${kind}>\n    `;
      } else if (status === 'skipped') {
        counts.skipped++;
        body = '\n      <skipped/>\n    ';
      }
      const line = task ? ` line="${task.lineno}"` : '';
      const tc = `    <testcase classname="${attr(path)}" name="${attr(`[${host}] ${playName}: ${taskName}`)}" time="${seconds(r)}" file="${attr(path)}"${line}>${body}</testcase>`;
      bytes += tc.length;
      cases.push(tc);
    }
    total.tests += counts.tests; total.failures += counts.failures; total.errors += counts.errors;
    total.skipped += counts.skipped; total.time += counts.time;
    suites.push(`  <testsuite name="${attr(playName)}" id="${play.id}"${countsAttrs(counts)} timestamp="${formatTimestamp(play.started)}">`
      + (cases.length ? '\n' + cases.join('\n') + '\n  ' : '') + '</testsuite>');
  }
  const name = pb.name ?? pb.path;
  return '<?xml version="1.0" encoding="UTF-8"?>\n'
    + `<testsuites name="${attr(name)}"${countsAttrs(total)} timestamp="${formatTimestamp(pb.started)}">`
    + (suites.length ? '\n' + suites.join('\n') + '\n' : '') + '</testsuites>\n';
}
