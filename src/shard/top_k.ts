// Top-k selection for list pages: a page at offset o with limit l needs only the
// o + l best rows of the candidates, not all of them sorted. A bounded max-heap
// (worst kept row at the root) holds them: n candidates cost O(n log k) time and
// O(k) memory instead of O(n log n) and O(n). The result is exactly the first k
// rows of a full sort by the same comparator, provided the comparator is a total
// order (list rows end with their id, so ties are impossible).

/** Keeps the k smallest items offered (by `cmp`); a plain loop calls offer(), no iterator. */
export class TopK<T> {
  private readonly heap: T[] = [];
  constructor(private readonly k: number, private readonly cmp: (a: T, b: T) => number) {}

  offer(item: T): void {
    const heap = this.heap;
    if (heap.length < this.k) {
      heap.push(item);
      siftUp(heap, heap.length - 1, this.cmp);
    } else if (this.k > 0 && this.cmp(item, heap[0]!) < 0) {
      heap[0] = item;
      siftDown(heap, 0, this.cmp);
    }
  }

  /** The kept items, ascending (consumes the heap). */
  sorted(): T[] { return this.heap.sort(this.cmp); }
}

/** The k smallest items by `cmp`, sorted ascending. */
export function topK<T>(items: Iterable<T>, k: number, cmp: (a: T, b: T) => number): T[] {
  const top = new TopK(k, cmp);
  for (const item of items) top.offer(item);
  return top.sorted();
}

function siftUp<T>(heap: T[], i: number, cmp: (a: T, b: T) => number): void {
  const item = heap[i]!;
  while (i > 0) {
    const parent = (i - 1) >> 1;
    if (cmp(item, heap[parent]!) <= 0) break;
    heap[i] = heap[parent]!;
    i = parent;
  }
  heap[i] = item;
}

function siftDown<T>(heap: T[], i: number, cmp: (a: T, b: T) => number): void {
  const n = heap.length;
  const item = heap[i]!;
  for (;;) {
    let child = 2 * i + 1;
    if (child >= n) break;
    if (child + 1 < n && cmp(heap[child + 1]!, heap[child]!) > 0) child++;
    if (cmp(heap[child]!, item) <= 0) break;
    heap[i] = heap[child]!;
    i = child;
  }
  heap[i] = item;
}
