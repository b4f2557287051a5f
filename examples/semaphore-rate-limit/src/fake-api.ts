/**
 * A stand-in for a partner's rate-limited HTTP API, on 127.0.0.1: it allows `cap` requests in flight
 * at once and refuses one more with 429, as such APIs do. It counts what it saw (the most requests
 * in flight at once, the refusals) so the example can show that the semaphore kept every worker
 * process under the cap.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** The header a caller sends its permit's fencing token in. */
export const TOKEN_HEADER = 'x-fencing-token';

/** Options of {@link startFakeApi}. */
export interface FakeApiOptions {
  /** Requests allowed in flight at once; one more is refused with 429. */
  readonly cap: number;
  /** How long the API takes to answer an accepted request, in ms. */
  readonly latencyMs: number;
  /**
   * When given, an accepted request is answered once this resolves instead of after `latencyMs`
   * (tests hold requests in flight with it).
   */
  readonly answerWhen?: () => Promise<void>;
}

/** One accepted call, as the API logged it. */
export interface ApiCall {
  /** The fencing token of the permit the caller held. */
  readonly token: bigint;
  /** Requests in flight when it arrived, itself included. */
  readonly inFlight: number;
}

/** A running fake API. */
export interface FakeApi {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** Requests in flight now. */
  inFlight(): number;
  /** The most requests it ever had in flight at once. */
  maxInFlight(): number;
  /** Requests refused with 429 (over the cap) or 400 (no token). */
  refused(): number;
  /** Accepted calls, in arrival order. */
  calls(): readonly ApiCall[];
  close(): Promise<void>;
}

/** Starts the API on a free loopback port. */
export async function startFakeApi(options: FakeApiOptions): Promise<FakeApi> {
  let inFlight = 0;
  let maxInFlight = 0;
  let refused = 0;
  const calls: ApiCall[] = [];
  const answer = (response: ServerResponse, status: number, body: object): void => {
    response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  };
  const handle = (request: IncomingMessage, response: ServerResponse): void => {
    const header = request.headers[TOKEN_HEADER];
    // Every caller must say which permit it holds: a call without one went around the semaphore.
    if (typeof header !== 'string' || !/^\d+$/.test(header)) {
      refused += 1;
      answer(response, 400, { error: `missing ${TOKEN_HEADER}` });
      return;
    }
    if (inFlight >= options.cap) {
      refused += 1;
      answer(response, 429, { error: `more than ${options.cap} requests in flight` });
      return;
    }
    inFlight += 1;
    maxInFlight = Math.max(maxInFlight, inFlight);
    calls.push({ token: BigInt(header), inFlight });
    const done = (): void => {
      inFlight -= 1;
      answer(response, 200, { ok: true });
    };
    if (options.answerWhen !== undefined) void options.answerWhen().then(done);
    else setTimeout(done, options.latencyMs);
  };
  const server = createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    inFlight: () => inFlight,
    maxInFlight: () => maxInFlight,
    refused: () => refused,
    calls: () => [...calls],
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
