// A shard's rows of one type kept in the order of one sort key: an
// order-statistic B+tree of (value, id) entries, each with its row's status
// class (src/shard/list_orders.ts says what they are for each type). Leaves
// hold no row: a page looks its rows up by id, and the tree holds nothing the
// garbage collector has to trace or a write has to tell it about (with rows
// in it, batch_cpu's shard CPU per result rose by a third with every order kept).
//
// A list in any order used to key every row of the shard and keep the best
// offset + limit in a heap (src/shard/top_k.ts): on 1 M results,
// `results?order=-started&limit=100` took ~290 ms, 1.3 s at offset 100 k,
// whatever the page. Here a page is found by position: every node knows how
// many entries of each status class it holds, so the n-th entry (of the
// classes a `status` filter allows) is one descent, and so is the number of
// entries before a cursor's boundary. A page of 100 costs ~100 descents of a
// tree 3 to 4 levels deep, wherever it is.
//
// Ties are broken by ascending id in both directions (src/api/order.ts), so a
// descending order is not the tree read backwards: it takes the groups of
// equal values from the highest down, each group in ascending id (see at()).
//
// Writes: a new entry whose key is above every other (a new row's `created`,
// mostly its `started`) lands in the rightmost leaf, which then splits
// unevenly so leaves stay full; others take a binary search per level and a
// splice in a leaf of at most LEAF_MAX entries. A leaf left empty goes; nodes
// are not merged (a tree that shrank stays correct, only sparser).
// Tested against a full sort in test/shard/list_orders.test.ts.

export type SortValue = number | string | boolean | null;

/** null before any value (as SQLite sorts NULL ascending), then by value; the same as compareRows. */
export function compareValues(x: SortValue, y: SortValue): number {
  if (x === y) return 0;
  if (x === null) return -1;
  if (y === null) return 1;
  return x < y ? -1 : 1;
}

function compareKeys(av: SortValue, aid: number, bv: SortValue, bid: number): number {
  const c = compareValues(av, bv);
  return c !== 0 ? c : aid - bid;
}

const LEAF_MAX = 128;
const INNER_MAX = 64;

class Leaf<R> {
  readonly leaf = true;
  vals: SortValue[] = [];
  ids: number[] = [];
  cls: number[] = [];
  size = 0;
  byClass: Int32Array;
  constructor(classes: number) { this.byClass = new Int32Array(classes); }
}

class Inner<R> {
  readonly leaf = false;
  /** sepV[i], sepId[i]: the key the entries of kids[i + 1] start at (every entry of kids[i] is below it) */
  sepV: SortValue[] = [];
  sepId: number[] = [];
  kids: Array<Node<R>> = [];
  size = 0;
  byClass: Int32Array;
  constructor(classes: number) { this.byClass = new Int32Array(classes); }
}

type Node<R> = Leaf<R> | Inner<R>;

/** The status classes a page may show (a `status` filter), or null: every entry. */
export type ClassMask = readonly number[] | null;

/** One entry of the order. */
export interface Entry { value: SortValue; id: number }

export class OrderedIndex<R> {
  private root: Node<R>;
  /** the inner nodes a write descended through, and the child taken in each (reused: no garbage per write) */
  private readonly path: Array<Inner<R>> = [];
  private readonly at: number[] = [];

  /**
   * `classes`: how many status classes entries fall in (1: the type has no
   * status filter). `numeric`: every value is a number or null, kept as a
   * number (null as -Infinity, below every number as null sorts), so leaves
   * hold them unboxed instead of one heap object per timestamp.
   */
  constructor(private readonly classes: number, private readonly numeric = false) {
    this.root = new Leaf<R>(classes);
  }

  /** A value as stored. */
  private stored(value: SortValue): SortValue {
    return this.numeric && value === null ? -Infinity : value;
  }

  get size(): number { return this.root.size; }

  /** Entries of the classes in `mask` (null: all). */
  count(mask: ClassMask): number { return countOf(this.root, mask); }

