import { closeSync, openSync, writeSync } from 'node:fs';
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { FencingGuard, isLockError } from '@fencelock/core';
import { type FencedWriteRecord, serializeFencedWrite } from './fenced-write.js';
import { monotonicNs } from './mono-clock.js';

/** The loopback addresses a fenced store may listen on. Nothing in the fault suite leaves the host. */
export const LOOPBACK_HOSTS: ReadonlySet<string> = new Set(['127.0.0.1', '::1', 'localhost']);

/** Options of {@link startFencedStore}. */
export interface FencedStoreOptions {
  /** A loopback address. @default '127.0.0.1' */
  readonly host?: string;
  /** The port; 0 picks a free one. @default 0 */
  readonly port?: number;
  /** Also append every write attempt to this JSONL file (one {@link FencedWriteRecord} a line). */
  readonly logPath?: string;
  /** The clock for `t`, ns. @default system-wide monotonic ns */
  readonly now?: () => number;
  /** The largest request body accepted, in bytes. @default 65_536 */
  readonly maxBodyBytes?: number;
}

/** A running fenced store. */
export interface FencedStore {
  /** The base URL, e.g. `http://127.0.0.1:40123`. */
  readonly url: string;
  readonly port: number;
  /** Every write attempt so far, in the order handled. */
  readonly log: readonly FencedWriteRecord[];
  /** The values accepted for `key`, in order. */
  values(key: string): readonly string[];
  /** Stops listening and drops open connections. Idempotent. */
  close(): Promise<void>;
}

class BadRequest extends Error {}

async function readBody(request: IncomingMessage, maxBytes: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
    size += buffer.length;
    if (size > maxBytes) throw new BadRequest(`body larger than ${maxBytes} bytes`);
    chunks.push(buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function sendJson(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(JSON.stringify(body));
}

interface WriteRequest {
  readonly key: string;
  readonly token: bigint;
  readonly proc: string;
  readonly value: string | undefined;
}

function parseWriteRequest(text: string): WriteRequest {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new BadRequest('body is not JSON');
  }
  if (typeof json !== 'object' || json === null) throw new BadRequest('body must be a JSON object');
  const { key, token, proc, value } = json as Readonly<Record<string, unknown>>;
  if (typeof key !== 'string' || typeof proc !== 'string') throw new BadRequest('"key" and "proc" must be strings');
  // Tokens are 64-bit: a JSON number would lose precision, so only decimal strings are taken.
  if (typeof token !== 'string' || !/^-?(0|[1-9][0-9]*)$/.test(token)) throw new BadRequest('"token" must be a decimal string');
  if (value !== undefined && typeof value !== 'string') throw new BadRequest('"value" must be a string');
  return { key, token: BigInt(token), proc, value };
}

/**
 * Starts the reference fenced resource on loopback: an HTTP server around core's {@link FencingGuard}
 * that appends a value per key only when the writer's token is at least the highest it has accepted,
 * and logs every attempt `{t, key, token, proc, accepted}`. The fault suite's clients write through it,
 * so a stale holder's write is refused (and counted) instead of landing.
 *
 * - `POST /write` `{key, token: "<decimal>", proc, value?}` → 200 `{accepted: true, highestToken}` or 409 `{accepted: false, highestToken}`
 * - `GET /read?key=K` → `{key, values, highestToken}`
 * - `GET /log` → the write log as JSONL
 */
export async function startFencedStore(options: FencedStoreOptions = {}): Promise<FencedStore> {
  const host = options.host ?? '127.0.0.1';
  if (!LOOPBACK_HOSTS.has(host)) throw new RangeError(`the fenced store listens on loopback only, not on "${host}"`);
  const now = options.now ?? monotonicNs;
  const maxBodyBytes = options.maxBodyBytes ?? 65_536;
  const guard = new FencingGuard();
  const log: FencedWriteRecord[] = [];
  const values = new Map<string, string[]>();
  let logFile: number | undefined = options.logPath === undefined ? undefined : openSync(options.logPath, 'a');

  const write = (request: WriteRequest): { accepted: boolean; highestToken: string | null } => {
    // The guard checks and records in one synchronous step, so the log order is the decision order.
    const accepted = guard.check(request.key, request.token);
    const record: FencedWriteRecord = {
      t: now(),
      key: request.key,
      token: request.token,
      proc: request.proc,
      accepted,
      ...(request.value === undefined ? {} : { value: request.value }),
    };
    log.push(record);
    if (logFile !== undefined) writeSync(logFile, `${serializeFencedWrite(record)}\n`);
    if (accepted && request.value !== undefined) {
      const list = values.get(request.key);
      if (list === undefined) values.set(request.key, [request.value]);
      else list.push(request.value);
    }
    return { accepted, highestToken: guard.highestToken(request.key)?.toString() ?? null };
  };

  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const url = new URL(request.url ?? '/', 'http://127.0.0.1');
    if (request.method === 'POST' && url.pathname === '/write') {
      const result = write(parseWriteRequest(await readBody(request, maxBodyBytes)));
      sendJson(response, result.accepted ? 200 : 409, result);
      return;
    }
    if (request.method === 'GET' && url.pathname === '/read') {
      const key = url.searchParams.get('key');
      if (key === null) throw new BadRequest('"key" query parameter missing');
      sendJson(response, 200, { key, values: values.get(key) ?? [], highestToken: guard.highestToken(key)?.toString() ?? null });
      return;
    }
    if (request.method === 'GET' && url.pathname === '/log') {
      response.writeHead(200, { 'content-type': 'application/x-ndjson' });
      response.end(log.map((record) => `${serializeFencedWrite(record)}\n`).join(''));
      return;
    }
    sendJson(response, 404, { error: `no route ${request.method ?? ''} ${url.pathname}` });
  };

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      // Bad input (including a key the guard refuses) is the client's fault: 400 with the reason.
      const status = error instanceof BadRequest || isLockError(error) ? 400 : 500;
      if (!response.headersSent) sendJson(response, status, { error: error instanceof Error ? error.message : String(error) });
      else response.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    port,
    log,
    values: (key) => values.get(key) ?? [],
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => {
          if (logFile !== undefined) closeSync(logFile);
          logFile = undefined;
          resolve();
        });
        server.closeAllConnections();
      });
      return closing;
    },
  };
}
