// `logbook hash-password` / `npm run --silent hash-password`: read a password (or a token secret) on stdin
// and print its hash for a LOGBOOK_USERS_FILE / LOGBOOK_TOKENS_FILE line:
//
//   printf '%s' "$PASSWORD" | npm run --silent hash-password   →  $scrypt$ln=15,r=8,p=1$…$…
//   echo "alice:$(printf '%s' "$PASSWORD" | npm run --silent hash-password):write" >> users
//
// One trailing newline (LF or CRLF) is dropped, nothing else. On a terminal it
// prompts without echo. `--ln N` sets the scrypt cost (N = 2^ln, default 15).
import { createInterface } from 'node:readline';
import { Writable } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { LIMITS } from '../limits.js';
import { hashSecret } from '../config/password.js';

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

/** `logbook hash-password [--ln N]`: prints the hash; 2 on bad arguments or an empty/oversized secret. */
export async function main(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(HELP);
    return 0;
  }
  try {
    const logN = parseArgs(argv);
    const secret = await readSecret();
    if (secret.length === 0) throw new Error('empty password: nothing to hash');
    process.stdout.write(`${await hashSecret(secret, logN)}\n`);
    return 0;
  } catch (err) {
    process.stderr.write(`hash-password: ${(err as Error).message}\n`);
    return 2;
  }
}

const HELP = `Usage: logbook hash-password [--ln N]   (also: npm run --silent hash-password)

Reads a password (or a token secret) on stdin and prints its scrypt hash for a
LOGBOOK_USERS_FILE / LOGBOOK_TOKENS_FILE line (name:hash:scope). One trailing
newline is dropped; on a terminal it prompts without echo.

  --ln N    scrypt cost N = 2^ln (10..${LIMITS.scryptMaxLogN}, default ${LIMITS.scryptLogN})

Exit codes: 0 ok, 1 failure, 2 usage (bad arguments, empty or oversized secret).
`;

// Run directly (`node dist/src/tools/hash_password.js`, the npm script) as well as through the CLI.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = await main(process.argv.slice(2));
}
