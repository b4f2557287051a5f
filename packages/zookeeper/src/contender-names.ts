/**
 * Names of the contender znodes under a lock's znode, shared with the lock recipes of other languages.
 *
 * - Apache Curator `InterProcessMutex`: `_c_<uuid>-lock-<seq>`; `InterProcessReadWriteLock`:
 *   `_c_<uuid>-__READ__<seq>` and `_c_<uuid>-__WRIT__<seq>` (the `_c_<uuid>-` prefix is Curator's
 *   "protected" mode: it lets a create whose reply was lost be found again).
 * - kazoo `Lock`: `<32 hex>__lock__<seq>`; kazoo `ReadLock`: `<32 hex>__rlock__<seq>`.
 *
 * Every child ending in one of these markers plus ZooKeeper's 10-digit sequence is a contender, and
 * contenders are ordered by that sequence (all children of one parent share its counter). Readers
 * (`__READ__`, `__rlock__`) only wait for writers; every other contender is exclusive.
 *
 * A leader latch (Curator's `LeaderLatch`) is the same queue with other names: candidates
 * `_c_<uuid>-latch-<seq>`, all exclusive, and only those count (the `latch` naming below).
 */
import type { LockMode } from '@fencelock/core/adapter';

/** How this provider names its own contender nodes. */
export type ContenderNaming = 'curator' | 'curator-read-write' | 'kazoo';

/**
 * How a queue of nodes is named (internal): a lock's contenders (any {@link ContenderNaming}: each
 * recognises every lock form), or `latch`, the candidates of a leader latch (only `latch-` nodes).
 */
export type QueueNaming = ContenderNaming | 'latch';

/** One contender, parsed from a child name. */
export interface Contender {
  /** The child's name (not the full path). */
  readonly name: string;
  /** ZooKeeper's sequence number, from the 10-digit suffix. */
  readonly sequence: number;
  /** `shared` for read-lock nodes, `exclusive` for everything else. */
  readonly mode: LockMode;
  /** The owner id encoded in the name (a UUID for Curator and fencelock nodes), if any. */
  readonly ownerId: string | undefined;
}

// The markers a contender's name ends with, before the sequence. At most one of them can end right
// before it: `-lock-` ends in '-', and of those ending in "__" none is a suffix of another.
const CONTENDER_MARKERS: readonly string[] = ['-lock-', '__lock__', '__READ__', '__WRIT__', '__rlock__'];
// Curator's LeaderLatch sorts by what follows the last `latch-` (the 10-digit sequence).
const LATCH_MARKERS: readonly string[] = ['latch-'];
const READ_MARKERS = new Set(['__READ__', '__rlock__']);
const SEQUENCE_DIGITS = 10;
// What a regular expression's `.` does not match: such a prefix never named a contender.
const LINE_TERMINATOR = /[\n\r\u2028\u2029]/;
// Curator's protected prefix; its trailing '-' belongs to the `-lock-` marker in mutex names.
const PROTECTED = /^_c_([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})-?$/i;
const KAZOO_ID = /^([0-9a-f]{32})$/i;

/**
 * Parses a child name; `undefined` when it is not a contender (ignored, as Curator and kazoo ignore
 * them) or, with `naming` `latch`, not a latch candidate.
 */
export function parseContender(name: string, naming: QueueNaming = 'curator'): Contender | undefined {
  // `<prefix><marker><10 digits>`, read from the end: every acquire parses each child of its lock, and
  // a pattern with a lazy prefix tries each marker at each position of the name.
  const digitsAt = name.length - SEQUENCE_DIGITS;
  if (digitsAt < 0) return undefined;
  for (let i = digitsAt; i < name.length; i += 1) {
    const code = name.charCodeAt(i);
    if (code < 48 || code > 57) return undefined;
  }
  for (const marker of naming === 'latch' ? LATCH_MARKERS : CONTENDER_MARKERS) {
    const markerAt = digitsAt - marker.length;
    if (markerAt < 0 || !name.startsWith(marker, markerAt)) continue;
    const prefix = name.slice(0, markerAt);
    if (LINE_TERMINATOR.test(prefix)) return undefined;
    return new ParsedContender(name, Number.parseInt(name.slice(digitsAt), 10), READ_MARKERS.has(marker) ? 'shared' : 'exclusive', prefix);
  }
  return undefined;
}

