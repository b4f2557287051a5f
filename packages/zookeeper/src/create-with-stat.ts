/**
 * ZooKeeper's CREATE2: a create whose reply carries the new node's stat, so its czxid (the fencing
 * token) comes with the create itself instead of from a read of its own.
 *
 * node-zookeeper-client (1.x) has no CREATE2, and its reply parser closes the connection on an opcode
 * it does not know. The request is a CREATE's (same record: path, data, ACL, flags) sent with opcode
 * 15, and the client parses the reply as a GET_DATA's: CREATE2's reply (a path, then a stat) and
 * GET_DATA's (a buffer, then a stat) are the same bytes, a 4-byte length, the bytes, the stat. So the
 * request's header says CREATE2 until the request is written to the socket, and GET_DATA from then
 * on, when the client matches the reply to it. An error reply is parsed as for any request.
 *
 * ZooKeeper has CREATE2 since 3.5.0. It works on the client's internals (its ConnectionManager and
 * jute records, as `set-watches.ts` does); when they are not what it expects, {@link createWithStat}
 * is `undefined` for that client and the caller creates without a stat.
 */
import { createRequire } from 'node:module';
import type { ACL, Client, Exception, Stat } from 'node-zookeeper-client';

// ZooKeeper's opcodes.
const CREATE2 = 15;
const GET_DATA = 4;

interface JuteRecord {
  chrootPath?: string;
}
interface JuteHeader extends JuteRecord {
  type: number;
  xid: number;
}
interface CreateRecord extends JuteRecord {
  path: string;
  data: Buffer | undefined;
  acl: unknown[];
  flags: number;
}
interface JuteRequest {
  readonly header: JuteHeader;
  readonly payload: CreateRecord;
  toBuffer(): Buffer;
}
interface GetDataReply {
  readonly payload: { readonly data: Buffer | null | undefined; readonly stat: Stat | undefined } | null;
}
interface Jute {
  readonly protocol: {
    readonly RequestHeader: new () => JuteHeader;
    readonly CreateRequest: new () => CreateRecord;
  };
  readonly Request: new (header: JuteHeader, payload: CreateRecord) => JuteRequest;
}
interface Manager {
  readonly chrootPath?: string;
  queue(request: JuteRequest, callback: (error: Exception | Error | null, reply: GetDataReply | undefined) => void): void;
}
interface AclInternals {
  toRecord(): unknown;
}
interface Internals {
  readonly connectionManager?: Manager;
}

/** Called with the created node's path (as the caller named it, without a chroot) and its stat. */
export type CreatedCallback = (error: Exception | Error | null, path: string, stat: Stat | undefined) => void;

/** Sends one CREATE2 on the client's connection (see the module comment). */
export type CreateWithStat = (path: string, data: Buffer | undefined, acl: readonly ACL[], mode: number, callback: CreatedCallback) => void;

let jute: Jute | null | undefined;

function loadJute(): Jute | undefined {
  if (jute === undefined) {
    try {
      const loaded = createRequire(import.meta.url)('node-zookeeper-client/lib/jute/index.js') as Partial<Jute>;
      const fits =
        typeof loaded.Request === 'function' &&
        typeof loaded.protocol?.RequestHeader === 'function' &&
        typeof loaded.protocol.CreateRequest === 'function' &&
        typeof loaded.Request.prototype.toBuffer === 'function';
      jute = fits ? (loaded as Jute) : null;
    } catch {
      jute = null;
    }
  }
  return jute ?? undefined;
}

/** CREATE2 on `client`'s connection, or `undefined` when its internals are not what this module knows. */
export function createWithStatOn(client: Client): CreateWithStat | undefined {
  const manager = (client as unknown as Internals).connectionManager;
  const records = loadJute();
  if (records === undefined || typeof manager?.queue !== 'function') return undefined;
  const { RequestHeader, CreateRequest } = records.protocol;
  return (path, data, acl, mode, callback) => {
    const header = new RequestHeader();
    header.type = CREATE2;
    const payload = new CreateRequest();
    payload.path = path;
    // Each ACL as its jute record, as the client's own create does.
    payload.acl = acl.map((entry) => (entry as unknown as AclInternals).toRecord());
    payload.flags = mode;
    payload.data = data;
    const request = new records.Request(header, payload);
    // Written as CREATE2; its reply, which can only come after that, is parsed as GET_DATA's.
    const toBuffer = request.toBuffer;
    request.toBuffer = function (this: JuteRequest): Buffer {
      header.type = CREATE2;
      const bytes = toBuffer.call(this);
      header.type = GET_DATA;
      return bytes;
    };
    manager.queue(request, (error, reply) => {
      if (error !== null) {
        callback(error, '', undefined);
        return;
      }
      const created = reply?.payload?.data?.toString('utf8');
      const stat = reply?.payload?.stat;
      if (created === undefined || stat === undefined) {
        callback(new Error('ZooKeeper answered a create without the created path and its stat'), '', undefined);
        return;
      }
      const chroot = manager.chrootPath;
      callback(null, chroot !== undefined && chroot !== '' && created.startsWith(chroot) ? created.slice(chroot.length) || '/' : created, stat);
    });
  };
}
