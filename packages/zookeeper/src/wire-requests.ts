/**
 * The requests of a lock's uncontended cycle — CREATE2, GET_CHILDREN2 and DELETE — encoded here in
 * ZooKeeper's protocol (jute) and queued on node-zookeeper-client's connection, whose reply parsing,
 * pending queue, xids, chroot and watches stay the client's.
 *
 * CREATE2 is a create whose reply carries the new node's stat, so its czxid (the fencing token)
 * comes with the create itself instead of from a read of its own. node-zookeeper-client (1.x) has no
 * CREATE2, and its reply parser closes the connection on an opcode it does not know: the bytes say
 * CREATE2 (opcode 15), the request's header says GET_DATA, so the client parses the reply as a
 * GET_DATA's. CREATE2's reply (a path, then a stat) and GET_DATA's (a buffer, then a stat) are the
 * same bytes: a 4-byte length, the bytes, the stat. ZooKeeper has CREATE2 since 3.5.0.
 *
 * The client's own methods build each request as a generic record (a record for its header, one for
 * its body, one per ACL entry) and serialise it by walking each record's specification twice (once to
 * measure it, once to write it), inside a retry wrapper per call; on a 2-core machine that shares the
 * CPU with the ensemble, it was about a tenth of a lock cycle's client CPU. Here each request is one
 * object whose `toBuffer` writes its bytes directly, and a session's ACL is encoded once.
 *
 * It works on the client's internals (its ConnectionManager, as `set-watches.ts` does); when they are
 * not what it expects, {@link wireRequestsOn} is `undefined` and the caller uses the client's methods
 * (and creates without a stat).
 */
import type { ACL, Client, Event, Exception, Stat } from 'node-zookeeper-client';

// ZooKeeper's opcodes.
const DELETE = 2;
const GET_DATA = 4;
const GET_CHILDREN2 = 12;
const CREATE2 = 15;

// A jute `ustring` or `buffer` that is absent (no data at all, as opposed to zero bytes).
const ABSENT = -1;

/** A reply as the client hands it to a queued request's callback. */
interface Reply {
  readonly payload: {
    readonly data?: Buffer | null | undefined;
    readonly stat?: Stat | undefined;
    readonly children?: string[] | undefined;
  } | null;
}

type ReplyCallback = (error: Exception | Error | null, reply: Reply | undefined) => void;

/** The members of node-zookeeper-client's ConnectionManager used here. */
interface Manager {
  readonly chrootPath?: string;
  queue(request: WireRequest, callback: ReplyCallback): void;
  registerChildWatcher(path: string, watcher: (event: Event) => void): void;
}

/** An ACL entry as node-zookeeper-client represents it. */
interface AclEntry {
  readonly permission?: unknown;
  readonly id?: { readonly scheme?: unknown; readonly id?: unknown };
}

/** Called with the created node's path (as the caller named it, without a chroot) and its stat. */
export type CreatedCallback = (error: Exception | Error | null, path: string, stat: Stat | undefined) => void;

/** The requests of {@link wireRequestsOn}, each answered once through its callback (errors as the client's own methods give them). */
export interface WireRequests {
  /** CREATE2 of `path` (see the module comment). */
  create2(path: string, data: Buffer | undefined, acl: readonly ACL[], mode: number, callback: CreatedCallback): void;
  /** GET_CHILDREN2 of `path`; with `watcher`, registers it as the client's `getChildren` does once answered. */
  getChildren(path: string, watcher: ((event: Event) => void) | undefined, callback: (error: Exception | Error | null, children: string[] | undefined) => void): void;
  /** DELETE of `path` at `version` (`-1`: any). */
  remove(path: string, version: number, callback: (error: Exception | Error | null) => void): void;
}

/**
 * One request as the ConnectionManager queues it: `header` (whose `xid` it sets before it writes the
 * request, and whose `type` tells it how to parse the reply), `payload` (told the chroot, if any) and
 * `toBuffer`. The request is its own payload; each kind of request writes what follows the path.
 * The header's type is the request's opcode until the request is written, and the type its reply is
 * parsed as from then on (they differ for CREATE2 only).
 */
abstract class WireRequest {
  readonly header: { xid: number; type: number };
  readonly payload = this;
  #chroot: string | undefined;

  constructor(
    readonly opcode: number,
    // The type the client parses the reply as.
    readonly replyType: number,
    readonly path: string,
  ) {
    this.header = { xid: 0, type: opcode };
  }

  /** The size of what follows the path. */
  protected abstract get bodyBytes(): number;

  /** Writes what follows the path at `offset`. */
  protected abstract writeBody(buffer: Buffer, offset: number): void;

  setChrootPath(chroot: string): void {
    this.#chroot = chroot;
  }