  /**
   * Fill an empty index from entries already sorted by (value, id): leaves are
   * filled to 3/4, so the inserts that follow split few of them.
   */
  load(vals: SortValue[], ids: number[], cls: number[]): void {
    const n = vals.length;
    if (this.numeric) for (let i = 0; i < n; i++) if (vals[i] === null) vals[i] = -Infinity;
    const per = (LEAF_MAX * 3) >> 2;
    let level: Array<Node<R>> = [];
    for (let from = 0; from < n || level.length === 0; from += per) {
      const leaf = new Leaf<R>(this.classes);
      const to = Math.min(n, from + per);
      leaf.vals = vals.slice(from, to); leaf.ids = ids.slice(from, to);
      leaf.cls = cls.slice(from, to);
      leaf.size = to - from;
      for (let i = from; i < to; i++) leaf.byClass[cls[i]!]!++;
      level.push(leaf);
      if (n === 0) break;
    }
    const fan = (INNER_MAX * 3) >> 2;
    while (level.length > 1) {
      const up: Array<Node<R>> = [];
      for (let from = 0; from < level.length; from += fan) {
        const node = new Inner<R>(this.classes);
        node.kids = level.slice(from, from + fan);
        for (let k = 1; k < node.kids.length; k++) {
          const [v, id] = firstKey(node.kids[k]!);
          node.sepV.push(v); node.sepId.push(id);
        }
        sumKids(node);
        up.push(node);
      }
      level = up;
    }
    this.root = level[0]!;
  }

  insert(value: SortValue, id: number, cls: number): void {
    value = this.stored(value);
    const { path, at } = this;
    let depth = 0;
    let node = this.root;
    while (!node.leaf) {
      const j = this.numeric ? upperBoundNumber(node, value as number, id) : upperBound(node, value, id);
      node.size++; node.byClass[cls]!++;
      path[depth] = node; at[depth++] = j;
      node = node.kids[j]!;
    }
    const leaf = node;
    const pos = this.numeric ? leafLowerBoundNumber(leaf, value as number, id) : leafLowerBound(leaf, value, id);
    const n = leaf.vals.length;
    if (pos === n) { leaf.vals.push(value); leaf.ids.push(id); leaf.cls.push(cls); }
    else { leaf.vals.splice(pos, 0, value); leaf.ids.splice(pos, 0, id); leaf.cls.splice(pos, 0, cls); }
    leaf.size++; leaf.byClass[cls]!++;
    if (leaf.vals.length <= LEAF_MAX) return;
    // split: an append keeps the left leaf full (keys that only grow fill leaves to the brim)
    let right: Node<R> = splitLeaf(leaf, pos === n ? LEAF_MAX : (LEAF_MAX + 1) >> 1, this.classes);
    let [sv, sid] = firstKey(right);
    for (let level = depth - 1; level >= 0; level--) {
      const parent = path[level]!;
      const j = at[level]!;
      parent.kids.splice(j + 1, 0, right);
      parent.sepV.splice(j, 0, sv); parent.sepId.splice(j, 0, sid);
      if (parent.kids.length <= INNER_MAX) return;
      const cut = j + 1 === parent.kids.length - 1 ? INNER_MAX : (INNER_MAX + 1) >> 1;
      const split = splitInner(parent, cut, this.classes);
      right = split.right; sv = split.sepV; sid = split.sepId;
    }
    // the root split: a new root above both halves
    const root = new Inner<R>(this.classes);
    root.kids = [this.root, right];
    root.sepV = [sv]; root.sepId = [sid];
    sumKids(root);
    this.root = root;
  }

  /** Take out the entry (value, id) of class `cls`; false if there is none. */
  remove(value: SortValue, id: number, cls: number): boolean {
    value = this.stored(value);
    const { path, at } = this;
    let depth = 0;
    let node = this.root;
    while (!node.leaf) {
      const j = this.numeric ? upperBoundNumber(node, value as number, id) : upperBound(node, value, id);
      path[depth] = node; at[depth++] = j;
      node = node.kids[j]!;
    }
    const leaf = node;
    const pos = this.numeric ? leafLowerBoundNumber(leaf, value as number, id) : leafLowerBound(leaf, value, id);
    if (pos >= leaf.vals.length || leaf.ids[pos] !== id || compareValues(leaf.vals[pos]!, value) !== 0) return false;
    const c = leaf.cls[pos]!;
    if (c !== cls) throw new Error(`ordered index: entry ${id} is of class ${c}, not ${cls}`);
    leaf.vals.splice(pos, 1); leaf.ids.splice(pos, 1); leaf.cls.splice(pos, 1);
    leaf.size--; leaf.byClass[c]!--;
    for (let level = 0; level < depth; level++) { const p = path[level]!; p.size--; p.byClass[c]!--; }
    // an empty node leaves its parent (the root stays, even empty)
    let empty: Node<R> = leaf;
    for (let level = depth - 1; level >= 0 && empty.size === 0; level--) {
      const parent = path[level]!;
      const j = at[level]!;
      parent.kids.splice(j, 1);
      const s = j > 0 ? j - 1 : 0;
      parent.sepV.splice(s, 1); parent.sepId.splice(s, 1);
      empty = parent;
    }
    while (!this.root.leaf && this.root.kids.length === 1) this.root = this.root.kids[0]!;
    if (!this.root.leaf && this.root.kids.length === 0) this.root = new Leaf<R>(this.classes);
    return true;
  }

