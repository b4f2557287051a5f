/**
 * Who allocated what, from a V8 sampling heap profile: each sampled allocation is charged to the
 * innermost frame of its stack that lies in a package's own JavaScript. The rule:
 *
 * - a frame whose script URL contains `/node_modules/` belongs to the package named after the LAST
 *   `/node_modules/` (pnpm's `.pnpm/ioredis@5.9.2/node_modules/ioredis/…` is `ioredis`), except
 *   `@fencelock/*`, which is fencelock as installed by a user;
 * - a frame under `/packages/<name>/` of this repository is fencelock, except `packages/bench/` and
 *   any `/scratch/` or `/test/` folder, which are the measuring harness (the loop, the session
 *   wrappers, the raw baselines written in the bench);
 * - any other file is the harness too;
 * - frames of Node itself (`node:` URLs) and of V8 builtins (no URL: `Map#delete`, `Promise`, the
 *   await machinery) own nothing: the allocation goes to their caller, so `crypto.randomUUID()` or a
 *   `Map#delete` counts for the code that called it, and a `socket.write` for the client library
 *   that wrote;
 * - an allocation with no package frame on its stack at all (socket reads started by libuv, the
 *   microtask runner, the GC) is the runtime's.
 */

/** What a frame's script is. */
export type OwnerGroup = 'fencelock' | 'library' | 'harness' | 'runtime';

/** The owner of one frame: its group and, for a library, its package name. */
export interface FrameOwner {
  readonly group: OwnerGroup;
  /** `fencelock`, the npm package name for a library, `harness`, or `runtime`. */
  readonly name: string;
}

/** The owner of nothing: Node's own code and V8 builtins (see the module comment). */
const TRANSPARENT = undefined;

const FENCELOCK: FrameOwner = { group: 'fencelock', name: 'fencelock' };
const HARNESS: FrameOwner = { group: 'harness', name: 'harness' };
/** An allocation with no package frame above it. */
export const RUNTIME: FrameOwner = { group: 'runtime', name: 'runtime' };

const NODE_MODULES = '/node_modules/';

/** The owner of a frame of script `url`, or `undefined` when the frame's caller owns its allocations. */
export function frameOwner(url: string): FrameOwner | undefined {
  if (url === '' || url.startsWith('node:')) return TRANSPARENT;
  const path = url.replaceAll('\\', '/');
  const modules = path.lastIndexOf(NODE_MODULES);
  if (modules !== -1) {
    const rest = path.slice(modules + NODE_MODULES.length).split('/');
    const name = rest[0]?.startsWith('@') === true ? `${rest[0]}/${rest[1] ?? ''}` : (rest[0] ?? '');
    if (name.startsWith('@fencelock/')) return FENCELOCK;
    return { group: 'library', name };
  }
  const packages = /\/packages\/([^/]+)\/(.*)$/.exec(path);
  if (packages === null) return HARNESS;
  const [, name = '', inner = ''] = packages;
  if (name === 'bench' || /(^|\/)(scratch|test)\//.test(inner)) return HARNESS;
  return FENCELOCK;
}

/** The part of a sampling heap profile this module reads (`HeapProfiler.SamplingHeapProfile`). */
export interface SampledProfile {
  readonly head: ProfileNode;
  readonly samples: readonly { readonly size: number; readonly nodeId: number }[];
}

/** A node of the profile's call tree. */
export interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
  readonly children: readonly ProfileNode[];
}

/** Bytes charged to one owner, and to the allocating functions under it. */
export interface OwnerBytes {
  readonly owner: FrameOwner;
  bytes: number;
}

/** Bytes charged to one function (the charged frame, `functionName url:line`). */
export interface FunctionBytes {
  readonly owner: FrameOwner;
  /** The charged frame: `name (path:line)`, the path shortened to what follows `packages/` or `node_modules/`. */
  readonly frame: string;
  bytes: number;
}

/** A profile's samples, charged by the rule above. */
export interface Attribution {
  readonly totalBytes: number;
  /** By owner name (`fencelock`, `ioredis`, …, `harness`, `runtime`). */
  readonly byOwner: ReadonlyMap<string, OwnerBytes>;
  /** By charged frame, largest first. */
  readonly byFunction: readonly FunctionBytes[];
}

/** Charges every sample of `profile` to its owner (see the module comment). */
export function attribute(profile: SampledProfile): Attribution {
  // The charged frame of each node, found once per node (many samples share a node).
  const charged = new Map<number, { owner: FrameOwner; node: ProfileNode | undefined }>();
  // Iterative walk with the charged frame of the parent carried down: call trees are deep.
  const stack: { node: ProfileNode; inherited: { owner: FrameOwner; node: ProfileNode | undefined } }[] = [
    { node: profile.head, inherited: { owner: RUNTIME, node: undefined } },
  ];
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    const owner = frameOwner(item.node.callFrame.url);
    const own = owner === undefined ? item.inherited : { owner, node: item.node };
    charged.set(item.node.id, own);
    for (const child of item.node.children) stack.push({ node: child, inherited: own });
  }
  const byOwner = new Map<string, OwnerBytes>();
  const byFrame = new Map<string, FunctionBytes>();
  let totalBytes = 0;
  for (const sample of profile.samples) {
    const found = charged.get(sample.nodeId) ?? { owner: RUNTIME, node: undefined };
    totalBytes += sample.size;
    const entry = byOwner.get(found.owner.name) ?? { owner: found.owner, bytes: 0 };
    entry.bytes += sample.size;
    byOwner.set(found.owner.name, entry);
    const frame = found.node === undefined ? '(no package frame)' : describeFrame(found.node);
    const key = `${found.owner.name} ${frame}`;
    const fn = byFrame.get(key) ?? { owner: found.owner, frame, bytes: 0 };
    fn.bytes += sample.size;
    byFrame.set(key, fn);
  }
  return { totalBytes, byOwner, byFunction: [...byFrame.values()].sort((a, b) => b.bytes - a.bytes) };
}

function describeFrame(node: ProfileNode): string {
  const { functionName, url, lineNumber } = node.callFrame;
  const path = url.replace(/^.*\/(packages|node_modules)\//, '');
  // lineNumber is 0-based; a bundled or transpiled file may report 0 for every function.
  return `${functionName === '' ? '(anonymous)' : functionName} (${path}:${lineNumber + 1})`;
}
