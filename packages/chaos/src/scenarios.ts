/**
 * The fault catalogue of FAULTS.md as scenarios the nemesis can inject, and which of them run against
 * which backend. Every injection heals what it broke before it returns (also when the run stops early).
 */
import { hasElections, hasSemaphores, type BackendName } from './backends.js';
import type { NemesisContext, Scenario } from './nemesis.js';
import { terminateSessionsOf } from './postgres-sessions.js';

/**
 * Waits for a current holder (≤ 3 × TTL), with `minValidityMs` one whose validity runs at least that
 * long past now; logs `no-holder` and resolves undefined if none came.
 */
async function holder(context: NemesisContext, after?: number, minValidityMs?: number) {
  const hold = await context.waitForHold({
    ...(after === undefined ? {} : { after }),
    ...(minValidityMs === undefined ? {} : { minValidityMs }),
    timeoutMs: 3 * context.ttlMs,
  });
  if (hold === undefined && !context.signal.aborted) context.log('no-holder');
  return hold;
}

const noFault: Scenario = { id: 'F0', name: 'no fault', inject: async (context) => void (await context.sleep(context.ttlMs)) };

/** F1: kill -9 the holder's process; a replacement client starts. */
const holderCrash: Scenario = {
  id: 'F1',
  name: 'holder crash',
  async inject(context) {
    const hold = await holder(context);
    if (hold === undefined) return;
    await context.sleep(context.rng.between(0, context.ttlMs / 3));
    await context.killClient(hold.proc, true);
  },
};

/** F2 / F3: SIGSTOP the holder for `factor` × TTL (+ `extraMs`), then SIGCONT. */
function holderPause(id: string, name: string, factor: number, extraMs: number): Scenario {
  return {
    id,
    name,
    async inject(context) {
      const hold = await holder(context);
      if (hold === undefined) return;
      const ms = Math.round(context.ttlMs * factor + extraMs);
      context.log('start-pause', hold.proc, { ms });
      context.pauseClient(hold.proc);
      try {
        await context.sleep(ms);
      } finally {
        // Logged just before SIGCONT: the pause window must close before the process can act again.
        context.log('stop-pause', hold.proc);
        context.resumeClient(hold.proc);
      }
    },
  };
}

/** F5 / F6: the holder's connections through its proxies go silent (blackhole) or are reset. */
function holderNetwork(id: string, name: string, mode: 'blackhole' | 'reset', durationFactor: number, extraMs: number): Scenario {
  return {
    id,
    name,
    proxies: true,
    // Holds outlast the fault, so the holder is still holding when its validity runs out.
    workload: { holdMin: 1.5, holdMax: 2 },
    async inject(context) {
      const hold = await holder(context, context.now());
      if (hold === undefined) return;
      const proxies = context.proxiesOf(hold.proc) ?? [];
      const ms = Math.round(context.ttlMs * durationFactor + extraMs);
      const target = `link:${hold.proc}`;
      context.log(`start-${mode}`, target, { ms });
      for (const proxy of proxies) proxy.setMode(mode);
      try {
        await context.sleep(ms);
      } finally {
        context.log(`stop-${mode}`, target);
        for (const proxy of proxies) proxy.setMode('pass');
      }
    },
  };
}

/** kill -9 server `index` and start it again at once (empty unless it persists). */
async function restartServer(context: NemesisContext, index: number): Promise<void> {
  const name = context.servers.names[index] ?? `server-${index}`;
  const node = context.servers.nodes[index];
  if (node === undefined) return;
  context.log('start-server-down', name, { persistence: context.servers.persistence });
  try {
    await node.restart();
  } finally {
    context.log('stop-server-down', name);
  }
}

/** Pauses `proc` for `ms` (SIGSTOP … SIGCONT, logged as a pause) while `during` runs. */
async function pausedAround(context: NemesisContext, proc: string, ms: number, during: () => Promise<void>): Promise<void> {
  const until = context.now() + ms * 1e6;
  context.log('start-pause', proc, { ms });
  context.pauseClient(proc);
  try {
    await during();
    await context.sleep((until - context.now()) / 1e6);
  } finally {
    context.log('stop-pause', proc);
    context.resumeClient(proc);
  }
}

