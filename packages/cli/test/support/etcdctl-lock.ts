import { spawn, type ChildProcess } from 'node:child_process';
import { withTimeout } from '@fencelock/test-infra';

/**
 * The real `etcdctl lock NAME` (etcd's Go `concurrency.Mutex`, from Debian's etcd-client) as a peer.
 * Without a command, etcdctl prints the key it holds (`NAME/<lease hex>`) once it has the lock and
 * keeps it until SIGINT, on which it unlocks and exits 0. Only this process is signalled, by PID.
 */
export class EtcdctlLock {
  readonly #child: ChildProcess;
  readonly #exited: Promise<number | null>;
  readonly #held: Promise<string>;
  #stdout = '';
  #stderr = '';
  /** The lock name, as etcdctl was given it. */
  readonly name: string;

  /** Starts `etcdctl lock NAME`; its session lease lives `ttlSeconds` after etcdctl dies. */
  constructor(endpoints: readonly string[], name: string, ttlSeconds = 5) {
    this.name = name;
    this.#child = spawn('etcdctl', [`--endpoints=${endpoints.join(',')}`, 'lock', `--ttl=${ttlSeconds}`, name], {
      env: { ...process.env, ETCDCTL_API: '3' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.#child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (this.#stderr += chunk));
    this.#exited = new Promise((resolve) => this.#child.once('close', (code) => resolve(code)));
    this.#held = new Promise((resolve, reject) => {
      this.#child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
        this.#stdout += chunk;
        const key = this.heldKey;
        if (key !== undefined) resolve(key);
      });
      void this.#exited.then((code) => reject(new Error(`etcdctl exited (${String(code)}) before holding ${name}: ${this.#stdout} ${this.#stderr}`)));
    });
    this.#held.catch(() => undefined);
  }

  /** The key etcdctl holds, once it holds the lock. */
  get heldKey(): string | undefined {
    return this.#stdout.split('\n').find((line) => line.startsWith(`${this.name}/`));
  }

  /** Resolves etcdctl's own key once it holds the lock (bounded). */
  held(timeoutMs = 20_000): Promise<string> {
    return withTimeout(this.#held, timeoutMs, `etcdctl to hold ${this.name}`);
  }

  /** SIGINT: etcdctl unlocks and exits; resolves its exit status (bounded). */
  async unlock(timeoutMs = 10_000): Promise<number | null> {
    if (this.#running()) this.#child.kill('SIGINT');
    return withTimeout(this.#exited, timeoutMs, 'etcdctl to unlock and exit');
  }

  /** SIGKILL, for cleanup: the lock then lives until the session lease expires. */
  async kill(): Promise<void> {
    if (this.#running()) this.#child.kill('SIGKILL');
    await withTimeout(this.#exited, 5_000, 'etcdctl to die');
  }

  #running(): boolean {
    return this.#child.exitCode === null && this.#child.signalCode === null;
  }
}
