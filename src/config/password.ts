// Password and token-secret hashes: scrypt from node:crypto, stored in the PHC
// string format `$scrypt$ln=<log2 N>,r=<r>,p=<p>$<salt>$<key>` (base64 without
// padding), so each hash carries its own parameters and salt and the cost can be
// raised later without invalidating old lines. The format has no ':' so it sits
// between the name and the scope of a `name:hash:scope` line.
import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import { LIMITS } from '../limits.js';

export interface PasswordHash {
  logN: number;
  r: number;
  p: number;
  salt: Buffer;
  key: Buffer;
}

const PHC = /^\$scrypt\$ln=(\d{1,2}),r=(\d{1,2}),p=(\d{1,2})\$([A-Za-z0-9+/]{11,})\$([A-Za-z0-9+/]{22,})$/;

/** Parse a stored hash, or return why it is not acceptable. */
export function parseHash(text: string): PasswordHash | string {
  const m = PHC.exec(text);
  if (!m) return 'not a $scrypt$ln=…,r=…,p=…$salt$key hash (make one with `npm run --silent hash-password`)';
  const [logN, r, p] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (logN < 1 || logN > LIMITS.scryptMaxLogN) return `scrypt ln must be 1..${LIMITS.scryptMaxLogN}`;
  if (r < 1 || p < 1 || p > LIMITS.scryptMaxP) return `scrypt r must be ≥ 1 and p 1..${LIMITS.scryptMaxP}`;
  if (memoryOf(logN, r) > LIMITS.scryptMaxMemoryBytes) return `scrypt parameters need more than ${LIMITS.scryptMaxMemoryBytes} bytes`;
  const salt = Buffer.from(m[4]!, 'base64');
  const key = Buffer.from(m[5]!, 'base64');
  if (salt.length < 8 || key.length < 16 || key.length > 64) return 'salt or key too short';
  return { logN, r, p, salt, key };
}

export function formatHash(h: PasswordHash): string {
  const b64 = (b: Buffer) => b.toString('base64').replace(/=+$/, '');
  return `$scrypt$ln=${h.logN},r=${h.r},p=${h.p}$${b64(h.salt)}$${b64(h.key)}`;
}

/** scrypt's working memory (128·N·r), which node's `maxmem` must allow. */
function memoryOf(logN: number, r: number): number {
  return 128 * 2 ** logN * r;
}

/** The KDF on libuv's thread pool: the event loop never waits for it. */
function derive(secret: Buffer, h: Pick<PasswordHash, 'logN' | 'r' | 'p' | 'salt'>, keyLength: number): Promise<Buffer> {
  const options = { N: 2 ** h.logN, r: h.r, p: h.p, maxmem: 2 * memoryOf(h.logN, h.r) + 1024 * 1024 };
  return new Promise((resolve, reject) => {
    scrypt(secret, h.salt, keyLength, options, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

/** Hash a new secret with the default cost (or `logN`) and a fresh salt. */
export async function hashSecret(secret: Buffer, logN: number = LIMITS.scryptLogN): Promise<string> {
  const params = { logN, r: LIMITS.scryptR, p: LIMITS.scryptP, salt: randomBytes(LIMITS.scryptSaltBytes) };
  const key = await derive(secret, params, LIMITS.scryptKeyBytes);
  return formatHash({ ...params, key });
}

/** Constant-time check of a secret against a stored hash. */
export async function verifySecret(secret: Buffer, h: PasswordHash): Promise<boolean> {
  const key = await derive(secret, h, h.key.length);
  return timingSafeEqual(key, h.key);
}

/** A hash nobody knows the secret of, with the given cost: unknown names are
 * verified against it so that they take as long to refuse as known ones. */
export function dummyHash(like: Pick<PasswordHash, 'logN' | 'r' | 'p'>): PasswordHash {
  return { logN: like.logN, r: like.r, p: like.p, salt: randomBytes(LIMITS.scryptSaltBytes), key: randomBytes(LIMITS.scryptKeyBytes) };
}
