/**
 * A one-shot Redis request over a raw socket (RESP2), so readiness checks and tests need
 * neither redis-cli nor a client library.
 */
import net from 'node:net';
import { assertLoopbackHost } from './loopback.js';
import { LOOPBACK } from './ports.js';

/** A decoded RESP2 reply. Errors (`-ERR …`) are thrown as {@link RedisReplyError} instead. */
export type RespReply = string | number | null | RespReply[];

/** The server answered with an error reply. */
export class RedisReplyError extends Error {
  override readonly name = 'RedisReplyError';
}

/** Options of {@link redisCommand}. */
export interface RedisCommandOptions {
  /** Give up (and close the socket) after this long. Default 2000 ms. */
  readonly timeoutMs?: number;
  /** A loopback host. Default 127.0.0.1. */
  readonly host?: string;
}

/**
 * Sends one command to Redis on `host` (default 127.0.0.1):`port` and resolves with its decoded reply.
 *
 * @example `await redisCommand(port, ['SET', 'k', 'v'])` → `'OK'`
 */
export function redisCommand(port: number, args: readonly string[], options: RedisCommandOptions = {}): Promise<RespReply> {
  const timeoutMs = options.timeoutMs ?? 2_000;
  const host = options.host ?? LOOPBACK;
  assertLoopbackHost(host, 'redisCommand');
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host, port });
    let buffer = Buffer.alloc(0);
    let settled = false;
    const finish = (error: Error | undefined, reply?: RespReply): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (error) reject(error);
      else resolve(reply ?? null);
    };
    const timer = setTimeout(
      () => finish(new Error(`redis ${host}:${port} did not answer ${args[0] ?? ''} within ${timeoutMs} ms`)),
      timeoutMs,
    );
    socket.once('error', (error) => finish(error));
    socket.once('close', () => finish(new Error(`redis ${host}:${port} closed the connection before replying`)));
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      try {
        const parsed = parseReply(buffer, 0);
        if (parsed) finish(undefined, parsed.value);
      } catch (error) {
        finish(error as Error);
      }
    });
    socket.write(encodeCommand(args));
  });
}

/** Encodes a command as a RESP array of bulk strings. */
export function encodeCommand(args: readonly string[]): Buffer {
  const parts = [`*${args.length}\r\n`];
  for (const arg of args) parts.push(`$${Buffer.byteLength(arg)}\r\n${arg}\r\n`);
  return Buffer.from(parts.join(''));
}

interface Parsed {
  readonly value: RespReply;
  readonly end: number;
}

/** Parses one reply starting at `offset`; undefined when more bytes are needed. */
function parseReply(buffer: Buffer, offset: number): Parsed | undefined {
  const lineEnd = buffer.indexOf('\r\n', offset);
  if (lineEnd < 0) return undefined;
  const type = String.fromCharCode(buffer[offset] ?? 0);
  const line = buffer.toString('utf8', offset + 1, lineEnd);
  const next = lineEnd + 2;
  switch (type) {
    case '+':
      return { value: line, end: next };
    case '-':
      throw new RedisReplyError(line);
    case ':':
      return { value: Number(line), end: next };
    case '$': {
      const length = Number(line);
      if (length < 0) return { value: null, end: next };
      if (buffer.length < next + length + 2) return undefined;
      return { value: buffer.toString('utf8', next, next + length), end: next + length + 2 };
    }
    case '*': {
      const count = Number(line);
      if (count < 0) return { value: null, end: next };
      const items: RespReply[] = [];
      let position = next;
      for (let i = 0; i < count; i += 1) {
        const item = parseReply(buffer, position);
        if (!item) return undefined;
        items.push(item.value);
        position = item.end;
      }
      return { value: items, end: position };
    }
    default:
      throw new Error(`unexpected RESP reply type ${JSON.stringify(type)}`);
  }
}
