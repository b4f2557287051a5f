/**
 * Real ZooKeeper lock recipes of other languages, run as child processes for interoperability tests:
 * Apache Curator (Java, Debian's libcurator-recipes-java) and kazoo (Python, python3-kazoo), and
 * Curator's counting semaphore (`InterProcessSemaphoreV2`, one lease per peer).
 *
 * A peer prints `WAITING` before it asks for the lock, `HELD` once it holds it, and `RELEASED` after
 * releasing it, which it does when its stdin closes (`release()`). Every wait is bounded; `kill()`
 * SIGKILLs only the process this module started.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { CURATOR_RECIPES_JAR, SYSTEM_PYTHON } from './binaries.js';
import { forgetPid, rememberPid, rememberTempDir } from './exit-cleanup.js';
import { withTimeout } from './wait.js';

/** A running peer process holding (or waiting for) one lock. */
export interface ZooKeeperLockPeer {
  /** Resolves when the peer holds the lock; rejects if it exits first or after `holdTimeoutMs`. */
  readonly held: Promise<void>;
  /** True once the peer printed `HELD`. */
  readonly isHolding: boolean;
  /** Every line the peer printed so far. */
  readonly lines: readonly string[];
  /** Closes its stdin (it releases and exits) and waits ≤ 15 s for it to exit, then SIGKILLs it. */
  release(): Promise<void>;
  /** SIGKILLs the peer (no release; its session expires on the server). Idempotent. */
  kill(): void;
}

/** Options of {@link startCuratorLockPeer}. */
export interface CuratorLockPeerOptions {
  readonly connectionString: string;
  /** The lock's znode path, e.g. `/fencelock/orders`. */
  readonly path: string;
  /** `mutex`: InterProcessMutex; `read` / `write`: InterProcessReadWriteLock's locks. @default 'mutex' */
  readonly recipe?: 'mutex' | 'read' | 'write';
  /** How long `held` waits, in ms. @default 60_000 */
  readonly holdTimeoutMs?: number;
}

/** Options of {@link startCuratorSemaphorePeer}. */
export interface CuratorSemaphorePeerOptions {
  readonly connectionString: string;
  /** The semaphore's path (Curator's: it holds `locks` and `leases`), e.g. `/fencelock/#semaphores/pool`. */
  readonly path: string;
  /** The `maxLeases` the peer's `InterProcessSemaphoreV2` is built with. */
  readonly maxLeases: number;
  /** The peer's session timeout, in ms (short ones let a killed peer's lease go quickly). @default 10_000 */
  readonly sessionTimeoutMs?: number;
  /** How long `held` waits, in ms (the peer itself gives up after 60 s). @default 60_000 */
  readonly holdTimeoutMs?: number;
}

/** Options of {@link startKazooLockPeer}. */
export interface KazooLockPeerOptions {
  readonly connectionString: string;
  readonly path: string;
  /** kazoo's `extra_lock_patterns` (for `Lock`), e.g. `['-lock-']` to see Curator-named contenders. @default [] */
  readonly extraLockPatterns?: readonly string[];
  /** `lock`: `Lock`; `read` / `write`: `ReadLock` / `WriteLock`. @default 'lock' */
  readonly recipe?: 'lock' | 'read' | 'write';
  /** How long `held` waits, in ms. @default 60_000 */
  readonly holdTimeoutMs?: number;
}

const CURATOR_JARS = [
  CURATOR_RECIPES_JAR,
  '/usr/share/java/curator-framework.jar',
  '/usr/share/java/curator-client.jar',
  '/usr/share/java/zookeeper.jar',
  '/usr/share/java/zookeeper-jute.jar',
  '/usr/share/java/guava.jar',
  '/usr/share/java/slf4j-api.jar',
  '/usr/share/java/slf4j-nop.jar',
];

