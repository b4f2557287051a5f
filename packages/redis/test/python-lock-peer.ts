import { SYSTEM_PYTHON } from '@fencelock/test-infra';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';

// A redis-py `Lock` driven line by line over stdin/stdout: the real Python recipe, not a copy of it.
const PEER = `
import sys, json, redis
from redis.lock import Lock
client = redis.Redis(host=sys.argv[1], port=int(sys.argv[2]))
locks = {}
print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    request = json.loads(line)
    op, name = request["op"], request.get("name")
    try:
        if op == "acquire":
            lock = Lock(client, name, timeout=request["ttlMs"] / 1000.0)
            ok = lock.acquire(blocking=False)
            if ok:
                locks[name] = lock
            reply = {"ok": ok, "token": lock.local.token.decode() if ok else None}
        elif op == "release":
            lock = locks.pop(name)
            lock.release()
            reply = {"ok": True}
        elif op == "exit":
            print(json.dumps({"ok": True}), flush=True)
            break
        else:
            reply = {"error": "unknown op " + op}
    except Exception as error:
        reply = {"error": repr(error)}
    print(json.dumps(reply), flush=True)
`;

interface PeerReply {
  readonly ok?: boolean;
  readonly token?: string | null;
  readonly error?: string;
}

/** A running redis-py lock peer. */
export class PythonLockPeer {
  readonly #child: ChildProcessWithoutNullStreams;
  readonly #replies: PeerReply[] = [];
  readonly #waiting: ((reply: PeerReply) => void)[] = [];

  private constructor(child: ChildProcessWithoutNullStreams) {
    this.#child = child;
    createInterface({ input: child.stdout }).on('line', (line) => {
      const reply = JSON.parse(line) as PeerReply;
      const next = this.#waiting.shift();
      if (next) next(reply);
      else this.#replies.push(reply);
    });
  }

  /** Starts `python3` with redis-py against `host:port` and waits (≤ 10 s) until it is ready. */
  static async start(host: string, port: number): Promise<PythonLockPeer> {
    const child = spawn(SYSTEM_PYTHON, ['-c', PEER, host, String(port)], { stdio: ['pipe', 'pipe', 'pipe'] });
    const peer = new PythonLockPeer(child);
    await peer.#next(10_000);
    return peer;
  }

  /** `Lock(name, timeout=ttl).acquire(blocking=False)`: whether it got the lock, and its token. */
  async acquire(name: string, ttlMs: number): Promise<{ ok: boolean; token: string | undefined }> {
    const reply = await this.#request({ op: 'acquire', name, ttlMs });
    return { ok: reply.ok === true, token: reply.token ?? undefined };
  }

  /** Releases the lock this peer holds on `name`. */
  async release(name: string): Promise<void> {
    await this.#request({ op: 'release', name });
  }

  /** Ends the Python process (killing it if it does not exit within 5 s). */
  async stop(): Promise<void> {
    if (this.#child.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => this.#child.once('exit', () => resolve()));
    this.#child.stdin.end(`${JSON.stringify({ op: 'exit' })}\n`);
    const timer = setTimeout(() => this.#child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  }

  async #request(request: Record<string, unknown>): Promise<PeerReply> {
    this.#child.stdin.write(`${JSON.stringify(request)}\n`);
    const reply = await this.#next(10_000);
    if (reply.error !== undefined) throw new Error(`redis-py peer: ${reply.error}`);
    return reply;
  }

  #next(timeoutMs: number): Promise<PeerReply> {
    const queued = this.#replies.shift();
    if (queued) return Promise.resolve(queued);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`redis-py peer did not answer within ${timeoutMs} ms`)), timeoutMs);
      this.#waiting.push((reply) => {
        clearTimeout(timer);
        resolve(reply);
      });
    });
  }
}