/**
 * The validity, in TTLs, that the holder a negative control pauses across a restart (for TTL/4) must
 * have left: the rest of it (about TTL/4) is when the others come back to the emptied server and take
 * the lock it still believes it holds. A hold handed over provisionally (a direct grant, renewed to
 * the full TTL shortly after) would otherwise run out during the pause and the control find nothing.
 */
const PAUSED_HOLDER_VALIDITY_FACTOR = 0.5;

/** F10 / F11: kill -9 + immediate restart of the single Redis under a fresh holder, waiters waiting. */
function redisRestart(persistence: boolean): Scenario {
  return {
    id: persistence ? 'F11' : 'F10',
    name: persistence ? 'restart, AOF always' : 'restart, no persistence',
    expectViolation: !persistence,
    persistence,
    // Long holds of one contended key: the waiters must be waiting when the key vanishes.
    ttlMs: 4_000,
    keys: 1,
    workload: { probeShare: 0, holdMin: 1, holdMax: 1.2, abandonShare: 0 },
    async inject(context) {
      const hold = await holder(context, context.now(), PAUSED_HOLDER_VALIDITY_FACTOR * context.ttlMs);
      if (hold === undefined) return;
      await context.sleep(100);
      // The adapter notices a dropped connection within milliseconds and checks its key, so the
      // restart happens while the holder sits in a short GC pause (TTL/4: harmless alone, see F3).
      await pausedAround(context, hold.proc, context.ttlMs / 4, () => restartServer(context, 0));
      await context.sleep(context.ttlMs / 2);
    },
  };
}

/** F12: SIGSTOP the server for TTL + 1 s (Redis; PostgreSQL: the postmaster and every session's process). */
const serverPause: Scenario = {
  id: 'F12',
  name: 'server pause > TTL',
  async inject(context) {
    await holder(context);
    const node = context.servers.nodes[0];
    if (node === undefined) return;
    context.log('start-server-pause', context.servers.names[0], { ms: context.ttlMs + 1_000 });
    await node.pause();
    try {
      await context.sleep(context.ttlMs + 1_000);
    } finally {
      context.log('stop-server-pause', context.servers.names[0]);
      await node.resume();
    }
  },
};

/** F14: kill 2 of 5 Redlock masters; restart them (empty) only after the max TTL has passed — the safe procedure. */
const redlockMinorityDown: Scenario = {
  id: 'F14',
  name: '2 of 5 masters down, delayed restart',
  async inject(context) {
    const victims = context.rng.sample([0, 1, 2, 3, 4], 2);
    for (const index of victims) context.log('start-server-down', context.servers.names[index]);
    await Promise.all(victims.map((index) => context.servers.nodes[index]?.kill()));
    try {
      await context.sleep(context.ttlMs + 1_000);
    } finally {
      // Delayed past every TTL granted before the crash: the empty master cannot help a second holder.
      await Promise.all(victims.map((index) => context.servers.nodes[index]?.restart()));
      for (const index of victims) context.log('stop-server-down', context.servers.names[index]);
    }
  },
};

/**
 * F16 (negative control): two masters down, so a new holder takes exactly the other three; the two
 * come back empty, then one of the holder's three is killed and restarted empty AT ONCE: a waiter
 * can now take three masters while the first holder still holds two.
 */
const redlockImmediateRestart: Scenario = {
  id: 'F16',
  name: 'majority master restarted empty at once',
  expectViolation: true,
  ttlMs: 4_000,
  keys: 1,
  workload: { probeShare: 0, holdMin: 1, holdMax: 1.2, abandonShare: 0 },
  async inject(context) {
    const [down1, down2, ...majority] = context.rng.sample([0, 1, 2, 3, 4], 5) as [number, number, ...number[]];
    const names = context.servers.names;
    context.log('start-server-down', names[down1]);
    context.log('start-server-down', names[down2]);
    await Promise.all([context.servers.nodes[down1]?.kill(), context.servers.nodes[down2]?.kill()]);
    let restarted = false;
    try {
      const hold = await holder(context, context.now(), PAUSED_HOLDER_VALIDITY_FACTOR * context.ttlMs);
      await Promise.all([context.servers.nodes[down1]?.restart(), context.servers.nodes[down2]?.restart()]);
      context.log('stop-server-down', names[down1]);
      context.log('stop-server-down', names[down2]);
      restarted = true;
      if (hold === undefined) return;
      const victim = context.rng.pick(majority);
      await pausedAround(context, hold.proc, context.ttlMs / 4, () => restartServer(context, victim));
      await context.sleep(context.ttlMs / 2);
    } finally {
      if (!restarted) {
        await Promise.all([context.servers.nodes[down1]?.restart(), context.servers.nodes[down2]?.restart()]);
        context.log('stop-server-down', names[down1]);
        context.log('stop-server-down', names[down2]);
      }
    }
  },
};

