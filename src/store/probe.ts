// Child process of the start-up check (data_dir.ts): open an LMDB file read-only
// and read every entry of every table. Exit 0 if that works; a page missing from
// a truncated file ends this process (SIGBUS), not logbook.
import { open } from 'lmdb';

const path = process.argv[2];
if (!path) { process.stderr.write('usage: probe.js <file.mdb>\n'); process.exit(2); }
const env = open({ path, readOnly: true, maxDbs: 16, encoding: 'binary', keyEncoding: 'binary' });
let bytes = 0;
// names first: opening a table while iterating the root invalidates the iteration
const names = Array.from(env.getKeys(), (name) => (Buffer.isBuffer(name) ? name.toString('utf8') : String(name)));
for (const name of names) {
  const db = env.openDB({ name, encoding: 'binary', keyEncoding: 'binary' });
  for (const { value } of db.getRange({})) bytes += (value as Buffer).length;
}
await env.close();
process.stdout.write(`${bytes}\n`);
process.exit(0);
