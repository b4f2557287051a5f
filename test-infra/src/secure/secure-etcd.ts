/**
 * A secured etcd for one test file: a single member serving clients over TLS only, with client
 * certificates required (`--client-cert-auth`), and etcd's authentication on. Users and roles follow
 * the least-privilege recipe of @fencelock/etcd's README: `locker` may read and write the lock prefix
 * and nothing else, `reader` may only read it, `other` owns another application's prefix, and `root`
 * administers. Passwords are random per start; certificates are generated into the server's temp dir.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ensureBinaries } from '../binaries.js';
import { InfraError } from '../errors.js';
import { forgetTempDir, rememberTempDir } from '../exit-cleanup.js';
import { ManagedServer, type ServerNode } from '../managed-server.js';
import { LOOPBACK, freePorts } from '../ports.js';
import { type TestCertificates, generateCertificates } from './certificates.js';

const run = promisify(execFile);
const ETCDCTL_TIMEOUT_MS = 10_000;

/** A user of the secured etcd. */
export interface SecureUser {
  readonly username: string;
  readonly password: string;
}

/** The prefixes the roles cover (the lock prefix is @fencelock/etcd's default `keyPrefix`). */
export const SECURE_ETCD_LOCK_PREFIX = 'fencelock/';
export const SECURE_ETCD_OTHER_PREFIX = 'other-app/';

/** A running secured etcd. */
export interface SecureEtcd {
  /** `https://127.0.0.1:<port>` */
  readonly endpoint: string;
  readonly certificates: TestCertificates;
  /** The client certificate every user connects with (signed by the test CA). */
  readonly clientCertificate: { readonly cert: string; readonly key: string };
  readonly users: { readonly root: SecureUser; readonly locker: SecureUser; readonly reader: SecureUser; readonly other: SecureUser };
  readonly node: ServerNode;
  /** Runs `etcdctl` as root with the test CA and client certificate; resolves stdout. */
  etcdctl(args: readonly string[]): Promise<string>;
  /** SIGKILLs the member and deletes its temp dir (certificates included). Idempotent. */
  stop(): Promise<void>;
}

function password(): string {
  return randomBytes(18).toString('base64url');
}

/**
 * Starts a secured single-member etcd on free loopback ports and sets up its users and roles.
 *
 * @throws InfraError with the tail of the member's log, or etcdctl's output, when a step fails.
 */
export async function startSecureEtcd(): Promise<SecureEtcd> {
  await ensureBinaries();
  const root = await mkdtemp(join(tmpdir(), 'fencelock-etcd-secure-'));
  rememberTempDir(root);
  const certificates = await generateCertificates(join(root, 'tls'), ['fencelock-client']);
  const clientCertificate = certificates.clients['fencelock-client'];
  if (clientCertificate === undefined) throw new InfraError('no client certificate was generated');
  const [clientPort = 0, peerPort = 0] = await freePorts(2);
  const endpoint = `https://${LOOPBACK}:${clientPort}`;
  const peer = `http://${LOOPBACK}:${peerPort}`;
  const dataDir = join(root, 'data');
  const tlsArgs = (who: { cert: string; key: string }): string[] => [
    `--endpoints=${endpoint}`,
    `--cacert=${certificates.ca}`,
    `--cert=${who.cert}`,
    `--key=${who.key}`,
    `--dial-timeout=3s`,
    `--command-timeout=5s`,
  ];
  const users = { root: { username: 'root', password: password() }, locker: { username: 'locker', password: password() }, reader: { username: 'reader', password: password() }, other: { username: 'other', password: password() } };
  let authEnabled = false;
  const etcdctl = async (args: readonly string[]): Promise<string> => {
    const auth = authEnabled ? [`--user=root:${users.root.password}`] : [];
    try {
      const { stdout } = await run('etcdctl', [...tlsArgs(clientCertificate), ...auth, ...args], {
        env: { ...process.env, ETCDCTL_API: '3' },
        timeout: ETCDCTL_TIMEOUT_MS,
        killSignal: 'SIGKILL',
      });
      return stdout;
    } catch (error) {
      // The command line holds a password: report the subcommand and etcdctl's answer only.
      throw new InfraError(`etcdctl ${args[0] ?? ''} ${args[1] ?? ''} failed: ${String((error as { stderr?: unknown }).stderr ?? 'no output')}`);
    }
  };
  const node = new ManagedServer(
    `secure etcd (${LOOPBACK}:${clientPort})`,
    clientPort,
    {
      label: `secure etcd (${LOOPBACK}:${clientPort})`,
      command: 'etcd',
      args: [
        '--name', 'secure',
        '--data-dir', dataDir,
        '--listen-client-urls', endpoint,
        '--advertise-client-urls', endpoint,
        '--listen-peer-urls', peer,
        '--initial-advertise-peer-urls', peer,
        '--initial-cluster', `secure=${peer}`,
        '--initial-cluster-token', `fencelock-secure-${process.pid}-${Date.now()}`,
        '--initial-cluster-state', 'new',
        '--cert-file', certificates.server.cert,
        '--key-file', certificates.server.key,
        '--client-cert-auth',
        '--trusted-ca-file', certificates.ca,
        '--logger', 'zap',
        '--log-level', 'warn',
      ],
      cwd: dataDir,
      logFile: join(root, 'etcd.log'),
    },
    async () => {
      try {
        await etcdctl(['endpoint', 'health']);
        return true;
      } catch {
        return undefined;
      }
    },
  );
  const stop = async (): Promise<void> => {
    await node.kill();
    await rm(root, { recursive: true, force: true });
    forgetTempDir(root);
  };
  try {
    await node.start();
    const roles: [string, string, string][] = [
      ['fencelock-locks', 'readwrite', SECURE_ETCD_LOCK_PREFIX],
      ['fencelock-read', 'read', SECURE_ETCD_LOCK_PREFIX],
      ['other-app', 'readwrite', SECURE_ETCD_OTHER_PREFIX],
    ];
    for (const [role, permission, prefix] of roles) {
      await etcdctl(['role', 'add', role]);
      await etcdctl(['role', 'grant-permission', role, permission, prefix, '--prefix=true']);
    }
    const grants: [SecureUser, string | undefined][] = [
      [users.root, 'root'],
      [users.locker, 'fencelock-locks'],
      [users.reader, 'fencelock-read'],
      [users.other, 'other-app'],
    ];
    for (const [user, role] of grants) {
      await etcdctl(['user', 'add', user.username, '--interactive=false', `--new-user-password=${user.password}`]);
      if (role !== undefined) await etcdctl(['user', 'grant-role', user.username, role]);
    }
    await etcdctl(['auth', 'enable']);
    authEnabled = true;
  } catch (error) {
    await stop();
    throw error;
  }
  let stopped = false;
  return {
    endpoint,
    certificates,
    clientCertificate,
    users,
    node,
    etcdctl,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await stop();
    },
  };
}
