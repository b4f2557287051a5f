import { createHash } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import type { RedisLockScript } from './redis-lock-script.js';

/** Arguments of a script call: the number of keys first, then the keys, then ARGV. */
export type ScriptArgument = string | number;

/**
 * Sends `evalsha` or `eval` with `args` — the SHA or the script, then the call's arguments as one
 * array, which ioredis flattens (arguments may be arrays) — and resolves the reply as text: a way
 * for an adapter to send the commands itself (with its own timeouts). Without one, the client's
 * `evalsha` and `eval` methods are used, with the same arguments.
 */
export type ScriptCommandSender = (name: 'evalsha' | 'eval', args: [string, readonly ScriptArgument[]]) => Promise<unknown>;

/**
 * One script on one client, as ioredis' `defineCommand` runs it: the script itself (EVAL, which loads
 * it) until a call on the current connection succeeded, then EVALSHA. When a call fails, `runAgain`
 * sends it again as EVAL if the server did not know the script (NOSCRIPT: a restarted or flushed
 * server, a cluster node that never ran it) and rejects with the failure otherwise.
 *
 * `defineCommand` costs a large share of an uncontended acquire on each call: the arguments copied
 * three times, a promise and two closures for its NOSCRIPT handling whether or not it is needed. Here
 * the fallback lives in the caller's own failure path, which it has anyway.
 */
export class ScriptRunner {
  /** The script's SHA-1, as EVALSHA names it. */
  readonly sha: string;
  readonly #client: Redis | Cluster;
  readonly #lua: string;
  readonly #send: ScriptCommandSender | undefined;
  // The connection on which a call last succeeded (the cluster client as a whole): EVALSHA there.
  #loadedOn: object | undefined;

  constructor(client: Redis | Cluster, script: RedisLockScript, send?: ScriptCommandSender) {
    this.#client = client;
    this.#lua = script.lua;
    this.#send = send;
    this.sha = scriptSha(script.lua);
  }

  /** Runs the script with `args` (number of keys first). */
  run(args: readonly ScriptArgument[]): Promise<unknown> {
    const connection = connectionOf(this.#client);
    if (connection !== undefined && connection === this.#loadedOn) return this.#evalsha(args);
    // A connection that may not know the script yet (a new one, or a paused server whose EVALSHA
    // would time out and later fail): the script itself, so that the call runs whenever it arrives.
    return this.#eval(args).then((reply) => {
      this.#loadedOn = connection;
      return reply;
    });
  }

  /** After `run` failed with `error`: EVAL with the same `args` on NOSCRIPT, else a rejection with `error`. */
  runAgain(error: unknown, args: readonly ScriptArgument[]): Promise<unknown> {
    if (!isNoScriptError(error)) return Promise.reject(error);
    this.#loadedOn = undefined;
    return this.run(args);
  }

  // The arguments travel as one array after the SHA (or script): ioredis flattens it once, into the
  // command, where spreading them would copy them once more on the way.
  #evalsha(args: readonly ScriptArgument[]): Promise<unknown> {
    if (this.#send !== undefined) return this.#send('evalsha', [this.sha, args]);
    return (this.#client.evalsha as unknown as ArrayCommand).call(this.#client, this.sha, args);
  }

  #eval(args: readonly ScriptArgument[]): Promise<unknown> {
    if (this.#send !== undefined) return this.#send('eval', [this.#lua, args]);
    return (this.#client.eval as unknown as ArrayCommand).call(this.#client, this.#lua, args);
  }
}

// A command method called with its arguments as one array (its typings list them one by one).
type ArrayCommand = (first: string, args: readonly ScriptArgument[]) => Promise<unknown>;

// What a loaded script is known on: the socket of a `Redis` (a reconnect may reach a restarted
// server), the `Cluster` as a whole (a node without the script answers NOSCRIPT, handled by `runAgain`).
function connectionOf(client: Redis | Cluster): object | undefined {
  if (client.isCluster) return client;
  return (client as Redis).stream ?? undefined;
}

const shas = new Map<string, string>();

/** The SHA-1 of `lua`, as the server computes it (hex). */
export function scriptSha(lua: string): string {
  let sha = shas.get(lua);
  if (sha === undefined) {
    sha = createHash('sha1').update(lua).digest('hex');
    shas.set(lua, sha);
  }
  return sha;
}

/** Whether `error` is the server's NOSCRIPT reply (it does not have the script in its cache). */
export function isNoScriptError(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}