  /**
   * How many entries of `mask` come before the key (value, id) ascending. An
   * id of -Infinity / +Infinity counts those below / up to the value itself.
   */
  before(value: SortValue, id: number, mask: ClassMask): number {
    value = this.stored(value);
    let n = 0;
    let node = this.root;
    while (!node.leaf) {
      const j = this.numeric ? upperBoundNumber(node, value as number, id) : upperBound(node, value, id);
      for (let k = 0; k < j; k++) n += countOf(node.kids[k]!, mask);
      node = node.kids[j]!;
    }
    const pos = this.numeric ? leafLowerBoundNumber(node, value as number, id) : leafLowerBound(node, value, id);
    if (mask === null) return n + pos;
    for (let i = 0; i < pos; i++) if (mask.includes(node.cls[i]!)) n++;
    return n;
  }

  /** The entry at ascending position `rank` among those of `mask` (0 ≤ rank < count(mask)). */
  nth(rank: number, mask: ClassMask): Entry {
    let node = this.root;
    while (!node.leaf) {
      let k = 0;
      for (;; k++) {
        const c = countOf(node.kids[k]!, mask);
        if (rank < c) break;
        rank -= c;
      }
      node = node.kids[k]!;
    }
    let i = 0;
    if (mask === null) i = rank;
    else for (;; i++) if (mask.includes(node.cls[i]!) && rank-- === 0) break;
    return { value: this.shown(node.vals[i]!), id: node.ids[i]! };
  }

  /** A stored value as the list shows it. */
  private shown(value: SortValue): SortValue {
    return this.numeric && value === -Infinity ? null : value;
  }

  /** Every entry ascending (tests check the structure with it). */
  *entries(): IterableIterator<Entry & { cls: number }> {
    const shown = (v: SortValue): SortValue => this.shown(v);
    const walk = function* (node: Node<R>): IterableIterator<Entry & { cls: number }> {
      if (node.leaf) {
        for (let i = 0; i < node.vals.length; i++) yield { value: shown(node.vals[i]!), id: node.ids[i]!, cls: node.cls[i]! };
        return;
      }
      for (const kid of node.kids) yield* walk(kid);
    };
    yield* walk(this.root);
  }
}

/**
 * A window of one order over an index: positions counted among the entries of
 * `mask`, in (value, id) ascending or in value descending with ties by
 * ascending id. A descending position maps to an ascending one through the
 * group of equal values it falls in: a group at ascending positions [a, b)
 * holds the descending positions [n - b, n - a), each group in id order.
 */
export class OrderWindow<R> {
  readonly n: number;
  /** the group of the last position read (descending order): ascending [a, b) */
  private a = 0;
  private b = 0;
  constructor(private readonly index: OrderedIndex<R>, private readonly desc: boolean, private readonly mask: ClassMask) {
    this.n = index.count(mask);
  }

  /** The entry at position `pos` of the order (0 ≤ pos < n). */
  at(pos: number): Entry {
    const { index, mask, n } = this;
    if (!this.desc) return index.nth(pos, mask);
    const mirrored = n - 1 - pos;
    if (mirrored < this.a || mirrored >= this.b) {
      const e = index.nth(mirrored, mask);
      this.a = index.before(e.value, -Infinity, mask);
      this.b = index.before(e.value, Infinity, mask);
    }
    return index.nth(this.a + pos - (n - this.b), mask);
  }

