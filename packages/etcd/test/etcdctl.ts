import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Runs the real `etcdctl lock NAME -- sh -c '…'` (etcd's Go `concurrency.Mutex`, from Debian's
 * etcd-client) as an interop peer. The shell prints `held` once etcdctl holds the lock and keeps it
 * until we write to a FIFO (etcdctl gives its command no stdin), at most 60 s; then etcdctl unlocks
 * and exits. Only this process is ever signalled, by PID.
 */
export class EtcdctlLock {
  readonly #child: ChildProcess;
  readonly #exited: Promise<number | null>;
  #stdout = '';
  #held: Promise<void>;
  readonly #dir: string;
  readonly #fifo: string;

  constructor(endpoints: readonly string[], name: string, options: { holdUntilFinished: boolean; ttlSeconds?: number }) {
    this.#dir = mkdtempSync(join(tmpdir(), 'fencelock-etcdctl-'));
    this.#fifo = join(this.#dir, 'release');
    execFileSync('mkfifo', [this.#fifo]);
    const command = options.holdUntilFinished ? `echo held; timeout 60 cat '${this.#fifo}' >/dev/null; echo done` : 'echo held';
    this.#child = spawn(
      'etcdctl',
      [`--endpoints=${endpoints.join(',')}`, 'lock', name, `--ttl=${options.ttlSeconds ?? 10}`, '--', 'sh', '-c', command],
      { env: { ...process.env, ETCDCTL_API: '3' }, stdio: ['pipe', 'pipe', 'pipe'] },
    );
    this.#exited = new Promise((resolve) =>
      this.#child.once('exit', (code) => {
        rmSync(this.#dir, { recursive: true, force: true });
        resolve(code);
      }),
    );
    this.#held = new Promise((resolve, reject) => {
      this.#child.stdout?.on('data', (chunk: Buffer) => {
        this.#stdout += chunk.toString();
        if (this.#stdout.includes('held')) resolve();
      });
      this.#exited.then((code) => reject(new Error(`etcdctl exited (${String(code)}) before holding: ${this.#stdout}`)));
    });
    this.#held.catch(() => undefined);
  }

  /** True once the command runs under the lock. */
  get holding(): boolean {
    return this.#stdout.includes('held');
  }

  get exitedAlready(): boolean {
    return this.#child.exitCode !== null || this.#child.signalCode !== null;
  }

  /** Resolves once etcdctl holds the lock (rejects after `ms`). */
  held(ms: number): Promise<void> {
    return bounded(this.#held, ms, 'etcdctl to hold the lock');
  }

  /** Lets the held command finish (etcdctl then unlocks) and resolves etcdctl's exit code. */
  finish(ms: number): Promise<number | null> {
    // The reader is open (the command runs), so opening the FIFO for writing does not block.
    if (!this.exitedAlready) writeFileSync(this.#fifo, 'release\n');
    return bounded(this.#exited, ms, 'etcdctl to exit');
  }

  /** Resolves the exit code (rejects after `ms`). */
  exit(ms: number): Promise<number | null> {
    return bounded(this.#exited, ms, 'etcdctl to exit');
  }

  /** SIGKILLs this etcdctl process (etcdctl never revokes its lease: the lock lives until the lease TTL). */
  kill(): Promise<void> {
    return killChild(this.#child, this.#exited);
  }
}

/**
 * Runs the real `etcdctl elect` (etcd's Go `concurrency.Election`) as an interop peer: with a
 * proposal it campaigns and, once elected, prints the leader key and the proposal, then leads until
 * signalled (SIGTERM: it resigns; SIGKILL: its key lives on with its lease); with `listen` it
 * observes (`elect -l`), printing the leader's key and value at each change. Only this process is
 * ever signalled, by PID.
 */
export class EtcdctlElect {
  readonly #child: ChildProcess;
  readonly #exited: Promise<number | null>;
  #stdout = '';
  #stderr = '';
  readonly #waiters = new Set<() => void>();

  constructor(endpoints: readonly string[], name: string, role: { proposal: string } | { listen: true }) {
    const args = 'proposal' in role ? [name, role.proposal] : ['-l', name];
    this.#child = spawn('etcdctl', [`--endpoints=${endpoints.join(',')}`, 'elect', ...args], {
      env: { ...process.env, ETCDCTL_API: '3' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.#exited = new Promise((resolve) => this.#child.once('exit', (code) => resolve(code)));
    const heard = (): void => {
      for (const waiter of [...this.#waiters]) waiter();
    };
    this.#child.stdout?.on('data', (chunk: Buffer) => {
      this.#stdout += chunk.toString();
      heard();
    });
    this.#child.stderr?.on('data', (chunk: Buffer) => {
      this.#stderr += chunk.toString();
    });
    void this.#exited.then(heard);
  }

  /** The lines etcdctl printed so far (keys and values alternate). */
  get lines(): string[] {
    return this.#stdout.split('\n').filter((line) => line !== '');
  }

  get exitedAlready(): boolean {
    return this.#child.exitCode !== null || this.#child.signalCode !== null;
  }

  /** Resolves once etcdctl printed a line equal to `line` (rejects after `ms`, or when it exits first). */
  printed(line: string, ms: number): Promise<void> {
    const found = new Promise<void>((resolve, reject) => {
      const check = (): void => {
        if (this.lines.includes(line)) {
          this.#waiters.delete(check);
          resolve();
        } else if (this.exitedAlready) {
          this.#waiters.delete(check);
          reject(new Error(`etcdctl exited before printing ${JSON.stringify(line)}: ${this.#stdout}${this.#stderr}`));
        }
      };
      this.#waiters.add(check);
      check();
    });
    return bounded(found, ms, `etcdctl to print ${JSON.stringify(line)} (printed: ${JSON.stringify(this.lines)})`);
  }

  /** SIGTERMs etcdctl (a campaigner resigns, an observer stops) and resolves its exit code. */
  async stop(ms: number): Promise<number | null> {
    if (!this.exitedAlready && this.#child.pid !== undefined) process.kill(this.#child.pid, 'SIGTERM');
    return bounded(this.#exited, ms, 'etcdctl to exit');
  }

  /** SIGKILLs etcdctl: no resignation, its key lives as long as its session lease. */
  kill(): Promise<void> {
    return killChild(this.#child, this.#exited);
  }
}

/** SIGKILLs one etcdctl process we started (by its PID) and resolves once it exited. */
async function killChild(child: ChildProcess, exited: Promise<unknown>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  if (child.pid !== undefined) process.kill(child.pid, 'SIGKILL');
  await bounded(exited, 5_000, 'etcdctl to die');
}

function bounded<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