const CURATOR_SOURCE = `
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.retry.RetryOneTime;

public class CuratorLockPeer {
  public static void main(String[] args) throws Exception {
    CuratorFramework client = CuratorFrameworkFactory.builder()
        .connectString(args[0]).sessionTimeoutMs(10000).connectionTimeoutMs(10000)
        .retryPolicy(new RetryOneTime(200)).build();
    client.start();
    InterProcessLock lock;
    if (args[2].equals("read")) lock = new InterProcessReadWriteLock(client, args[1]).readLock();
    else if (args[2].equals("write")) lock = new InterProcessReadWriteLock(client, args[1]).writeLock();
    else lock = new InterProcessMutex(client, args[1]);
    System.out.println("WAITING");
    if (!lock.acquire(60, TimeUnit.SECONDS)) { System.out.println("TIMEOUT"); System.exit(3); }
    System.out.println("HELD");
    while (System.in.read() != -1) { }
    lock.release();
    System.out.println("RELEASED");
    client.close();
    System.exit(0);
  }
}
`;

// One lease of InterProcessSemaphoreV2 (its acquire(time, unit)): WAITING, HELD, then RELEASED on stdin's end.
const CURATOR_SEMAPHORE_SOURCE = `
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.RetryOneTime;

public class CuratorSemaphorePeer {
  public static void main(String[] args) throws Exception {
    CuratorFramework client = CuratorFrameworkFactory.builder()
        .connectString(args[0]).sessionTimeoutMs(Integer.parseInt(args[3])).connectionTimeoutMs(10000)
        .retryPolicy(new RetryOneTime(200)).build();
    client.start();
    InterProcessSemaphoreV2 semaphore = new InterProcessSemaphoreV2(client, args[1], Integer.parseInt(args[2]));
    System.out.println("WAITING");
    Lease lease = semaphore.acquire(60, TimeUnit.SECONDS);
    if (lease == null) { System.out.println("TIMEOUT"); System.exit(3); }
    System.out.println("HELD");
    while (System.in.read() != -1) { }
    semaphore.returnLease(lease);
    System.out.println("RELEASED");
    client.close();
    System.exit(0);
  }
}
`;

const KAZOO_SOURCE = `
import json, sys
from kazoo.client import KazooClient
hosts, path, extra, recipe = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
zk = KazooClient(hosts=hosts, timeout=10)
zk.start(timeout=15)
if recipe == "read":
    lock = zk.ReadLock(path, "kazoo-peer")
elif recipe == "write":
    lock = zk.WriteLock(path, "kazoo-peer")
else:
    lock = zk.Lock(path, "kazoo-peer", extra_lock_patterns=extra)
print("WAITING", flush=True)
if not lock.acquire(timeout=60):
    print("TIMEOUT", flush=True)
    sys.exit(3)
print("HELD", flush=True)
sys.stdin.read()
lock.release()
print("RELEASED", flush=True)
zk.stop()
zk.close()
`;

/** Starts Curator's InterProcessMutex (or read-write lock) on `path` in a JVM (single-file source launch). */
export function startCuratorLockPeer(options: CuratorLockPeerOptions): ZooKeeperLockPeer {
  const dir = mkdtempSync(join(tmpdir(), 'fencelock-curator-'));
  const source = join(dir, 'CuratorLockPeer.java');
  writeFileSync(source, CURATOR_SOURCE);
  const child = spawn(
    'java',
    ['-Xmx128m', '-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1', '-cp', CURATOR_JARS.join(':'), source, options.connectionString, options.path, options.recipe ?? 'mutex'],
    { stdio: ['pipe', 'pipe', 'pipe'] },
  );
  return watchPeer(child, 'Curator', options.holdTimeoutMs ?? 60_000, () => rmSync(dir, { recursive: true, force: true }));
}

// Compiled once per process with javac (each JVM then starts without compiling its source again).
let semaphorePeerClasses: Promise<string> | undefined;