/** F20 / F23: kill -9 the leader (etcd member / ZooKeeper server), restart it on its data dir 1 s later. */
function leaderKill(id: string, name: string): Scenario {
  return {
    id,
    name,
    async inject(context) {
      await holder(context);
      const leader = await context.servers.leaderIndex();
      const node = context.servers.nodes[leader];
      if (node === undefined) return;
      context.log('start-server-down', context.servers.names[leader], { leader: true });
      await node.kill();
      try {
        await context.sleep(1_000);
      } finally {
        await node.restart();
        context.log('stop-server-down', context.servers.names[leader]);
      }
    },
  };
}

/** F21 / F24: SIGSTOP 2 of 3 members for TTL + 2 s: nobody may acquire meanwhile. */
function quorumLoss(id: string, name: string): Scenario {
  return {
    id,
    name,
    // Holds long enough that the holder is still holding when the quorum goes: its loss is measured.
    workload: { holdMin: 1, holdMax: 1.5 },
    async inject(context) {
      await holder(context, context.now());
      const victims = context.rng.sample([0, 1, 2], 2);
      const ms = context.ttlMs + 2_000;
      for (const index of victims) context.log('start-server-pause', context.servers.names[index], { ms });
      await Promise.all(victims.map((index) => context.servers.nodes[index]?.pause()));
      // Replies already on the wire when the members stopped may still arrive: start counting a little later.
      const from = context.now() + 500e6;
      try {
        await context.sleep(ms);
      } finally {
        const to = context.now();
        for (const index of victims) context.log('stop-server-pause', context.servers.names[index]);
        await Promise.all(victims.map((index) => context.servers.nodes[index]?.resume()));
        if (to > from) context.noAcquireWindow({ from, to, why: `${victims.map((i) => context.servers.names[i]).join(' + ')} paused` });
      }
      await context.servers.leaderIndex().catch(() => undefined);
    },
  };
}

/** F7: every client's connections delayed by 100 ms each way for 2 × TTL (latency, not loss). */
const latency: Scenario = {
  id: 'F7',
  name: 'latency +100 ms each way, all clients',
  proxies: true,
  async inject(context) {
    const delayMs = 100;
    const ms = 2 * context.ttlMs;
    const proxies = context.procs().flatMap((proc) => context.proxiesOf(proc) ?? []);
    context.log('start-delay', 'all-links', { delayMs, ms });
    for (const proxy of proxies) {
      proxy.setDelayMs(delayMs);
      proxy.setMode('delay');
    }
    try {
      await context.sleep(ms);
    } finally {
      context.log('stop-delay', 'all-links');
      for (const proxy of proxies) proxy.setMode('pass');
    }
  },
};

/**
 * F27 (PostgreSQL): an operator's `pg_terminate_backend` of the holder's session, the one way to
 * take a session advisory lock away. The server sends the session its termination message before
 * it frees the session's locks, so a running holder learns of the loss first; that it does so
 * before a waiter's next try is granted is a race it normally wins, not a guarantee (see F29).
 */
const sessionTerminated: Scenario = {
  id: 'F27',
  name: "holder's session terminated (pg_terminate_backend), a race",
  race: true,
  async inject(context) {
    const hold = await holder(context, context.now());
    if (hold === undefined) return;
    await context.sleep(context.rng.between(0, context.ttlMs / 3));
    const port = context.servers.nodes[0]?.port;
    if (port === undefined) return;
    context.log('terminate-session', hold.proc);
    const count = await terminateSessionsOf(port, hold.proc);
    context.log('terminated-sessions', hold.proc, count);
  },
};

// How long the stalled holder stays paused after a waiter's grant: far above the checker's default
// slack (2 ms), far below the holder's remaining validity (its TTL is 8 s, the pause starts 100 ms in).
const OVERLAP_AFTER_GRANT_MS = 250;

/**
 * Pauses `proc` (SIGSTOP) across a restart of server 0 and until a waiter has held the lock on the
 * restarted server for a moment, at most TTL/2 after the restart (a GC pause well inside the holder's validity):
 * event-driven, so that a slow restart cannot end the pause before anyone could be granted. Logs
 * how long the restart took and who was granted, so that a run without an overlap says why.
 */