// A parsed child; its owner id is read from the prefix only when asked (by `inspect`, not by acquires).
class ParsedContender implements Contender {
  readonly #prefix: string;

  constructor(
    readonly name: string,
    readonly sequence: number,
    readonly mode: LockMode,
    prefix: string,
  ) {
    this.#prefix = prefix;
  }

  get ownerId(): string | undefined {
    return ownerFromPrefix(this.#prefix);
  }
}

function ownerFromPrefix(prefix: string): string | undefined {
  const guarded = PROTECTED.exec(prefix);
  if (guarded !== null) return guarded[1]?.toLowerCase();
  const hex = KAZOO_ID.exec(prefix)?.[1]?.toLowerCase();
  if (hex === undefined) return undefined;
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * The contenders among `children` (latch candidates with `naming` `latch`), in queue order (by
 * sequence, then name for a wrapped counter).
 */
export function sortedContenders(children: readonly string[], naming: QueueNaming = 'curator'): Contender[] {
  const contenders: Contender[] = [];
  for (const child of children) {
    const parsed = parseContender(child, naming);
    if (parsed !== undefined) contenders.push(parsed);
  }
  return contenders.sort((a, b) => a.sequence - b.sequence || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * The contender `ours` must wait for, or `undefined` when it holds the lock (ZooKeeper's recipe):
 * an exclusive node waits for the node just before it; a shared node for the last exclusive node
 * before it. Watching only that one node means a release wakes exactly one waiter.
 */
export function blockerOf(contenders: readonly Contender[], ours: string): Contender | undefined | 'missing' {
  const index = contenders.findIndex((c) => c.name === ours);
  if (index < 0) return 'missing';
  const self = contenders[index];
  if (self === undefined) return 'missing';
  if (self.mode === 'exclusive') return index === 0 ? undefined : contenders[index - 1];
  for (let i = index - 1; i >= 0; i -= 1) {
    const candidate = contenders[i];
    if (candidate?.mode === 'exclusive') return candidate;
  }
  return undefined;
}

/** The holders in queue order: the first exclusive node alone, or every reader before the first writer. */
export function holdersOf(contenders: readonly Contender[]): Contender[] {
  const first = contenders[0];
  if (first === undefined) return [];
  if (first.mode === 'exclusive') return [first];
  const holders: Contender[] = [];
  for (const contender of contenders) {
    if (contender.mode === 'exclusive') break;
    holders.push(contender);
  }
  return holders;
}

/**
 * The name prefix of our own node (ZooKeeper appends the sequence) and the unique part that finds it
 * again after a lost reply.
 */
export function ownNodePrefix(naming: QueueNaming, ownerId: string, mode: LockMode): { prefix: string; guid: string } {
  // Curator's LeaderLatch: its protected prefix and its lock name `latch-`.
  if (naming === 'latch') return { prefix: `_c_${ownerId}-latch-`, guid: `_c_${ownerId}-` };
  if (naming === 'kazoo') {
    // kazoo's Lock / WriteLock name `__lock__`, its ReadLock `__rlock__`, after a uuid4 hex.
    const hex = ownerId.replaceAll('-', '').toLowerCase();
    return { prefix: `${hex}${mode === 'shared' ? '__rlock__' : '__lock__'}`, guid: hex };
  }
  if (mode === 'shared') return { prefix: `_c_${ownerId}-__READ__`, guid: `_c_${ownerId}-` };
  if (naming === 'curator-read-write') return { prefix: `_c_${ownerId}-__WRIT__`, guid: `_c_${ownerId}-` };
  return { prefix: `_c_${ownerId}-lock-`, guid: `_c_${ownerId}-` };
}
