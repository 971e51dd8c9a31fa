// V8 settings of the server process, set once the shards have recovered (V8's
// flags are process-wide: the workers' isolates read them too, at each
// collection).
//
// No allocation-site pretenuring. V8 watches how many objects allocated at each
// site survive a young-generation collection, and from a high rate on allocates
// that site's objects in the old generation directly. A shard applying batches
// keeps each batch's objects for the batch's few milliseconds, so whether a
// site crosses the rate depends on when collections happened to fall: in about
// half the runs of the 2-shard 1,000 × 4 batch row one shard tipped, its old
// generation filled with short-lived objects, and it ran 16-19 full collections
// in 8 s instead of 4 (100-120 k results/s instead of 130-145 k). Without
// pretenuring those objects die young, as they are (bench/HISTORY.md, session
// 31: 5 of 5 runs at 133-147 k, every shard 4 full collections). Recovery,
// which builds the state that lives as long as the process, keeps it: set before
// the shards started, recovery of 100 k results took ~6 % longer.
import { setFlagsFromString } from 'node:v8';

export function setV8Flags(): void {
  setFlagsFromString('--no-allocation-site-pretenuring');
}