async function stalledAcrossRestart(context: NemesisContext, proc: string): Promise<void> {
  const boundMs = context.ttlMs / 2;
  context.log('start-pause', proc, { atMostMsAfterRestart: boundMs });
  context.pauseClient(proc);
  try {
    const from = context.now();
    await restartServer(context, 0);
    const restartMs = Math.round((context.now() - from) / 1e6);
    // A hold that started after the pause began, by a client that is not paused.
    const granted = await context.waitForHold({ after: from, timeoutMs: boundMs });
    context.log(granted === undefined ? 'none-granted-while-paused' : 'granted-while-paused', granted?.proc, { restartMs });
    // A moment more, so that the two holds overlap by more than the checker's slack: the holder,
    // resumed the instant the waiter is granted, reads its session's end within a millisecond or two.
    if (granted !== undefined) await context.sleep(OVERLAP_AFTER_GRANT_MS);
  } finally {
    context.log('stop-pause', proc);
    context.resumeClient(proc);
  }
}

/**
 * F28 / F29 (PostgreSQL): fast shutdown + start of the server under a fresh holder, waiters waiting.
 * Every session ends, so every lock is freed by the restart; the token counter survives. F28: the
 * holder runs and reads its session's end at once. F29 (negative control): the holder sits in a
 * GC pause from before the restart until a waiter is granted the lock on the restarted server (see
 * stalledAcrossRestart), so the waiter holds it while the holder's validity still runs.
 */
function postgresRestart(stalledHolder: boolean): Scenario {
  return {
    id: stalledHolder ? 'F29' : 'F28',
    name: stalledHolder ? 'restart, holder stalled across it' : 'restart (fast shutdown + start), a race',
    expectViolation: stalledHolder,
    race: !stalledHolder,
    // Holds of seconds on one contended key: the waiters must be waiting when the server comes
    // back. A long session TTL: a fast shutdown of a durable server checkpoints with fsync, which
    // on a busy disk takes seconds, and the paused holder's validity must outlast restart + grant.
    ttlMs: 8_000,
    keys: 1,
    workload: { probeShare: 0, holdMin: 0.5, holdMax: 0.6, abandonShare: 0 },
    async inject(context) {
      const hold = await holder(context, context.now());
      if (hold === undefined) return;
      await context.sleep(100);
      if (stalledHolder) await stalledAcrossRestart(context, hold.proc);
      else await restartServer(context, 0);
      await context.sleep(context.ttlMs / 2);
    },
  };
}

/**
 * The workload time a run of `scenario` gets when `wantedMs` is asked for: a fault is injected only
 * while a whole TTL of workload is left, so a scenario with a TTL of its own gets that TTL plus time
 * for the first injection and its steps.
 */
export function durationFor(scenario: Scenario, wantedMs: number): number {
  return scenario.ttlMs === undefined ? wantedMs : Math.max(wantedMs, scenario.ttlMs + 4_000);
}

const F2 = holderPause('F2', 'holder pause > TTL', 1, 1_000);
const F3 = holderPause('F3', 'holder pause < TTL/3', 0.25, 0);
const F5 = holderNetwork('F5', 'holder blackholed > TTL', 'blackhole', 1, 1_000);
const F6 = holderNetwork('F6', 'holder connection reset', 'reset', 0, 300);

/** The limit of the semaphore rows: 3 clients share 2 permits, so one of them waits. */
export const SEMAPHORE_ROW_LIMIT = 2;
/** The id suffix of a semaphore row: `F2-S7` is F2 with the W1 holds on a semaphore. */
export const SEMAPHORE_ROW_SUFFIX = '-S7';

/**
 * The S7 row of a fault: the same injection against holders of a counting semaphore's permits (one
 * key of {@link SEMAPHORE_ROW_LIMIT} permits, so that permits are contended and S7 has holds to sum).
 */
export function semaphoreRow(base: Scenario): Scenario {
  return {
    ...base,
    id: `${base.id}${SEMAPHORE_ROW_SUFFIX}`,
    name: `${base.name}, semaphore of ${SEMAPHORE_ROW_LIMIT}`,
    keys: 1,
    workload: { ...base.workload, semaphoreLimit: SEMAPHORE_ROW_LIMIT, lateWrite: false },
  };
}

