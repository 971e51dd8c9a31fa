// `npm run --silent hash-password`: read a password (or a token secret) on stdin
// and print its hash for a LOGBOOK_USERS_FILE / LOGBOOK_TOKENS_FILE line:
//
//   printf '%s' "$PASSWORD" | npm run --silent hash-password   →  $scrypt$ln=15,r=8,p=1$…$…
//   echo "alice:$(printf '%s' "$PASSWORD" | npm run --silent hash-password):write" >> users
//
// One trailing newline (LF or CRLF) is dropped, nothing else. On a terminal it
// prompts without echo. `--ln N` sets the scrypt cost (N = 2^ln, default 15).
import { createInterface } from 'node:readline';
import { Writable } from 'node:stream';
import { LIMITS } from '../limits.js';
import { hashSecret } from '../http/password.js';

const MAX_SECRET_BYTES = 4096;

async function readSecret(): Promise<Buffer> {
  if (process.stdin.isTTY) {
    process.stderr.write('Password: ');
    const muted = new Writable({ write: (_chunk, _enc, cb) => cb() });
    const rl = createInterface({ input: process.stdin, output: muted, terminal: true });
    const line = await new Promise<string>((resolve) => rl.question('', resolve));
    rl.close();
    process.stderr.write('\n');
    return Buffer.from(line, 'utf8');
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of process.stdin) {
    size += (chunk as Buffer).length;
    if (size > MAX_SECRET_BYTES) throw new Error(`the secret is longer than ${MAX_SECRET_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  let secret = Buffer.concat(chunks);
  if (secret.at(-1) === 0x0a) secret = secret.subarray(0, secret.at(-2) === 0x0d ? -2 : -1);
  return secret;
}

function parseArgs(argv: string[]): number {
  let logN: number = LIMITS.scryptLogN;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const value = arg.startsWith('--ln=') ? arg.slice(5) : arg === '--ln' ? argv[++i] : undefined;
    if (value === undefined || !/^\d+$/.test(value) || Number(value) < 10 || Number(value) > LIMITS.scryptMaxLogN) {
      throw new Error(`usage: hash-password [--ln 10..${LIMITS.scryptMaxLogN}]  (reads the secret on stdin)`);
    }
    logN = Number(value);
  }
  return logN;
}

try {
  const logN = parseArgs(process.argv.slice(2));
  const secret = await readSecret();
  if (secret.length === 0) throw new Error('empty password: nothing to hash');
  process.stdout.write(`${await hashSecret(secret, logN)}\n`);
} catch (err) {
  process.stderr.write(`hash-password: ${(err as Error).message}\n`);
  process.exit(2);
}
