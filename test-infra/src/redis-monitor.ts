/**
 * The commands a Redis server runs, as `MONITOR` streams them, read over a raw socket: a test that
 * must show that a request was NOT sent (or was sent once) counts them, on a server of its own or
 * filtered by its own keys. Script calls show up with the commands the script ran.
 */
import net from 'node:net';
import { randomUUID } from 'node:crypto';
import { assertLoopbackHost } from './loopback.js';
import { LOOPBACK } from './ports.js';
import { encodeCommand, redisCommand } from './resp.js';
import { waitFor } from './wait.js';

/** A running `MONITOR` of one Redis server. */
export interface RedisCommandLog {
  /** Every command seen since the monitor started, each as its arguments (command name first). */
  readonly commands: readonly (readonly string[])[];
  /**
   * Resolves how many commands have been seen once every command the server ran before this call
   * has been seen: it sends a marker (`ECHO`) and waits for it on the stream (at most 5 s).
   */
  seenSoFar(): Promise<number>;
  /** Stops monitoring (closes the socket). */
  close(): void;
}

/** Starts a `MONITOR` of the Redis server on `host` (default 127.0.0.1):`port`; resolves once the server confirmed it. */
export function monitorRedisCommands(port: number, host: string = LOOPBACK): Promise<RedisCommandLog> {
  assertLoopbackHost(host, 'monitorRedisCommands');
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host, port });
    const commands: string[][] = [];
    let pending = '';
    let confirmed = false;
    const log: RedisCommandLog = {
      commands,
      async seenSoFar() {
        const marker = `monitor-marker-${randomUUID()}`;
        await redisCommand(port, ['ECHO', marker], { host });
        await waitFor(async () => (commands.some((args) => args[0]?.toLowerCase() === 'echo' && args[1] === marker) ? true : undefined), {
          timeoutMs: 5_000,
          what: 'the marker on the MONITOR stream',
        });
        return commands.length;
      },
      close: () => socket.destroy(),
    };
    socket.setEncoding('latin1');
    socket.once('error', (error) => {
      if (!confirmed) reject(error);
    });
    socket.on('data', (chunk: string) => {
      pending += chunk;
      let end = pending.indexOf('\r\n');
      while (end >= 0) {
        const line = pending.slice(0, end);
        pending = pending.slice(end + 2);
        end = pending.indexOf('\r\n');
        if (!confirmed) {
          if (line !== '+OK') {
            socket.destroy();
            reject(new Error(`MONITOR on port ${port} answered ${JSON.stringify(line)}`));
            return;
          }
          confirmed = true;
          resolve(log);
          continue;
        }
        if (line.startsWith('+')) commands.push(monitorArguments(line));
      }
    });
    socket.write(encodeCommand(['MONITOR']));
  });
}

/**
 * The arguments of one MONITOR line, `+<time> [<db> <client>] "arg" "arg" …`, unescaped (Redis
 * writes `\"`, `\\`, `\n`, `\r`, `\t`, `\a`, `\b` and `\xHH`), as UTF-8 text.
 */
export function monitorArguments(line: string): string[] {
  const args: string[] = [];
  let index = line.indexOf('] "');
  if (index < 0) return args;
  index += 2;
  while (index < line.length && line[index] === '"') {
    const bytes: number[] = [];
    index += 1;
    while (index < line.length && line[index] !== '"') {
      const char = line[index] as string;
      if (char === '\\') {
        const next = line[index + 1];
        if (next === 'x') {
          bytes.push(Number.parseInt(line.slice(index + 2, index + 4), 16));
          index += 4;
          continue;
        }
        const escaped: Record<string, number> = { n: 10, r: 13, t: 9, a: 7, b: 8, '"': 34, '\\': 92 };
        bytes.push(escaped[next ?? ''] ?? next?.charCodeAt(0) ?? 92);
        index += 2;
        continue;
      }
      bytes.push(char.charCodeAt(0));
      index += 1;
    }
    args.push(Buffer.from(bytes).toString('utf8'));
    // Past the closing quote and the space before the next argument.
    index += 2;
  }
  return args;
}
