// Path and name patterns as operators write them (LOGBOOK_METRICS_SERIES, the
// webhooks file): exact text, where `*` stands for any characters.

/** One RegExp matching any of `patterns` whole (null: no patterns). */
export function globRegExp(patterns: readonly string[]): RegExp | null {
  if (!patterns.length) return null;
  const parts = patterns.map((p) => p.split('*').map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*'));
  return new RegExp(`^(?:${parts.join('|')})$`, 's');
}
