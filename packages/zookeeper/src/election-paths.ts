/**
 * Where an election lives in the tree: the layout of Apache Curator's `LeaderLatch`, so that a
 * Curator latch on the same path campaigns in the same election.
 *
 * - `<root>/#elections/<encoded name>`: the election (Curator's `latchPath`). The `#elections`
 *   segment keeps elections a namespace apart from locks and semaphores: no key encodes to it (`#`
 *   is always written `%23`, see `key-encoding.ts`), so no lock znode is ever an election's parent or
 *   child, and it differs from `#semaphores`.
 * - One EPHEMERAL_SEQUENTIAL node per candidate, `_c_<uuid>-latch-<seq>` (Curator's protected name
 *   with its lock name `latch-`), whose data is the candidate's value as UTF-8 bytes (Curator's
 *   participant id). Candidates are ordered by sequence; the first leads (see `contender-names.ts`).
 */
import { encodeKeySegment } from './key-encoding.js';

/** The segment under the provider's root that holds every election. */
export const ELECTIONS_SEGMENT = '#elections';

/** The znodes of one election. */
export interface ElectionPaths {
  /** `<root>/#elections`: the parent of every election (it stays, as the root does). */
  readonly elections: string;
  /** `<root>/#elections/<encoded name>`: Curator's latch path, parent of the candidates. */
  readonly election: string;
}

/** The znodes of election `name` under the provider's `root`. */
export function electionPaths(root: string, name: string): ElectionPaths {
  const elections = `${root}/${ELECTIONS_SEGMENT}`;
  return { elections, election: `${elections}/${encodeKeySegment(name)}` };
}
