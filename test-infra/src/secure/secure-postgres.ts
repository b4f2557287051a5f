/**
 * A secured PostgreSQL for one test file: TCP connections only over TLS and only with
 * `scram-sha-256` passwords (plaintext TCP is rejected); the superuser `postgres` only through the
 * unix socket in the data dir. The roles a test asks for are created with random passwords. The
 * certificates are copied into the data dir, owned by the user the server runs as.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chown, copyFile, chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ensureBinaries, findPostgresBinDir, postgresSystemUser } from '../binaries.js';
import { InfraError } from '../errors.js';
import { forgetTempDir, rememberTempDir } from '../exit-cleanup.js';
import { ManagedServer, type ServerNode } from '../managed-server.js';
import { LOOPBACK, freePort } from '../ports.js';
import { initPostgresDataDir, postgresServerSpec, preparePostgresDataDir } from '../postgres-server.js';
import { type TestCertificates, generateCertificates } from './certificates.js';
import type { SecureUser } from './secure-etcd.js';

const run = promisify(execFile);
const PSQL_TIMEOUT_MS = 10_000;
const ROLE_NAME = /^[a-z][a-z0-9_]*$/;

/** Options of {@link startSecurePostgres}. */
export interface SecurePostgresOptions {
  /** Roles to create, by name: SQL run by the superuser after `CREATE ROLE <name> LOGIN PASSWORD …`, e.g. grants. */
  readonly roles?: Readonly<Record<string, string>>;
}

/** A running secured PostgreSQL. */
export interface SecurePostgres {
  /** `postgres://127.0.0.1:<port>/postgres` (no credentials in it). */
  readonly url: string;
  readonly port: number;
  readonly certificates: TestCertificates;
  /** The roles asked for, with their random passwords. */
  readonly users: Readonly<Record<string, SecureUser>>;
  readonly node: ServerNode;
  /** Runs SQL as the superuser through the unix socket; resolves psql's unaligned output. */
  psql(sql: string): Promise<string>;
  /** SIGKILLs the server and deletes its data dir and certificates. Idempotent. */
  stop(): Promise<void>;
}

function password(): string {
  return randomBytes(18).toString('base64url');
}

/**
 * Starts a secured PostgreSQL on a free loopback port and creates the roles asked for.
 *
 * @throws InfraError with the tail of the log or psql's output when a step fails.
 */
export async function startSecurePostgres(options: SecurePostgresOptions = {}): Promise<SecurePostgres> {
  await ensureBinaries();
  const binDir = findPostgresBinDir();
  if (binDir === undefined) throw new InfraError('PostgreSQL (postgres, initdb) is not installed; see ensureBinaries()');
  const root = await mkdtemp(join(tmpdir(), 'fencelock-postgres-secure-'));
  rememberTempDir(root);
  const certificates = await generateCertificates(join(root, 'tls'), ['fencelock-client']);
  const dataDir = await preparePostgresDataDir(join(root, 'data'));
  if (dataDir !== join(root, 'data')) rememberTempDir(dataDir);
  const port = await freePort();
  const users: Record<string, SecureUser> = {};
  for (const name of Object.keys(options.roles ?? {})) {
    if (!ROLE_NAME.test(name) || name === 'postgres') throw new RangeError(`bad role name ${JSON.stringify(name)}`);
    users[name] = { username: name, password: password() };
  }
  const stopAll = async (node?: ManagedServer): Promise<void> => {
    await node?.kill();
    await rm(root, { recursive: true, force: true });
    forgetTempDir(root);
    if (dataDir !== join(root, 'data')) {
      await rm(dataDir, { recursive: true, force: true });
      forgetTempDir(dataDir);
    }
  };
  let node: ManagedServer | undefined;
  try {
    await initPostgresDataDir({ binDir, dataDir, logFile: join(root, 'initdb.log') });
    // The server reads its key as itself and refuses one others can read.
    const owner = process.getuid?.() === 0 ? postgresSystemUser() : undefined;
    for (const [from, to] of [
      [certificates.server.cert, 'server.crt'],
      [certificates.server.key, 'server.key'],
      [certificates.ca, 'ca.crt'],
    ] as const) {
      const target = join(dataDir, to);
      await copyFile(from, target);
      await chmod(target, 0o600);
      if (owner !== undefined) await chown(target, owner.uid, owner.gid);
    }
    const hba = join(dataDir, 'pg_hba.conf');
    await writeFile(
      hba,
      ['local all postgres trust', `hostssl all all ${LOOPBACK}/32 scram-sha-256`, `host all all ${LOOPBACK}/32 reject`, ''].join('\n'),
      { mode: 0o600 },
    );
    if (owner !== undefined) await chown(hba, owner.uid, owner.gid);
    const spec = postgresServerSpec({ binDir, port, dataDir, logFile: join(root, 'postgres.log') });
    const psqlProgram = existsSync(join(binDir, 'psql')) ? join(binDir, 'psql') : 'psql';
    const psql = async (sql: string): Promise<string> => {
      try {
        const { stdout } = await run(psqlProgram, ['-h', dataDir, '-p', String(port), '-U', 'postgres', '-d', 'postgres', '-v', 'ON_ERROR_STOP=1', '-At', '-c', sql], {
          timeout: PSQL_TIMEOUT_MS,
          killSignal: 'SIGKILL',
          env: { ...process.env, PGCONNECT_TIMEOUT: '3' },
        });
        return stdout;
      } catch (error) {
        // The SQL may hold a password: report psql's answer only.
        throw new InfraError(`psql failed: ${String((error as { stderr?: unknown }).stderr ?? 'no output')}`);
      }
    };
    node = new ManagedServer(
      `secure postgres (${LOOPBACK}:${port})`,
      port,
      {
        ...spec,
        label: `secure postgres (${LOOPBACK}:${port})`,
        args: [...spec.args, '-c', 'ssl=on', '-c', 'ssl_cert_file=server.crt', '-c', 'ssl_key_file=server.key', '-c', 'ssl_ca_file=ca.crt', '-c', 'password_encryption=scram-sha-256'],
      },
      async () => ((await psql('SELECT 1').catch(() => '')).trim() === '1' ? true : undefined),
    );
    await node.start();
    for (const [name, grants] of Object.entries(options.roles ?? {})) {
      // A password literal: base64url has no quote, so it needs no escaping.
      await psql(`CREATE ROLE ${name} LOGIN PASSWORD '${users[name]?.password ?? ''}'`);
      if (grants.trim() !== '') await psql(grants);
    }
    let stopped = false;
    const started = node;
    return {
      url: `postgres://${LOOPBACK}:${port}/postgres`,
      port,
      certificates,
      users,
      node: started,
      psql,
      stop: async () => {
        if (stopped) return;
        stopped = true;
        await stopAll(started);
      },
    };
  } catch (error) {
    await stopAll(node);
    throw error;
  }
}
