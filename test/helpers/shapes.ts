// The key orders of SPEC.md §2 (and the seed), one array per representation.
export const ITEMS = {
  playbook: ['plays', 'tasks', 'results', 'hosts', 'files', 'records'],
  play: ['tasks', 'results'],
  task: ['results'],
} as const;

export const ENVELOPE = ['count', 'next', 'previous', 'results'];
export const LABEL_IN_PLAYBOOK = ['id', 'name'];

export const SUMMARY = {
  playbook: ['id', 'items', 'labels', 'started', 'ended', 'duration', 'name', 'runner_version', 'status', 'path'],
  play: ['id', 'items', 'started', 'ended', 'duration', 'name', 'status', 'playbook'],
  task: ['id', 'items', 'path', 'started', 'ended', 'duration', 'name', 'action', 'lineno', 'handler', 'status', 'play', 'file', 'playbook'],
  host: ['id', 'name', 'changed', 'failed', 'ok', 'skipped', 'unreachable', 'playbook'],
};

const PLAYBOOK_DETAIL = ['id', 'items', 'arguments', 'labels', 'created', 'updated', 'started', 'ended', 'duration', 'name', 'runner_version', 'status', 'path'];

export const ROW: Record<string, string[]> = {
  playbook: ['id', 'items', 'arguments', 'labels', 'started', 'ended', 'duration', 'name', 'runner_version', 'status', 'path'],
  play: ['id', 'items', 'started', 'ended', 'duration', 'name', 'uuid', 'status', 'playbook'],
  task: ['id', 'items', 'path', 'tags', 'started', 'ended', 'duration', 'name', 'action', 'lineno', 'handler', 'status', 'play', 'file', 'playbook'],
  host: ['id', 'playbook', 'created', 'updated', 'name', 'changed', 'failed', 'ok', 'skipped', 'unreachable'],
  result: ['id', 'status', 'playbook', 'play', 'task', 'host', 'started', 'ended', 'duration', 'changed', 'ignore_errors'],
  file: ['id', 'sha1', 'playbook', 'path'],
  record: ['id', 'playbook', 'key', 'type'],
  label: ['id', 'created', 'updated', 'name'],
};

export const DETAIL: Record<string, string[]> = {
  playbook: PLAYBOOK_DETAIL,
  play: ['id', 'items', 'playbook', 'created', 'updated', 'started', 'ended', 'duration', 'name', 'uuid', 'status'],
  task: ['id', 'items', 'path', 'tags', 'playbook', 'play', 'file', 'created', 'updated', 'started', 'ended', 'duration', 'name', 'action', 'lineno', 'handler', 'status'],
  host: ['id', 'playbook', 'facts', 'created', 'updated', 'name', 'changed', 'failed', 'ok', 'skipped', 'unreachable'],
  result: ['id', 'status', 'playbook', 'play', 'task', 'host', 'content', 'created', 'updated', 'started', 'ended', 'duration', 'changed', 'ignore_errors'],
  file: ['id', 'sha1', 'playbook', 'content', 'created', 'updated', 'path'],
  record: ['id', 'playbook', 'value', 'created', 'updated', 'key', 'type'],
  label: ['id', 'created', 'updated', 'name'],
};

export const WRITE: Record<string, string[]> = {
  playbook: PLAYBOOK_DETAIL,
  play: ['id', 'items', 'created', 'updated', 'started', 'ended', 'duration', 'name', 'uuid', 'status', 'playbook'],
  task: ['id', 'items', 'path', 'tags', 'created', 'updated', 'started', 'ended', 'duration', 'name', 'action', 'lineno', 'handler', 'status', 'play', 'file', 'playbook'],
  host: ['id', 'facts', 'created', 'updated', 'name', 'changed', 'failed', 'ok', 'skipped', 'unreachable', 'playbook'],
  result: ['id', 'status', 'content', 'created', 'updated', 'started', 'ended', 'duration', 'changed', 'ignore_errors', 'host', 'task', 'play', 'playbook'],
  file: ['id', 'sha1', 'content', 'created', 'updated', 'path', 'playbook'],
  record: ['id', 'value', 'created', 'updated', 'key', 'type', 'playbook'],
  label: ['id', 'created', 'updated', 'name'],
};

/** URL segment of each resource, in the order of GET /api/v1/. */
export const PLURAL: Record<string, string> = {
  label: 'labels', playbook: 'playbooks', play: 'plays', task: 'tasks',
  host: 'hosts', result: 'results', file: 'files', record: 'records',
};
export const DISPLAY: Record<string, string> = {
  label: 'Label', playbook: 'Playbook', play: 'Play', task: 'Task',
  host: 'Host', result: 'Result', file: 'File', record: 'Record',
};
