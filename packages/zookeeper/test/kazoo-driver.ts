// Test helper: kazoo `Lock` objects in one Python process (Debian's python3-kazoo), driven line by
// line, so that a test can reuse one long-lived `Lock` object the way a kazoo service does (kazoo
// creates the lock's parent znode once per object, on its first acquire).
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { SYSTEM_PYTHON, withTimeout } from '@fencelock/test-infra';

const DRIVER_SOURCE = `
import json, sys
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1], timeout=10)
zk.start(timeout=15)
locks = {}
print(json.dumps({"ok": "ready"}), flush=True)
for line in sys.stdin:
    command = json.loads(line)
    try:
        op = command["op"]
        if op == "lock":
            locks[command["id"]] = zk.Lock(command["path"], command.get("identifier"))
            result = None
        elif op == "acquire":
            result = locks[command["id"]].acquire(timeout=command["timeout"])
        elif op == "release":
            result = locks[command["id"]].release()
        else:
            raise ValueError("unknown op " + op)
        print(json.dumps({"ok": result}), flush=True)
    except Exception as error:
        print(json.dumps({"error": type(error).__name__, "message": str(error)}), flush=True)
zk.stop()
zk.close()
`;

/** A command's outcome: kazoo's return value, or the name of the exception it raised. */
export type KazooAnswer = { readonly ok: unknown } | { readonly error: string; readonly message: string };

/** One kazoo client in a child process; `close()` it when done. */
export class KazooDriver {
  readonly #child: ChildProcess;
  readonly #answers: KazooAnswer[] = [];
  #waiting: ((answer: KazooAnswer) => void) | undefined;
  #stderr = '';
  #nextId = 0;

  private constructor(child: ChildProcess) {
    this.#child = child;
    child.stderr?.on('data', (chunk: Buffer) => {
      this.#stderr = (this.#stderr + chunk.toString('utf8')).slice(-4_000);
    });
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const answer = JSON.parse(line) as KazooAnswer;
      const waiting = this.#waiting;
      this.#waiting = undefined;
      if (waiting === undefined) this.#answers.push(answer);
      else waiting(answer);
    });
  }

  /** Starts the process and waits (≤ 20 s) for its client to connect. */
  static async start(connectionString: string): Promise<KazooDriver> {
    const driver = new KazooDriver(spawn(SYSTEM_PYTHON, ['-c', DRIVER_SOURCE, connectionString], { stdio: ['pipe', 'pipe', 'pipe'] }));
    const ready = await driver.#next(20_000, 'the kazoo client to connect');
    if (!('ok' in ready)) throw new Error(`kazoo did not start: ${ready.message}`);
    return driver;
  }

  /** A new `Lock(path, identifier)`; resolves its handle for {@link acquire} and {@link release}. */
  async lock(path: string, identifier?: string): Promise<number> {
    const id = this.#nextId;
    this.#nextId += 1;
    const answer = await this.#send({ op: 'lock', id, path, ...(identifier === undefined ? {} : { identifier }) });
    if (!('ok' in answer)) throw new Error(`kazoo Lock(): ${answer.error} ${answer.message}`);
    return id;
  }

  /** `lock.acquire(timeout=…)`: `{ ok: true }` once held, `{ ok: false }` on timeout, or kazoo's exception. */
  acquire(id: number, timeoutSeconds = 10): Promise<KazooAnswer> {
    return this.#send({ op: 'acquire', id, timeout: timeoutSeconds }, (timeoutSeconds + 10) * 1_000);
  }

  /** `lock.release()`. */
  release(id: number): Promise<KazooAnswer> {
    return this.#send({ op: 'release', id });
  }

  /** Ends the process: stdin closed, then SIGKILL if it has not exited within 10 s. */
  async close(): Promise<void> {
    const child = this.#child;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.stdin?.end();
    try {
      await withTimeout(exited, 10_000, 'the kazoo driver to exit');
    } catch {
      child.kill('SIGKILL');
    }
  }

  #send(command: Record<string, unknown>, timeoutMs = 20_000): Promise<KazooAnswer> {
    const answer = this.#next(timeoutMs, `kazoo to answer ${JSON.stringify(command)}`);
    this.#child.stdin?.write(`${JSON.stringify(command)}\n`);
    return answer;
  }

  // Commands are answered one at a time, in order.
  async #next(timeoutMs: number, what: string): Promise<KazooAnswer> {
    const queued = this.#answers.shift();
    if (queued !== undefined) return queued;
    if (this.#waiting !== undefined) throw new Error('one kazoo command at a time');
    const answer = new Promise<KazooAnswer>((resolve) => {
      this.#waiting = resolve;
    });
    try {
      return await withTimeout(answer, timeoutMs, what);
    } catch (error) {
      this.#waiting = undefined;
      throw new Error(`${(error as Error).message}; kazoo stderr: ${this.#stderr}`);
    }
  }
}