/** The id suffix of an election row: `F2-S8` is F2 with the W1 holds as leaderships. */
export const ELECTION_ROW_SUFFIX = '-S8';

/**
 * The S8 row of a fault: the same injection against leaders of one election (three campaigners for
 * one name, so that leadership changes hands), with W2 writes fenced by the term and, after a lost
 * leadership, the late write of a paused leader.
 */
export function electionRow(base: Scenario): Scenario {
  return {
    ...base,
    id: `${base.id}${ELECTION_ROW_SUFFIX}`,
    name: `${base.name}, election`,
    keys: 1,
    workload: { ...base.workload, election: true },
  };
}

/**
 * A backend's mutex rows, then the S7 row of every fault that is not a negative control (those are
 * built around one holder's overlap, which permits to spare would hide) when its adapter declares
 * semaphores, and the S8 row of every fault when it declares elections: a negative control stays
 * one, and must then show two leaders at once.
 */
function withCoordinationRows(backend: BackendName, rows: readonly Scenario[]): readonly Scenario[] {
  const safe = rows.filter((row) => row.expectViolation !== true);
  return [...rows, ...(hasSemaphores(backend) ? safe.map(semaphoreRow) : []), ...(hasElections(backend) ? rows.map(electionRow) : [])];
}

/** Every scenario each backend runs in the soak, in order. */
export const SCENARIOS: Readonly<Record<BackendName, readonly Scenario[]>> = mapBackends({
  redis: [noFault, holderCrash, F2, F3, F5, F6, latency, redisRestart(true), serverPause, redisRestart(false)],
  redlock: [noFault, holderCrash, F2, F3, F5, F6, latency, redlockMinorityDown, redlockImmediateRestart],
  etcd: [noFault, holderCrash, F2, F3, F5, F6, latency, leaderKill('F20', 'leader kill + restart'), quorumLoss('F21', 'quorum loss (2 of 3 paused)')],
  zookeeper: [noFault, holderCrash, F2, F3, F5, F6, latency, leaderKill('F23', 'leader kill + restart'), quorumLoss('F24', 'quorum loss (2 of 3 paused)')],
  // A reset connection is an ended session on PostgreSQL: the server frees its locks at once.
  postgres: [noFault, holderCrash, F2, F3, F5, { ...F6, name: `${F6.name}, a race`, race: true }, latency, sessionTerminated, serverPause, postgresRestart(false), postgresRestart(true)],
}, withCoordinationRows);

/**
 * The quick deterministic profile (part of `pnpm test`): a few faults per backend, controls
 * included, F2's S7 row (a paused holder's permit runs out and is taken) where the backend has
 * semaphores, and F2's S8 row (a paused leader loses its leadership, the next leader's term is
 * greater and the paused leader's late write is refused) where it has elections.
 */
export const QUICK_PROFILE: Readonly<Record<BackendName, readonly string[]>> = mapBackends({
  // F10-S8: the same negative control with leaders; the checker must find two at once (S8).
  redis: ['F1', 'F2', 'F10', 'F10-S8'],
  etcd: ['F1', 'F2', 'F21'],
  zookeeper: ['F1', 'F2', 'F24'],
  redlock: ['F2', 'F16'],
  postgres: ['F1', 'F2', 'F12', 'F29'],
}, (backend, ids) => [
  ...ids,
  ...(hasSemaphores(backend) ? [`F2${SEMAPHORE_ROW_SUFFIX}`] : []),
  ...(hasElections(backend) ? [`F2${ELECTION_ROW_SUFFIX}`] : []),
]);

function mapBackends<T>(rows: Readonly<Record<BackendName, T>>, map: (backend: BackendName, value: T) => T): Readonly<Record<BackendName, T>> {
  const result = {} as Record<BackendName, T>;
  for (const backend of Object.keys(rows) as BackendName[]) result[backend] = map(backend, rows[backend]);
  return result;
}

/** The scenario `id` of `backend`. @throws RangeError when the backend does not run it. */
export function scenario(backend: BackendName, id: string): Scenario {
  const found = SCENARIOS[backend].find((candidate) => candidate.id === id);
  if (found === undefined) throw new RangeError(`${backend} has no fault ${id}; it has ${SCENARIOS[backend].map((s) => s.id).join(', ')}`);
  return found;
}
