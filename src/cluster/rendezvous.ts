// Rendezvous (highest-random-weight) hashing: each partition goes to the live
// node with the highest hash(node, partition). When a node joins or leaves, only
// the partitions it wins or held move, and every node computes the same answer
// from the same set of live nodes, with no coordination.
import { createHash } from 'node:crypto';

function weight(node: string, partition: number): bigint {
  return createHash('sha1').update(`${node}\u0000${partition}`).digest().readBigUInt64BE(0);
}

/** The node that should own `partition` among `nodes` (null when there are none). */
export function rendezvousOwner(partition: number, nodes: Iterable<string>): string | null {
  let best: string | null = null;
  let bestWeight = -1n;
  for (const node of nodes) {
    const w = weight(node, partition);
    if (w > bestWeight || (w === bestWeight && best !== null && node < best)) { best = node; bestWeight = w; }
  }
  return best;
}

/** All nodes in order of preference for `partition`: the owner first, then its standby. */
export function rendezvousRanking(partition: number, nodes: Iterable<string>): string[] {
  return [...nodes].map((node) => [node, weight(node, partition)] as const)
    .sort((a, b) => (a[1] === b[1] ? (a[0] < b[0] ? -1 : 1) : a[1] > b[1] ? -1 : 1))
    .map(([node]) => node);
}
