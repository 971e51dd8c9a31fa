// Import rules of src/ (docs/architecture.md#source-layout), checked by
// `npm run lint:deps` and by test/repo/layers.test.ts (so `npm test` fails on a break):
// no import cycles, and every folder imports only from the layers below it.
// src/ui is the browser app (its own tsconfig, bundled by esbuild): not checked here.

/** Bottom to top. A module may import from its own layer and from the layers before it. */
const LAYERS = [
  ['base', 'limits, version, test hooks: constants everything reads', ['^src/limits\\.ts$', '^src/version\\.ts$', '^src/test_hooks\\.ts$']],
  ['config-parsers', 'parsers config.ts needs: cluster env, credentials files, password hashes', ['^src/config/']],
  ['config', 'the start-up configuration', ['^src/config\\.ts$']],
  ['runtime', 'logging, event-loop readings, process metrics, V8 flags', ['^src/log\\.ts$', '^src/event_loop\\.ts$', '^src/default_metrics\\.ts$', '^src/v8_flags\\.ts$']],
  ['api', 'the API vocabulary: resources, validation, errors, JSON scanning, list queries', ['^src/api/']],
  ['shard', 'a shard: state, decide/apply, serialization, its messages, the storage roles it writes through, the front\'s worker pool', ['^src/shard/']],
  ['store', 'LMDB persistence: shard journals and snapshots, the front store (labels)', ['^src/store/']],
  ['search', 'the full-text search index: the FTS5 index, its worker\'s messages, the query language', ['^src/search/']],
  ['front-services', 'metrics and retention over the shards', ['^src/metrics\\.ts$', '^src/run_metrics\\.ts$', '^src/retention\\.ts$']],
  ['http', 'the HTTP front: routes, reads, writes, ingest, stream, auth, labels', ['^src/http/']],
  ['webhooks', 'webhooks: run events read off the live stream, their outbox and deliveries', ['^src/webhooks/']],
  ['cluster', 'cluster mode on NATS: partitions, ownership, the label stream', ['^src/cluster/']],
  ['entries', 'what starts the rest: server, main, cli, the shard worker entry, commands, tools', ['^src/server\\.ts$', '^src/main\\.ts$', '^src/cli\\.ts$', '^src/shard_worker\\.ts$', '^src/search_worker\\.ts$', '^src/commands/', '^src/tools/']],
];

const either = (paths) => `(${paths.join('|')})`;

/** One rule per layer: nothing in it imports from a layer above it. */
const layerRules = LAYERS.slice(0, -1).map(([name, what, paths], i) => ({
  name: `layer-${name}`,
  severity: 'error',
  comment: `${name} (${what}) may import only from itself and the layers below it (.dependency-cruiser.cjs LAYERS)`,
  from: { path: either(paths) },
  to: { path: either(LAYERS.slice(i + 1).flatMap(([, , above]) => above)) },
}));

/** Every file of src/ (but ui/) belongs to a layer: a new top-level file or folder must be placed. */
const everyPath = LAYERS.flatMap(([, , paths]) => paths);

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'an import cycle: the modules in it cannot be understood, tested or moved one at a time',
      from: {},
      to: { circular: true },
    },
    {
      name: 'layer-unplaced',
      severity: 'error',
      comment: 'a module of src/ (that imports anything) in no layer of .dependency-cruiser.cjs: add its path to LAYERS',
      from: { path: '^src/', pathNot: either([...everyPath, '^src/ui/']) },
      to: {},
    },
    ...layerRules,
  ],
  options: {
    includeOnly: '^src/',
    exclude: { path: '^src/ui/' },
    doNotFollow: { path: 'node_modules' },
    // type-only imports are imports too: a type from above ties the layers as much as a value
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    moduleSystems: ['es6'],
  },
};
