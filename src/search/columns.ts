// The search index's FTS5 columns besides `body`, in table order: what field
// terms (host:, task:…) search. Its own module, so the front (query.ts) does not
// load better-sqlite3, which only the search worker runs.
export const COLUMNS = ['host', 'task', 'play', 'playbook', 'path', 'status', 'label', 'action'] as const;
