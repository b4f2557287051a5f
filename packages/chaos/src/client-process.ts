/** The parent's side of one client process: fork, IPC, SIGSTOP/SIGCONT, kill -9, stop. */
import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { HistoryEventInput } from '@fencelock/history-checker';
import type { ClientMessage, ClientStartConfig } from './protocol.js';

const CLIENT_ENTRY = fileURLToPath(new URL('./client-main.ts', import.meta.url));
/** How long a client may take to load tsx and its adapter and say `ready`, ms. */
const READY_TIMEOUT_MS = 30_000;
const OUTPUT_TAIL_CHARS = 4_000;

/** A forked client. Only ever signals its own child, by the `ChildProcess` handle. */
export class ClientProcess {
  readonly proc: string;
  readonly #child: ChildProcess;
  #output = '';
  #exited = false;
  #paused = false;
  #operations: number | undefined;
  #loopDelayMaxMs: number | undefined;
  readonly #exit: Promise<number | null>;
  readonly #ready: Promise<void>;

  constructor(config: ClientStartConfig, onEvent: (event: HistoryEventInput) => void, onError: (proc: string, message: string) => void) {
    this.proc = config.proc;
    this.#child = fork(CLIENT_ENTRY, [JSON.stringify(config)], {
      execArgv: ['--conditions=@fencelock/source', '--import', 'tsx'],
      serialization: 'advanced',
      silent: true,
    });
    const keep = (chunk: Buffer): void => {
      this.#output = (this.#output + chunk.toString('utf8')).slice(-OUTPUT_TAIL_CHARS);
    };
    this.#child.stdout?.on('data', keep);
    this.#child.stderr?.on('data', keep);
    let markReady: () => void = () => undefined;
    let failReady: (error: Error) => void = () => undefined;
    this.#ready = new Promise<void>((resolve, reject) => {
      markReady = resolve;
      failReady = reject;
    });
    this.#ready.catch(() => undefined);
    const readyTimer = setTimeout(() => failReady(new Error(`client ${this.proc} not ready after ${READY_TIMEOUT_MS} ms:\n${this.#output}`)), READY_TIMEOUT_MS);
    this.#child.on('message', (message: ClientMessage) => {
      switch (message.type) {
        case 'event':
          onEvent(message.event);
          break;
        case 'ready':
          clearTimeout(readyTimer);
          markReady();
          break;
        case 'done':
          this.#operations = message.operations;
          this.#loopDelayMaxMs = message.loopDelayMaxMs;
          break;
        case 'error':
          onError(this.proc, message.message);
          break;
      }
    });
    this.#exit = new Promise((resolve) => {
      this.#child.on('exit', (code) => {
        this.#exited = true;
        clearTimeout(readyTimer);
        failReady(new Error(`client ${this.proc} exited (${String(code)}) before it was ready:\n${this.#output}`));
        resolve(code);
      });
    });
  }

  get alive(): boolean {
    return !this.#exited;
  }

  get paused(): boolean {
    return this.#paused;
  }

  /** What the client printed last (for diagnosing a crash). */
  get output(): string {
    return this.#output;
  }

  /** Operations the client reported when it finished normally. */
  get operations(): number | undefined {
    return this.#operations;
  }

  /** The client's largest event-loop delay, ms, when it finished normally (pauses by the nemesis included). */
  get loopDelayMaxMs(): number | undefined {
    return this.#loopDelayMaxMs;
  }

  ready(): Promise<void> {
    return this.#ready;
  }

  /** SIGSTOP: a GC pause. */
  pause(): void {
    if (this.#exited || this.#paused) return;
    this.#child.kill('SIGSTOP');
    this.#paused = true;
  }

  /** SIGCONT. */
  resume(): void {
    if (this.#exited || !this.#paused) return;
    this.#child.kill('SIGCONT');
    this.#paused = false;
  }

  /** kill -9 (after SIGCONT, so a paused process dies at once); resolves when it has exited. */
  async kill(): Promise<void> {
    if (this.#exited) return;
    this.resume();
    this.#child.kill('SIGKILL');
    await this.#exit;
  }

  /** Asks the client to finish its operation, close its provider and exit; kills it after `graceMs`. Resolves whether it stopped by itself. */
  async stop(graceMs: number): Promise<boolean> {
    if (this.#exited) return true;
    this.resume();
    if (this.#child.connected) this.#child.send({ type: 'stop' });
    let timer: NodeJS.Timeout | undefined;
    const stopped = await Promise.race([this.#exit.then(() => true), new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), graceMs)))]);
    clearTimeout(timer);
    if (!stopped) await this.kill();
    return stopped;
  }
}