function compileSemaphorePeer(): Promise<string> {
  semaphorePeerClasses ??= new Promise<string>((resolve, reject) => {
    const dir = mkdtempSync(join(tmpdir(), 'fencelock-curator-semaphore-'));
    rememberTempDir(dir);
    const source = join(dir, 'CuratorSemaphorePeer.java');
    writeFileSync(source, CURATOR_SEMAPHORE_SOURCE);
    // C1 only and the serial collector: javac's own JVM starts faster (what the peers' JVMs use too).
    execFile('javac', ['-J-XX:TieredStopAtLevel=1', '-J-XX:+UseSerialGC', '-nowarn', '-cp', CURATOR_JARS.join(':'), '-d', dir, source], { timeout: 60_000 }, (error, _stdout, stderr) => {
      if (error === null) resolve(dir);
      else reject(new Error(`javac failed for the Curator semaphore peer: ${stderr}`, { cause: error }));
    });
  });
  return semaphorePeerClasses;
}

/**
 * Starts a Curator `InterProcessSemaphoreV2(path, maxLeases)` that takes one lease (`held`) and
 * returns it on `release()`. Compiles the peer with javac on first use (≤ 60 s).
 */
export async function startCuratorSemaphorePeer(options: CuratorSemaphorePeerOptions): Promise<ZooKeeperLockPeer> {
  const classes = await compileSemaphorePeer();
  const child = spawn(
    'java',
    [
      '-Xmx128m',
      '-XX:+UseSerialGC',
      '-XX:TieredStopAtLevel=1',
      '-cp',
      [classes, ...CURATOR_JARS].join(':'),
      'CuratorSemaphorePeer',
      options.connectionString,
      options.path,
      String(options.maxLeases),
      String(options.sessionTimeoutMs ?? 10_000),
    ],
    { stdio: ['pipe', 'pipe', 'pipe'] },
  );
  return watchPeer(child, 'Curator semaphore', options.holdTimeoutMs ?? 60_000, () => undefined);
}

/** Starts kazoo's `Lock` (or `ReadLock` / `WriteLock`) on `path` with Debian's Python. */
export function startKazooLockPeer(options: KazooLockPeerOptions): ZooKeeperLockPeer {
  const child = spawn(
    SYSTEM_PYTHON,
    ['-c', KAZOO_SOURCE, options.connectionString, options.path, JSON.stringify(options.extraLockPatterns ?? []), options.recipe ?? 'lock'],
    { stdio: ['pipe', 'pipe', 'pipe'] },
  );
  return watchPeer(child, 'kazoo', options.holdTimeoutMs ?? 60_000, () => undefined);
}

function watchPeer(child: ChildProcess, label: string, holdTimeoutMs: number, cleanup: () => void): ZooKeeperLockPeer {
  const lines: string[] = [];
  let stderr = '';
  let holding = false;
  let exitCode: number | null | undefined;
  // Killed at exit if a test forgets it.
  if (child.pid !== undefined) rememberPid(child.pid);
  const exited = new Promise<void>((resolve) => {
    child.once('exit', (code) => {
      exitCode = code;
      if (child.pid !== undefined) forgetPid(child.pid);
      cleanup();
      resolve();
    });
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString('utf8')).slice(-4_000);
  });
  const held = new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      lines.push(line);
      if (line === 'HELD') {
        holding = true;
        resolve();
      }
    });
    void exited.then(() => reject(new Error(`${label} peer exited (code ${String(exitCode)}) before holding the lock: ${lines.join(' ')} ${stderr}`)));
  });
  const bounded = withTimeout(held, holdTimeoutMs, `the ${label} peer to hold the lock`);
  bounded.catch(() => undefined);
  const kill = (): void => {
    if (exitCode === undefined && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  return {
    held: bounded,
    get isHolding() {
      return holding;
    },
    lines,
    async release() {
      child.stdin?.end();
      try {
        await withTimeout(exited, 15_000, `the ${label} peer to release and exit`);
      } finally {
        kill();
      }
    },
    kill,
  };
}
