import { type FencedWriteRecord, parseFencedWriteLog } from './fenced-write.js';
import { LOOPBACK_HOSTS } from './fenced-store.js';

/** A write through the fenced store. */
export interface FencedWriteRequest {
  readonly key: string;
  /** The writer's fencing token. */
  readonly token: bigint;
  /** The writer's proc id, for the log. */
  readonly proc: string;
  /** The value to append. */
  readonly value?: string;
}

/** The store's answer to a write. */
export interface FencedWriteResult {
  /** False when the token was older than the highest the store had accepted for the key. */
  readonly accepted: boolean;
  /** The highest token accepted for the key after this write. */
  readonly highestToken: bigint | null;
}

/** A client of a fenced store started by `startFencedStore`. */
export interface FencedStoreClient {
  write(request: FencedWriteRequest): Promise<FencedWriteResult>;
  /** The values accepted for `key`, in order. */
  read(key: string): Promise<readonly string[]>;
  /** The store's whole write log. */
  log(): Promise<FencedWriteRecord[]>;
}

/** Options of {@link createFencedStoreClient}. */
export interface FencedStoreClientOptions {
  /** Per-request time limit, in ms. A timed-out write is indeterminate: record it as `info`. @default 5_000 */
  readonly timeoutMs?: number;
}

function toBigint(value: unknown): bigint | null {
  return typeof value === 'string' ? BigInt(value) : null;
}

/**
 * A client for the fenced store at `url` (loopback only). Rejects on transport errors, time-outs and
 * answers other than 200/409; a refused stale write resolves with `accepted: false`.
 */
export function createFencedStoreClient(url: string, options: FencedStoreClientOptions = {}): FencedStoreClient {
  const base = new URL(url);
  const hostname = base.hostname.replace(/^\[(.*)\]$/, '$1');
  if (!LOOPBACK_HOSTS.has(hostname)) throw new RangeError(`the fenced store must be on loopback, not "${base.hostname}"`);
  const timeoutMs = options.timeoutMs ?? 5_000;
  const request = async (path: string, init: RequestInit = {}): Promise<Response> => {
    const response = await fetch(new URL(path, base), { ...init, signal: AbortSignal.timeout(timeoutMs) });
    if (response.status !== 200 && response.status !== 409) {
      throw new Error(`fenced store answered ${response.status}: ${await response.text()}`);
    }
    return response;
  };
  return {
    async write(write) {
      const body = JSON.stringify({ key: write.key, token: write.token.toString(), proc: write.proc, value: write.value });
      const response = await request('/write', { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      const json = (await response.json()) as Readonly<Record<string, unknown>>;
      return { accepted: json['accepted'] === true, highestToken: toBigint(json['highestToken']) };
    },
    async read(key) {
      const response = await request(`/read?key=${encodeURIComponent(key)}`);
      const json = (await response.json()) as Readonly<Record<string, unknown>>;
      const values = json['values'];
      return Array.isArray(values) ? values.filter((value): value is string => typeof value === 'string') : [];
    },
    async log() {
      const response = await request('/log');
      return parseFencedWriteLog(await response.text());
    },
  };
}