  /**
   * How many entries come before the key (value, id) in this order, or with
   * `inclusive` before or at it (the key need not be an entry).
   */
  positionOf(value: SortValue, id: number, inclusive: boolean): number {
    const { index, mask, n } = this;
    const key = inclusive ? id + 0.5 : id;
    if (!this.desc) return index.before(value, key, mask);
    // the values above it, then those equal to it with a lower id
    return n - index.before(value, Infinity, mask) + index.before(value, key, mask) - index.before(value, -Infinity, mask);
  }
}

function countOf<R>(node: Node<R>, mask: ClassMask): number {
  if (mask === null) return node.size;
  let n = 0;
  for (const c of mask) n += node.byClass[c]!;
  return n;
}

/** The child of an inner node the key belongs to: how many separators are at or below it. */
function upperBound<R>(node: Inner<R>, value: SortValue, id: number): number {
  let lo = 0, hi = node.sepV.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareKeys(node.sepV[mid]!, node.sepId[mid]!, value, id) <= 0) lo = mid + 1; else hi = mid;
  }
  return lo;
}

/** The position of the first entry of a leaf at or above the key. */
function leafLowerBound<R>(leaf: Leaf<R>, value: SortValue, id: number): number {
  const n = leaf.vals.length;
  // appends first: a key above the last entry goes after it
  if (n === 0 || compareKeys(leaf.vals[n - 1]!, leaf.ids[n - 1]!, value, id) < 0) return n;
  let lo = 0, hi = n - 1;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareKeys(leaf.vals[mid]!, leaf.ids[mid]!, value, id) < 0) lo = mid + 1; else hi = mid;
  }
  return lo;
}

/** upperBound of a numeric index: numbers compared as numbers (one type at every comparison site). */
function upperBoundNumber<R>(node: Inner<R>, value: number, id: number): number {
  const sepV = node.sepV as number[], sepId = node.sepId;
  let lo = 0, hi = sepV.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const v = sepV[mid]!;
    if (v < value || (v === value && sepId[mid]! <= id)) lo = mid + 1; else hi = mid;
  }
  return lo;
}

/** leafLowerBound of a numeric index. */
function leafLowerBoundNumber<R>(leaf: Leaf<R>, value: number, id: number): number {
  const vals = leaf.vals as number[], ids = leaf.ids;
  const n = vals.length;
  const below = (i: number): boolean => vals[i]! < value || (vals[i] === value && ids[i]! < id);
  if (n === 0 || below(n - 1)) return n;
  let lo = 0, hi = n - 1;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (below(mid)) lo = mid + 1; else hi = mid;
  }
  return lo;
}

function firstKey<R>(node: Node<R>): [SortValue, number] {
  while (!node.leaf) node = node.kids[0]!;
  return [node.vals[0]!, node.ids[0]!];
}

function splitLeaf<R>(leaf: Leaf<R>, cut: number, classes: number): Leaf<R> {
  const right = new Leaf<R>(classes);
  right.vals = leaf.vals.splice(cut); right.ids = leaf.ids.splice(cut); right.cls = leaf.cls.splice(cut);
  right.size = right.vals.length;
  for (const c of right.cls) { right.byClass[c]!++; leaf.byClass[c]!--; }
  leaf.size -= right.size;
  return right;
}

function splitInner<R>(node: Inner<R>, cut: number, classes: number): { right: Inner<R>; sepV: SortValue; sepId: number } {
  const right = new Inner<R>(classes);
  right.kids = node.kids.splice(cut);
  // the separator between the halves moves up
  const sepV = node.sepV[cut - 1]!, sepId = node.sepId[cut - 1]!;
  right.sepV = node.sepV.splice(cut); right.sepId = node.sepId.splice(cut);
  node.sepV.length = cut - 1; node.sepId.length = cut - 1;
  sumKids(right);
  node.size -= right.size;
  for (let c = 0; c < classes; c++) node.byClass[c]! -= right.byClass[c]!;
  return { right, sepV, sepId };
}

function sumKids<R>(node: Inner<R>): void {
  node.size = 0;
  node.byClass.fill(0);
  for (const kid of node.kids) {
    node.size += kid.size;
    for (let c = 0; c < kid.byClass.length; c++) node.byClass[c]! += kid.byClass[c]!;
  }
}