  toBuffer(): Buffer {
    // As the client names a path on the wire: the chroot prefixed, `/` standing for the chroot itself.
    const chroot = this.#chroot;
    const path = chroot === undefined || chroot === '' ? this.path : this.path === '/' ? chroot : chroot + this.path;
    const pathBytes = Buffer.byteLength(path, 'utf8');
    // The header (xid, opcode), the path, the body; preceded by that length.
    const size = 8 + 4 + pathBytes + this.bodyBytes;
    const buffer = Buffer.allocUnsafe(4 + size);
    buffer.writeInt32BE(size, 0);
    buffer.writeInt32BE(this.header.xid, 4);
    buffer.writeInt32BE(this.opcode, 8);
    buffer.writeInt32BE(pathBytes, 12);
    buffer.write(path, 16, pathBytes, 'utf8');
    this.writeBody(buffer, 16 + pathBytes);
    this.header.type = this.replyType;
    return buffer;
  }
}

/** CREATE2: the data (its length, or ABSENT), the ACL, the flags; its reply parsed as GET_DATA's. */
class Create2Request extends WireRequest {
  constructor(
    path: string,
    readonly data: Buffer | undefined,
    readonly acl: Buffer,
    readonly flags: number,
  ) {
    super(CREATE2, GET_DATA, path);
  }

  protected get bodyBytes(): number {
    return 4 + (this.data?.length ?? 0) + this.acl.length + 4;
  }

  protected writeBody(buffer: Buffer, offset: number): void {
    const { data } = this;
    let at = buffer.writeInt32BE(data === undefined ? ABSENT : data.length, offset);
    if (data !== undefined) at += data.copy(buffer, at);
    at += this.acl.copy(buffer, at);
    buffer.writeInt32BE(this.flags, at);
  }
}

/** GET_CHILDREN2: whether to leave a watch. */
class GetChildren2Request extends WireRequest {
  constructor(
    path: string,
    readonly watch: boolean,
  ) {
    super(GET_CHILDREN2, GET_CHILDREN2, path);
  }

  protected get bodyBytes(): number {
    return 1;
  }

  protected writeBody(buffer: Buffer, offset: number): void {
    buffer.writeUInt8(this.watch ? 1 : 0, offset);
  }
}

/** DELETE: the version (`-1`: any). */
class DeleteRequest extends WireRequest {
  constructor(
    path: string,
    readonly version: number,
  ) {
    super(DELETE, DELETE, path);
  }

  protected get bodyBytes(): number {
    return 4;
  }

  protected writeBody(buffer: Buffer, offset: number): void {
    buffer.writeInt32BE(this.version, offset);
  }
}

/** A jute `vector<ACL>` (count, then each entry's perms, scheme and id), or `undefined` for an entry of another shape. */
function encodeAcl(acl: readonly ACL[]): Buffer | undefined {
  const parts: Buffer[] = [Buffer.alloc(4)];
  (parts[0] as Buffer).writeInt32BE(acl.length, 0);
  for (const entry of acl as readonly AclEntry[]) {
    const { permission, id } = entry;
    if (typeof permission !== 'number' || typeof id?.scheme !== 'string' || typeof id.id !== 'string') return undefined;
    const scheme = Buffer.from(id.scheme, 'utf8');
    const name = Buffer.from(id.id, 'utf8');
    const bytes = Buffer.alloc(4 + 4 + scheme.length + 4 + name.length);
    bytes.writeInt32BE(permission, 0);
    bytes.writeInt32BE(scheme.length, 4);
    scheme.copy(bytes, 8);
    bytes.writeInt32BE(name.length, 8 + scheme.length);
    name.copy(bytes, 12 + scheme.length);
    parts.push(bytes);
  }
  return Buffer.concat(parts);
}

/** The requests of {@link WireRequests} on `client`'s connection, or `undefined` when its internals are not what this module knows. */
export function wireRequestsOn(client: Client): WireRequests | undefined {
  const manager = (client as unknown as { connectionManager?: Partial<Manager> }).connectionManager;
  if (typeof manager?.queue !== 'function' || typeof manager.registerChildWatcher !== 'function') return undefined;
  const connection = manager as Manager;
  // A session passes the same ACL array every time: encoded once.
  const encodedAcls = new WeakMap<readonly ACL[], Buffer | null>();
  const aclBytes = (acl: readonly ACL[]): Buffer | undefined => {
    let encoded = encodedAcls.get(acl);
    if (encoded === undefined) {
      encoded = encodeAcl(acl) ?? null;
      encodedAcls.set(acl, encoded);
    }
    return encoded ?? undefined;
  };
  return {
    create2(path, data, acl, mode, callback) {
      const encodedAcl = aclBytes(acl);
      if (encodedAcl === undefined) {
        callback(new Error('an ACL entry of an unknown shape: it cannot be sent'), '', undefined);
        return;
      }
      connection.queue(new Create2Request(path, data, encodedAcl, mode), (error, reply) => {
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
        const chroot = connection.chrootPath;
        callback(null, chroot !== undefined && chroot !== '' && created.startsWith(chroot) ? created.slice(chroot.length) || '/' : created, stat);
      });
    },
    getChildren(path, watcher, callback) {
      connection.queue(new GetChildren2Request(path, watcher !== undefined), (error, reply) => {
        if (error !== null) {
          callback(error, undefined);
          return;
        }
        if (watcher !== undefined) connection.registerChildWatcher(path, watcher);
        callback(null, reply?.payload?.children ?? []);
      });
    },
    remove(path, version, callback) {
      connection.queue(new DeleteRequest(path, version), (error) => callback(error));
    },
  };
}
