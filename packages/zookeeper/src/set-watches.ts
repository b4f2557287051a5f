/**
 * Watches restored in requests the server accepts, however many there are.
 *
 * When node-zookeeper-client reconnects within a session it re-registers every watch it holds in ONE
 * SetWatches request. Every held lock watches its own node, so 10,000 held locks make that request
 * about 1 MB, and past the server's `jute.maxbuffer` (1 MB by default) the server drops the
 * connection instead of answering — again at every reconnection, until the session expires and every
 * lock with it (measured: 12,000 held locks, 186 dropped connections in 8 s). The Java client sends
 * its watches in requests of at most 128 KB of paths (ZOOKEEPER-706); `restoreWatchesInParts` makes
 * node-zookeeper-client do the same. Same paths, same relative zxid, same order, several requests.
 *
 * It works on the client's internals (its ConnectionManager and jute records) and changes nothing
 * when they are not what it expects.
 */
import type { Client } from 'node-zookeeper-client';

// As the Java client's ClientCnxn.SET_WATCHES_MAX_LENGTH.
const SET_WATCHES_MAX_BYTES = 128 * 1024;
// ZooKeeper's opcode of SetWatches.
const SET_WATCHES = 101;

interface JuteHeader {
  xid: number;
  type: number;
}

interface JuteRequest {
  readonly header: JuteHeader | null;
  readonly payload: unknown;
}

interface SetWatchesRecord {
  readonly relativeZxid: Buffer;
  readonly dataWatches: readonly string[];
  readonly existWatches: readonly string[];
  readonly childWatches: readonly string[];
}

type Queue = (this: Manager, request: JuteRequest, callback?: unknown) => void;

interface Manager {
  queue?: Queue;
  onSocketConnected?: (this: Manager) => void;
}

type Kind = 'dataWatches' | 'existWatches' | 'childWatches';
const KINDS: readonly Kind[] = ['dataWatches', 'existWatches', 'childWatches'];

const patched = new WeakSet<Manager>();

/** `request` as SetWatches requests of at most {@link SET_WATCHES_MAX_BYTES} of paths each (itself when it is small). */
export function splitSetWatches(request: JuteRequest, maxBytes = SET_WATCHES_MAX_BYTES): JuteRequest[] {
  const { header, payload } = request;
  if (header === null || header.type !== SET_WATCHES || typeof payload !== 'object' || payload === null) return [request];
  const watches = payload as SetWatchesRecord;
  if (!KINDS.every((kind) => Array.isArray(watches[kind]))) return [request];
  const sizeOf = (path: string): number => 4 + Buffer.byteLength(path);
  const total = KINDS.reduce((sum, kind) => sum + watches[kind].reduce((size, path) => size + sizeOf(path), 0), 0);
  if (total <= maxBytes) return [request];
  // The classes of the records at hand: jute's Request, RequestHeader and SetWatches.
  const RequestClass = request.constructor as new (header: JuteHeader, payload: unknown) => JuteRequest;
  const HeaderClass = header.constructor as new () => JuteHeader;
  const SetWatchesClass = payload.constructor as new (relativeZxid: Buffer, data: string[], exist: string[], child: string[]) => unknown;
  const parts: JuteRequest[] = [];
  let part: Record<Kind, string[]> = { dataWatches: [], existWatches: [], childWatches: [] };
  let size = 0;
  const flush = (): void => {
    // A header each: the client numbers every request it sends in its header.
    const partHeader = new HeaderClass();
    partHeader.type = header.type;
    partHeader.xid = header.xid;
    parts.push(new RequestClass(partHeader, new SetWatchesClass(watches.relativeZxid, part.dataWatches, part.existWatches, part.childWatches)));
    part = { dataWatches: [], existWatches: [], childWatches: [] };
    size = 0;
  };
  for (const kind of KINDS) {
    for (const path of watches[kind]) {
      if (size > 0 && size + sizeOf(path) > maxBytes) flush();
      part[kind].push(path);
      size += sizeOf(path);
    }
  }
  if (size > 0) flush();
  return parts;
}

/** Makes `client` restore its watches at reconnection in parts the server accepts (see the module comment). Idempotent. */
export function restoreWatchesInParts(client: Client): void {
  const manager = (client as unknown as { connectionManager?: Manager }).connectionManager;
  if (manager === undefined || patched.has(manager)) return;
  const connected = manager.onSocketConnected;
  if (typeof connected !== 'function' || typeof manager.queue !== 'function') return;
  patched.add(manager);
  // The client binds this method to each new socket's 'connect' event; it queues the SetWatches.
  manager.onSocketConnected = function (this: Manager): void {
    const queue = this.queue;
    if (typeof queue !== 'function') {
      connected.call(this);
      return;
    }
    this.queue = function (this: Manager, request: JuteRequest, callback?: unknown): void {
      for (const part of splitSetWatches(request)) queue.call(this, part, callback);
    };
    try {
      connected.call(this);
    } finally {
      this.queue = queue;
    }
  };
}
