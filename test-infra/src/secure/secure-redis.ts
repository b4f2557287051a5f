/**
 * A secured Redis for one test file: TLS only (no plaintext port), client certificates accepted but
 * not required (as most managed Redis), the `default` user disabled, an `admin` user with every
 * permission, and the ACL users a test asks for (e.g. the least-privilege recipe of
 * @fencelock/redis's README). Passwords are random per start; the configuration file that holds
 * them and the certificates live in the server's temp dir (mode 0700), removed on stop.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ensureBinaries } from '../binaries.js';
import { InfraError } from '../errors.js';
import { forgetTempDir, rememberTempDir } from '../exit-cleanup.js';
import { ManagedServer, type ServerNode } from '../managed-server.js';
import { LOOPBACK, freePort } from '../ports.js';
import { type TestCertificates, generateCertificates } from './certificates.js';
import type { SecureUser } from './secure-etcd.js';

const run = promisify(execFile);
const REDIS_CLI_TIMEOUT_MS = 5_000;

/** Options of {@link startSecureRedis}. */
export interface SecureRedisOptions {
  /**
   * ACL users besides `admin`, by name: the rules after `on >password` (key patterns, channel
   * patterns, commands), e.g. `resetchannels ~locks:* &fencelock:* -@all +evalsha`.
   */
  readonly users?: Readonly<Record<string, string>>;
}

/** A running secured Redis. */
export interface SecureRedis {
  /** `rediss://127.0.0.1:<port>` (no credentials in it). */
  readonly url: string;
  readonly port: number;
  readonly certificates: TestCertificates;
  /** A client certificate signed by the test CA (optional for clients). */
  readonly clientCertificate: { readonly cert: string; readonly key: string };
  /** `admin` and every user asked for, with their random passwords. */
  readonly users: Readonly<Record<string, SecureUser>>;
  readonly node: ServerNode;
  /** Runs one command with redis-cli as `admin` over TLS; resolves its raw output. */
  redisCli(args: readonly string[]): Promise<string>;
  /** SIGKILLs the server and deletes its temp dir (configuration and certificates included). Idempotent. */
  stop(): Promise<void>;
}

function password(): string {
  return randomBytes(18).toString('base64url');
}

/**
 * Starts a secured Redis on a free loopback port and waits until `admin` can PING it.
 *
 * @throws InfraError with the tail of the log when it does not start.
 */
export async function startSecureRedis(options: SecureRedisOptions = {}): Promise<SecureRedis> {
  await ensureBinaries();
  const root = await mkdtemp(join(tmpdir(), 'fencelock-redis-secure-'));
  rememberTempDir(root);
  const certificates = await generateCertificates(join(root, 'tls'), ['fencelock-client']);
  const clientCertificate = certificates.clients['fencelock-client'];
  if (clientCertificate === undefined) throw new InfraError('no client certificate was generated');
  const port = await freePort();
  const users: Record<string, SecureUser> = { admin: { username: 'admin', password: password() } };
  for (const name of Object.keys(options.users ?? {})) {
    if (!/^[a-z][a-z0-9_-]*$/.test(name) || name === 'admin' || name === 'default') throw new RangeError(`bad ACL user name ${JSON.stringify(name)}`);
    users[name] = { username: name, password: password() };
  }
  const userLines = Object.entries(options.users ?? {}).map(([name, rules]) => `user ${name} reset on >${users[name]?.password ?? ''} ${rules}`);
  const dataDir = join(root, 'data');
  const config = [
    'port 0',
    `bind ${LOOPBACK}`,
    `tls-port ${port}`,
    `tls-cert-file ${certificates.server.cert}`,
    `tls-key-file ${certificates.server.key}`,
    `tls-ca-cert-file ${certificates.ca}`,
    'tls-auth-clients optional',
    `dir ${dataDir}`,
    'save ""',
    'appendonly no',
    'user default off',
    `user admin on >${users.admin?.password ?? ''} ~* &* +@all`,
    ...userLines,
    '',
  ].join('\n');
  const configFile = join(root, 'redis.conf');
  await writeFile(configFile, config, { mode: 0o600 });
  const redisCli = async (args: readonly string[]): Promise<string> => {
    try {
      const { stdout } = await run(
        'redis-cli',
        ['--tls', '--cacert', certificates.ca, '-h', LOOPBACK, '-p', String(port), '--user', 'admin', '--no-auth-warning', ...args],
        // The password through the environment: redis-cli reads REDISCLI_AUTH, and it stays off the command line.
        { env: { ...process.env, REDISCLI_AUTH: users.admin?.password ?? '' }, timeout: REDIS_CLI_TIMEOUT_MS, killSignal: 'SIGKILL' },
      );
      return stdout;
    } catch (error) {
      throw new InfraError(`redis-cli ${args[0] ?? ''} failed: ${String((error as { stderr?: unknown }).stderr ?? 'no output')}`);
    }
  };
  const node = new ManagedServer(
    `secure redis (${LOOPBACK}:${port})`,
    port,
    { label: `secure redis (${LOOPBACK}:${port})`, command: 'redis-server', args: [configFile], cwd: dataDir, logFile: join(root, 'redis.log') },
    async () => ((await redisCli(['PING']).catch(() => '')).trim() === 'PONG' ? true : undefined),
  );
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    await node.kill();
    await rm(root, { recursive: true, force: true });
    forgetTempDir(root);
  };
  try {
    await node.start();
  } catch (error) {
    await stop();
    throw error;
  }
  return { url: `rediss://${LOOPBACK}:${port}`, port, certificates, clientCertificate, users, node, redisCli, stop };
}
