// Which pages of an LMDB file its trees reach, read with plain reads (never
// mapped), so that a page past the end of a truncated file is an answer here
// and not a SIGBUS. The start-up check (data_dir.ts) uses it on a file shorter
// than its meta page says: LMDB leaves the last pages of a file unwritten when
// they are free ("the file may be shorter if the freeDB lists the final pages",
// mdb.c), so a short file is healthy exactly when every page a tree reaches is
// in it. The trees are the free-page tree (FREE_DBI: read by the first write,
// which the read-only probe never does), the main tree, every named table in it,
// every dupsort sub-tree, and the overflow pages of large values.
//
// Layout of lmdb-js 3.x's LMDB (mdb.master3, data format 2, 64-bit build), from
// its mdb.c: a page header is 24 bytes (pgno 8, txnid 8, pad 2, flags 2,
// lower/upper 2+2 or an overflow page count 4), followed by 2-byte node offsets;
// lower and the offsets count from the end of the header (PAGEBASE = PAGEHDRSZ);
// a node is lo 2, hi 2, flags 2, ksize 2, then key and data.
import { closeSync, openSync, readSync } from 'node:fs';

const PAGE_HEADER = 24;
const NODE_HEADER = 8;
const P_BRANCH = 0x01;
const P_LEAF = 0x02;
const P_OVERFLOW = 0x04;
const P_LEAF2 = 0x20;
const F_BIGDATA = 0x01;
const F_SUBDATA = 0x02;
/** offset of md_root inside an MDB_db record */
const DB_ROOT = 40;
const P_INVALID = 0xffffffffffffffffn;

/** The roots a meta page names: the free-page tree's and the main tree's. */
export interface MetaRoots { psize: number; lastPage: number; freeRoot: bigint; mainRoot: bigint }

/** Offsets inside MDB_meta (after the page header) of the two roots: mm_dbs[FREE].md_root, mm_dbs[MAIN].md_root. */
export const META_ROOTS = { freeRoot: 24 + DB_ROOT, mainRoot: 24 + 48 + DB_ROOT } as const;

/**
 * The first problem found walking every tree of the file from `roots`: a page the
 * file does not hold, or one that is not what its parent says it is; null when
 * every reachable page is there and well-formed enough to follow.
 */
export function missingPage(path: string, fileBytes: number, roots: MetaRoots): string | null {
  const { psize, lastPage } = roots;
  const pagesInFile = Math.floor(fileBytes / psize);
  const fd = openSync(path, 'r');
  const page = Buffer.alloc(psize);
  const seen = new Set<number>();
  const pending: number[] = [];
  const push = (root: bigint, what: string): string | null => {
    if (root === P_INVALID) return null;
    if (root > BigInt(lastPage)) return `${what}: page ${root} is past the last page ${lastPage}`;
    pending.push(Number(root));
    return null;
  };
  try {
    let problem = push(roots.freeRoot, 'free-page tree') ?? push(roots.mainRoot, 'main tree');
    while (problem === null && pending.length > 0) {
      const pgno = pending.pop()!;
      if (seen.has(pgno)) continue;
      seen.add(pgno);
      if (pgno >= pagesInFile) return `page ${pgno} is past the end of the file (${pagesInFile} whole pages)`;
      readSync(fd, page, 0, psize, pgno * psize);
      if (page.readBigUInt64LE(0) !== BigInt(pgno)) return `page ${pgno} says it is page ${page.readBigUInt64LE(0)}`;
      const flags = page.readUInt16LE(18);
      if (flags & P_LEAF2) continue; // fixed-size keys only: no page references
      if (!(flags & (P_BRANCH | P_LEAF))) return `page ${pgno} is neither a branch nor a leaf (flags ${flags})`;
      const lower = page.readUInt16LE(20);
      const count = lower >> 1;
      if (count < 0 || PAGE_HEADER + count * 2 > psize) return `page ${pgno} has a bad node count`;
      for (let i = 0; i < count && problem === null; i++) {
        const at = PAGE_HEADER + page.readUInt16LE(PAGE_HEADER + i * 2);
        if (at + NODE_HEADER > psize) return `page ${pgno} has a node outside it`;
        const lo = page.readUInt16LE(at);
        const hi = page.readUInt16LE(at + 2);
        const nodeFlags = page.readUInt16LE(at + 4);
        const ksize = page.readUInt16LE(at + 6);
        if (flags & P_BRANCH) {
          problem = push(BigInt(lo) | (BigInt(hi) << 16n) | (BigInt(nodeFlags) << 32n), `branch page ${pgno}`);
          continue;
        }
        const data = at + NODE_HEADER + ksize;
        if (nodeFlags & F_BIGDATA) {
          if (data + 8 > psize) return `page ${pgno} has a node outside it`;
          problem = overflow(fd, page.readBigUInt64LE(data), psize, pagesInFile, lastPage, pgno);
        } else if (nodeFlags & F_SUBDATA) {
          if (data + DB_ROOT + 8 > psize) return `page ${pgno} has a node outside it`;
          problem = push(page.readBigUInt64LE(data + DB_ROOT), `table on page ${pgno}`);
        }
      }
    }
    return problem;
  } finally {
    closeSync(fd);
  }
}

/** The overflow run of a large value: its first page says how many pages it spans. */
function overflow(fd: number, start: bigint, psize: number, pagesInFile: number, lastPage: number, from: number): string | null {
  if (start > BigInt(lastPage)) return `a value on page ${from} continues on page ${start}, past the last page ${lastPage}`;
  const first = Number(start);
  if (first >= pagesInFile) return `a value on page ${from} continues on page ${first}, past the end of the file (${pagesInFile} whole pages)`;
  const header = Buffer.alloc(PAGE_HEADER);
  readSync(fd, header, 0, PAGE_HEADER, first * psize);
  if (!(header.readUInt16LE(18) & P_OVERFLOW)) return `page ${first} should hold a large value and does not`;
  const pages = header.readUInt32LE(20);
  if (first + pages > pagesInFile) return `a value on pages ${first}–${first + pages - 1} runs past the end of the file (${pagesInFile} whole pages)`;
  return null;
}
