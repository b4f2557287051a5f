/**
 * A raw PostgreSQL readiness probe, the check `pg_isready` makes: send a startup message and read
 * the first reply, so readiness checks need neither psql nor a client library.
 */
import net from 'node:net';
import { assertLoopbackHost } from './loopback.js';
import { LOOPBACK } from './ports.js';

/** What a PostgreSQL server answered to a startup message. */
export interface PostgresProbeResult {
  /**
   * True when the server takes connections: it asked for (or skipped) authentication, or refused
   * this user or database — anything but "the database system is starting up / shutting down".
   */
  readonly accepting: boolean;
  /** Short text for the status table ("accepting connections", "starting up (57P03)"…). */
  readonly detail: string;
}

/** Options of {@link postgresProbe}. */
export interface PostgresProbeOptions {
  /** A loopback host. Default 127.0.0.1. */
  readonly host?: string;
  /** The user named in the startup message. Default `postgres`. */
  readonly user?: string;
  /** The database named in the startup message. Default `postgres`. */
  readonly database?: string;
  /** Give up (and close the socket) after this long. Default 1000 ms. */
  readonly timeoutMs?: number;
}

// Protocol 3.0 (PostgreSQL's frontend/backend protocol, "StartupMessage").
const PROTOCOL_VERSION_3 = 196_608;
// SQLSTATE cannot_connect_now: starting up, shutting down, or in recovery without hot standby.
const CANNOT_CONNECT_NOW = '57P03';

/** The startup message: length, protocol version, then `name\0value\0` pairs and a final `\0`. */
function startupMessage(user: string, database: string): Buffer {
  const pairs = Buffer.from(`user\0${user}\0database\0${database}\0application_name\0fencelock-test-infra\0\0`, 'utf8');
  const head = Buffer.alloc(8);
  head.writeInt32BE(8 + pairs.length, 0);
  head.writeInt32BE(PROTOCOL_VERSION_3, 4);
  return Buffer.concat([head, pairs]);
}

/** The fields of an ErrorResponse body, by their one-letter codes (`C` = SQLSTATE, `M` = message). */
function errorFields(body: Buffer): Map<string, string> {
  const fields = new Map<string, string>();
  let offset = 0;
  // Bounded by the body length: every field consumes at least one byte.
  while (offset < body.length && body[offset] !== 0) {
    const code = String.fromCharCode(body[offset] ?? 0);
    const end = body.indexOf(0, offset + 1);
    if (end < 0) break;
    fields.set(code, body.toString('utf8', offset + 1, end));
    offset = end + 1;
  }
  return fields;
}

/**
 * Sends a startup message to PostgreSQL on `host` (default 127.0.0.1):`port` and reports whether
 * the server takes connections. Resolves `undefined` when nothing answers in time. Never throws for
 * a server that is down.
 */
export function postgresProbe(port: number, options: PostgresProbeOptions = {}): Promise<PostgresProbeResult | undefined> {
  const host = options.host ?? LOOPBACK;
  assertLoopbackHost(host, 'host');
  return new Promise((resolve) => {
    let received = Buffer.alloc(0);
    const socket = net.connect({ host, port });
    let settled = false;
    const done = (result: PostgresProbeResult | undefined): void => {
      if (settled) return;
      settled = true;
      // Terminate ('X'): leave politely if the server already started a session for us.
      if (socket.writable) socket.end(Buffer.from([0x58, 0, 0, 0, 4]));
      socket.destroy();
      resolve(result);
    };
    socket.setTimeout(options.timeoutMs ?? 1_000, () => done(undefined));
    socket.once('error', () => done(undefined));
    socket.once('close', () => done(undefined));
    socket.once('connect', () => socket.write(startupMessage(options.user ?? 'postgres', options.database ?? 'postgres')));
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (received.length < 5) return;
      const length = received.readInt32BE(1);
      if (received.length < 1 + length) return;
      const type = String.fromCharCode(received[0] ?? 0);
      const body = received.subarray(5, 1 + length);
      if (type === 'R') {
        done({ accepting: true, detail: body.readInt32BE(0) === 0 ? 'accepting connections' : 'accepting connections (password)' });
      } else if (type === 'E') {
        const fields = errorFields(body);
        const code = fields.get('C') ?? '?';
        const starting = code === CANNOT_CONNECT_NOW;
        done({ accepting: !starting, detail: `${starting ? 'not accepting yet' : 'answers'} (${code}: ${fields.get('M') ?? ''})` });
      } else {
        done({ accepting: false, detail: `unexpected reply ${JSON.stringify(type)}` });
      }
    });
  });
}
