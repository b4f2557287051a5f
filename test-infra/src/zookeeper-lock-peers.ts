/**
 * Real ZooKeeper lock recipes of other languages, run as child processes for interoperability tests:
 * Apache Curator (Java, Debian's libcurator-recipes-java) and kazoo (Python, python3-kazoo),
 * Curator's counting semaphore (`InterProcessSemaphoreV2`, one lease per peer) and Curator's leader
 * election (`LeaderLatch`: `HELD` when it becomes leader).
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

/** Options of {@link startCuratorLeaderPeer}. */
export interface CuratorLeaderPeerOptions {
  readonly connectionString: string;
  /** The latch path (Curator's `latchPath`, parent of the candidates), e.g. `/fencelock/#elections/jobs`. */
  readonly path: string;
  /** The participant id: the data of its candidate node (UTF-8), what `getLeader().getId()` reports. */
  readonly id: string;
  /** The peer's session timeout, in ms. @default 10_000 */
  readonly sessionTimeoutMs?: number;
  /** How long `held` (leadership) waits, in ms. @default 60_000 */
  readonly holdTimeoutMs?: number;
}

/** A Curator `LeaderLatch` in a child process: `held` resolves when it becomes leader. */
export interface ZooKeeperLeaderPeer extends ZooKeeperLockPeer {
  /** Curator's view of the leader: `getLeader().getId()` ('' when there is none), within 15 s. */
  leader(): Promise<string>;
  /** Closes the latch (resigns, or leaves the line) and keeps the client open; resolves once closed (≤ 15 s). */
  resign(): Promise<void>;
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

// A LeaderLatch: HELD when elected (its listener), then commands on stdin: \`leader\` prints
// \`LEADER <id>\` (getLeader().getId()), \`close\` closes the latch (CLOSED); stdin's end closes it
// too, then the client (RELEASED).
const CURATOR_LEADER_SOURCE = `
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.retry.RetryOneTime;

public class CuratorLeaderPeer {
  public static void main(String[] args) throws Exception {
    CuratorFramework client = CuratorFrameworkFactory.builder()
        .connectString(args[0]).sessionTimeoutMs(Integer.parseInt(args[3])).connectionTimeoutMs(10000)
        .retryPolicy(new RetryOneTime(200)).build();
    client.start();
    LeaderLatch latch = new LeaderLatch(client, args[1], args[2]);
    latch.addListener(new LeaderLatchListener() {
      public void isLeader() { System.out.println("HELD"); }
      public void notLeader() { System.out.println("NOT_LEADER"); }
    });
    System.out.println("WAITING");
    latch.start();
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    boolean open = true;
    for (String line = in.readLine(); line != null; line = in.readLine()) {
      if (line.equals("leader")) System.out.println("LEADER " + latch.getLeader().getId());
      else if (line.equals("close") && open) { latch.close(); open = false; System.out.println("CLOSED"); }
    }
    if (open) latch.close();
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

// Each peer class is compiled once per process with javac (each JVM then starts without compiling its source again).
const compiledPeers = new Map<string, Promise<string>>();

function compilePeer(className: string, sourceText: string): Promise<string> {
  let compiled = compiledPeers.get(className);
  if (compiled === undefined) {
    compiled = new Promise<string>((resolve, reject) => {
      const dir = mkdtempSync(join(tmpdir(), `fencelock-${className}-`));
      rememberTempDir(dir);
      const source = join(dir, `${className}.java`);
      writeFileSync(source, sourceText);
      // C1 only and the serial collector: javac's own JVM starts faster (what the peers' JVMs use too).
      execFile('javac', ['-J-XX:TieredStopAtLevel=1', '-J-XX:+UseSerialGC', '-nowarn', '-cp', CURATOR_JARS.join(':'), '-d', dir, source], { timeout: 60_000 }, (error, _stdout, stderr) => {
        if (error === null) resolve(dir);
        else reject(new Error(`javac failed for ${className}: ${stderr}`, { cause: error }));
      });
    });
    compiledPeers.set(className, compiled);
  }
  return compiled;
}

/** Runs compiled peer `className` in a small JVM. */
function spawnCompiledPeer(classes: string, className: string, args: readonly string[]): ChildProcess {
  return spawn('java', ['-Xmx128m', '-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1', '-cp', [classes, ...CURATOR_JARS].join(':'), className, ...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
}

/**
 * Starts a Curator `InterProcessSemaphoreV2(path, maxLeases)` that takes one lease (`held`) and
 * returns it on `release()`. Compiles the peer with javac on first use (≤ 60 s).
 */
export async function startCuratorSemaphorePeer(options: CuratorSemaphorePeerOptions): Promise<ZooKeeperLockPeer> {
  const classes = await compilePeer('CuratorSemaphorePeer', CURATOR_SEMAPHORE_SOURCE);
  const child = spawnCompiledPeer(classes, 'CuratorSemaphorePeer', [
    options.connectionString,
    options.path,
    String(options.maxLeases),
    String(options.sessionTimeoutMs ?? 10_000),
  ]);
  return watchPeer(child, 'Curator semaphore', options.holdTimeoutMs ?? 60_000, () => undefined);
}

/**
 * Starts a Curator `LeaderLatch(path, id)`: `held` resolves when it becomes leader; `resign()` closes
 * the latch, `release()` closes it and exits. Compiles the peer with javac on first use (≤ 60 s).
 */
export async function startCuratorLeaderPeer(options: CuratorLeaderPeerOptions): Promise<ZooKeeperLeaderPeer> {
  const classes = await compilePeer('CuratorLeaderPeer', CURATOR_LEADER_SOURCE);
  const child = spawnCompiledPeer(classes, 'CuratorLeaderPeer', [options.connectionString, options.path, options.id, String(options.sessionTimeoutMs ?? 10_000)]);
  const peer = watchPeer(child, 'Curator leader', options.holdTimeoutMs ?? 60_000, () => undefined);
  // One command at a time: each answer is the first matching line after the command was sent.
  const command = async (text: string, answer: (line: string) => boolean, what: string): Promise<string> => {
    const from = peer.lines.length;
    child.stdin?.write(`${text}\n`);
    return peer.untilLine(answer, from, 15_000, what);
  };
  return {
    ...peer,
    get isHolding() {
      return peer.isHolding;
    },
    async leader() {
      const line = await command('leader', (line) => line.startsWith('LEADER '), "the Curator peer's getLeader()");
      return line.slice('LEADER '.length);
    },
    async resign() {
      await command('close', (line) => line === 'CLOSED', 'the Curator peer to close its latch');
    },
  };
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

interface WatchedPeer extends ZooKeeperLockPeer {
  /** The first line from index `from` on that `match` accepts, waiting ≤ `timeoutMs` (rejects if the peer exits first). */
  untilLine(match: (line: string) => boolean, from: number, timeoutMs: number, what: string): Promise<string>;
}

function watchPeer(child: ChildProcess, label: string, holdTimeoutMs: number, cleanup: () => void): WatchedPeer {
  const lines: string[] = [];
  const lineListeners = new Set<() => void>();
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
      for (const listener of [...lineListeners]) listener();
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
  const untilLine = (match: (line: string) => boolean, from: number, timeoutMs: number, what: string): Promise<string> => {
    let listener: (() => void) | undefined;
    const found = new Promise<string>((resolve, reject) => {
      listener = () => {
        const line = lines.slice(from).find(match);
        if (line !== undefined) resolve(line);
      };
      lineListeners.add(listener);
      listener();
      void exited.then(() => reject(new Error(`${label} peer exited (code ${String(exitCode)}) before ${what}: ${lines.join(' ')} ${stderr}`)));
    });
    return withTimeout(found, timeoutMs, what).finally(() => {
      if (listener !== undefined) lineListeners.delete(listener);
    });
  };
  return {
    held: bounded,
    get isHolding() {
      return holding;
    },
    lines,
    untilLine,
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
