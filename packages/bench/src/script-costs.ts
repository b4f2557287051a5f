/**
 * What each part of `@fencelock/redis`'s protocol costs the server, on an uncontended acquire +
 * release: a ladder of cycles on one Redis, each adding one part to the one before, from the plain
 * `SET NX PX` + Lua compare-and-delete that redis-semaphore and the raw baseline send, to the
 * provider's own two scripts. The server's time is `INFO commandstats` (µs spent running the cycle's
 * top-level commands: a script's time includes the commands it runs), read before and after each
 * step's loop; steps take turns in rounds, in a balanced order (`round-order.ts`), and a step's figure is the median of its
 * rounds. The client and the network are not in it: it is the server side of section 4b's split.
 *
 * The script steps send the provider's keys and arguments (6 keys and 8 arguments to acquire, 6 and 5
 * to release), so that the first of them prices the Lua call and its arguments alone, and they use the
 * provider's own Lua for each part (`nextTokenLua`, the effects-replication line).
 *
 * A second ladder does the same for `@fencelock/redlock` on one master (a Redlock cycle sends the
 * same two calls to every master): from node-redlock's own two scripts, as node-redlock sends them
 * (the lock key; the value and the TTL), through the lock and compare-and-delete in Lua with the
 * provider's three keys and its arguments, then the line of waiters checked, to the provider's own
 * scripts.
 */
import { EFFECTS_REPLICATION_LUA, lengthPrefixed, nextTokenLua, redisLockScripts, scriptSha } from '@fencelock/redis-shared';
import { Redis } from 'ioredis';
import { redisLockKeys, type RedisLockKeys } from '../../redis/src/redis-keys.js';
import { roundOrder } from './round-order.js';
import { median, type RoundRange } from './rounds.js';
import { redlockKeys, RELEASE_CHANNEL as REDLOCK_CHANNEL, type RedlockKeys } from '../../redlock/src/lock-keys.js';
import { ACQUIRE_LUA as REDLOCK_ACQUIRE_LUA, RELEASE_LUA as REDLOCK_RELEASE_LUA } from '../../redlock/src/redlock-scripts.js';
import { FIRST_ASK, REDLOCK_REGISTRATION_MS, REGISTRATION_MS, RESERVATION_MS } from './subjects-protocol.js';
import { loadRedlock, RAW_RELEASE } from './subjects.js';
import { round } from './stats.js';

/** The key prefix the ladder locks under, apart from every other subject's. */
export const SCRIPT_COSTS_KEY_PREFIX = 'fencelock-bench-costs:';

const OWNER = '0b239a68-6787-439b-aa99-5d6e7c8f9a01';
const TTL_MS = '10000';
// A fence counter that outlives the run by little: the ladder leaves nothing behind for long.
const FENCE_COUNTER_TTL_MS = '60000';

/** One step of the ladder: what it sends per cycle, and which top-level commands are its time. */
export interface ScriptCostStep {
  readonly id: string;
  readonly label: string;
  /** Lua of the acquire, or undefined for the plain `SET NX PX` command. */
  readonly acquireLua?: string;
  readonly releaseLua: string;
  /**
   * What the step sends: `minimal`, the lock key, the owner and (to acquire) the TTL; `redis`,
   * `@fencelock/redis`'s keys and arguments; `redlock`, `@fencelock/redlock`'s.
   */
  readonly sends: 'minimal' | 'redis' | 'redlock';
}

const LOCK_LUA = `if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) == false then return false end`;
const LINE_LUA = `if KEYS[4] and redis.call('EXISTS', KEYS[4]) == 1 then return false end`;
const TOKEN_LUA = `local now = redis.call('TIME')\n${nextTokenLua('KEYS[2]', 'ARGV[5]')}`;
const RECORD_LUA = `redis.call('SET', KEYS[3], token .. ' ' .. #ARGV[1] .. ' ' .. ARGV[1], 'PX', ARGV[2])`;
const RELEASE_LINE_LUA = `if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
if redis.call('EXISTS', KEYS[2]) == 0 then return 1 end
return 1`;

/** The ladder, cheapest first; its last step is the provider's own scripts. */
export const SCRIPT_COST_STEPS: readonly ScriptCostStep[] = [
  { id: 'plain', label: '`SET NX PX` + Lua compare-and-delete (redis-semaphore, raw baseline)', releaseLua: RAW_RELEASE, sends: 'minimal' },
  { id: 'lua-lock', label: 'the lock in a Lua acquire, with the provider’s keys and arguments', acquireLua: `${LOCK_LUA}\nreturn 1`, releaseLua: RAW_RELEASE, sends: 'redis' },
  { id: 'line', label: '+ the line of waiters checked (acquire and release)', acquireLua: `${LINE_LUA}\n${LOCK_LUA}\nreturn 1`, releaseLua: RELEASE_LINE_LUA, sends: 'redis' },
  {
    id: 'token',
    label: '+ the fencing token (server clock floor, counter read and written)',
    acquireLua: `${EFFECTS_REPLICATION_LUA}\n${LINE_LUA}\n${LOCK_LUA}\n${TOKEN_LUA}\nreturn token`,
    releaseLua: RELEASE_LINE_LUA,
    sends: 'redis',
  },
  {
    id: 'record',
    label: '+ the holder record `inspect` reads',
    acquireLua: `${EFFECTS_REPLICATION_LUA}\n${LINE_LUA}\n${LOCK_LUA}\n${TOKEN_LUA}\n${RECORD_LUA}\nreturn token`,
    releaseLua: RELEASE_LINE_LUA,
    sends: 'redis',
  },
  { id: 'fencelock', label: '@fencelock/redis’s own scripts (hand-off, takeover, direct grants on top)', acquireLua: redisLockScripts.acquire.lua, releaseLua: redisLockScripts.release.lua, sends: 'redis' },
];

// The Redlock scripts' keys: KEYS[1] the lock, KEYS[2] the line of waiters.
const REDLOCK_RELEASE_LUA_PLAIN = `if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1`;
const REDLOCK_RELEASE_LINE_LUA = `if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
if redis.call('EXISTS', KEYS[2]) == 0 then return 1 end
return 1`;
const REDLOCK_LINE_LUA = `if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end`;

/**
 * The Redlock ladder, cheapest first, on one master: node-redlock's own scripts (read from a
 * node-redlock instance, as it sends them) first, `@fencelock/redlock`'s last.
 */
export async function redlockScriptCostSteps(): Promise<readonly ScriptCostStep[]> {
  const Redlock = await loadRedlock();
  // node-redlock wants a client to be built; this one never connects.
  const idle = new Redis({ lazyConnect: true });
  try {
    const { scripts } = new Redlock([idle]);
    return [
      { id: 'node-redlock', label: 'node-redlock’s acquire and release scripts (the lock key; the value and the TTL)', acquireLua: scripts.acquireScript.value, releaseLua: scripts.releaseScript.value, sends: 'minimal' },
      {
        id: 'redlock-lua',
        label: 'the lock and compare-and-delete in Lua, with @fencelock/redlock’s keys and arguments',
        acquireLua: `${LOCK_LUA}\nreturn 1`,
        releaseLua: REDLOCK_RELEASE_LUA_PLAIN,
        sends: 'redlock',
      },
      {
        id: 'redlock-line',
        label: '+ the line of waiters checked (acquire and release)',
        acquireLua: `${REDLOCK_LINE_LUA}\n${LOCK_LUA}\nreturn 1`,
        releaseLua: REDLOCK_RELEASE_LINE_LUA,
        sends: 'redlock',
      },
      { id: 'redlock-fencelock', label: '@fencelock/redlock’s own scripts (hand-off, takeover on top)', acquireLua: REDLOCK_ACQUIRE_LUA, releaseLua: REDLOCK_RELEASE_LUA, sends: 'redlock' },
    ];
  } finally {
    idle.disconnect();
  }
}

/** One step's figures. */
export interface ScriptCostResult {
  readonly id: string;
  readonly label: string;
  /** Median over the rounds of the server µs per acquire + release. */
  readonly serverMicrosPerCycle: number;
  readonly range: RoundRange;
  /** Commands the server ran per cycle, the scripts' own included (`cmdstat_<name>` → calls). */
  readonly callsPerCycle: Readonly<Record<string, number>>;
  /** Whether every cycle acquired (a refused acquire would make a step look cheap). */
  readonly everyCycleAcquired: boolean;
}

/** Settings of {@link runScriptCosts}. */
export interface ScriptCostSettings {
  readonly cyclesPerRound: number;
  readonly rounds: number;
}

interface CommandStat {
  readonly calls: number;
  readonly usec: number;
}

async function commandStats(client: Redis): Promise<Map<string, CommandStat>> {
  const text = await client.info('commandstats');
  const stats = new Map<string, CommandStat>();
  for (const match of text.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
    stats.set(match[1] ?? '', { calls: Number(match[2]), usec: Number(match[3]) });
  }
  return stats;
}

/** Runs the ladder on the Redis at `redisUrl` (one client, one cycle at a time). */
export async function runScriptCosts(redisUrl: string, settings: ScriptCostSettings, steps: readonly ScriptCostStep[] = SCRIPT_COST_STEPS): Promise<ScriptCostResult[]> {
  // Bounded by count, and each command by its timeout: a server that stops answering ends the run.
  const client = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1, commandTimeout: 5_000, connectTimeout: 5_000 });
  await client.connect();
  try {
    const keys = { redis: redisLockKeys(SCRIPT_COSTS_KEY_PREFIX, 'ladder'), redlock: redlockKeys(SCRIPT_COSTS_KEY_PREFIX, 'redlock-ladder') };
    const micros = new Map<string, number[]>();
    const calls = new Map<string, Map<string, number>>();
    const acquired = new Map<string, boolean>();
    for (const step of steps) {
      if (step.acquireLua !== undefined) await client.script('LOAD', step.acquireLua);
      await client.script('LOAD', step.releaseLua);
    }
    for (let r = 0; r < settings.rounds; r += 1) {
      for (const at of roundOrder(steps.length, r)) {
        const step = steps[at];
        if (step === undefined) continue;
        const before = await commandStats(client);
        let every = true;
        for (let c = 0; c < settings.cyclesPerRound; c += 1) every = (await cycle(client, step, keys)) && every;
        const after = await commandStats(client);
        let usec = 0;
        const stepCalls = calls.get(step.id) ?? new Map<string, number>();
        for (const [name, stat] of after) {
          const delta = { calls: stat.calls - (before.get(name)?.calls ?? 0), usec: stat.usec - (before.get(name)?.usec ?? 0) };
          // The INFO read before the loop is counted after it; it is not the cycle's.
          if (name === 'info') continue;
          // The cycle's time is its top-level commands' (a script's inner commands are inside it): the
          // scripts, and the plain step's own SET.
          if (name === 'evalsha' || (name === 'set' && step.acquireLua === undefined)) usec += delta.usec;
          if (delta.calls > 0) stepCalls.set(name, (stepCalls.get(name) ?? 0) + delta.calls);
        }
        calls.set(step.id, stepCalls);
        micros.set(step.id, [...(micros.get(step.id) ?? []), usec / settings.cyclesPerRound]);
        acquired.set(step.id, (acquired.get(step.id) ?? true) && every);
      }
    }
    const { redis, redlock } = keys;
    await client.del(redis.lock, redis.fence, redis.meta, redis.waiters, redis.reserved, redis.grants, redlock.lock, redlock.waiters, redlock.reserved);
    const cycles = settings.cyclesPerRound * settings.rounds;
    return steps.map((step) => {
      const rounds = micros.get(step.id) ?? [];
      return {
        id: step.id,
        label: step.label,
        serverMicrosPerCycle: round(median(rounds), 2),
        range: { min: round(Math.min(...rounds), 2), max: round(Math.max(...rounds), 2), rounds: rounds.length },
        callsPerCycle: Object.fromEntries([...(calls.get(step.id) ?? [])].map(([name, count]) => [name, round(count / cycles, 2)])),
        everyCycleAcquired: acquired.get(step.id) ?? false,
      };
    });
  } finally {
    client.disconnect();
  }
}

// One acquire + release of `step`; whether the acquire got the lock (and the release freed it).
async function cycle(client: Redis, step: ScriptCostStep, keys: { readonly redis: RedisLockKeys; readonly redlock: RedlockKeys }): Promise<boolean> {
  if (step.sends === 'redlock') {
    const { lock, waiters, reserved } = keys.redlock;
    const granted = await client.evalsha(scriptSha(step.acquireLua ?? ''), 3, lock, waiters, reserved, OWNER, TTL_MS, REDLOCK_REGISTRATION_MS, 'costtag0', '');
    const released = await client.evalsha(scriptSha(step.releaseLua), 3, lock, waiters, reserved, OWNER, REDLOCK_CHANNEL, lengthPrefixed(OWNER), RESERVATION_MS);
    return Number(granted) === 1 && Number(released) === 1;
  }
  const { redis } = keys;
  let granted: unknown;
  if (step.acquireLua === undefined) granted = await client.set(redis.lock, OWNER, 'PX', Number(TTL_MS), 'NX');
  else if (step.sends === 'redis') {
    granted = await client.evalsha(
      scriptSha(step.acquireLua), 6, redis.lock, redis.fence, redis.meta, redis.waiters, redis.reserved, redis.grants,
      OWNER, TTL_MS, '1', REGISTRATION_MS, FENCE_COUNTER_TTL_MS, 'costtag0', FIRST_ASK,
    );
  } else {
    // node-redlock's acquire answers how many keys it set: 0 when it set none.
    granted = (await client.evalsha(scriptSha(step.acquireLua), 1, redis.lock, OWNER, TTL_MS)) === 0 ? null : 1;
  }
  let released: unknown;
  if (step.sends === 'redis') {
    released = await client.evalsha(
      scriptSha(step.releaseLua), 6, redis.lock, redis.waiters, redis.reserved, redis.grants, redis.fence, redis.meta,
      OWNER, 'fencelock-bench-costs:released', RESERVATION_MS, FENCE_COUNTER_TTL_MS, '',
    );
  } else {
    released = await client.evalsha(scriptSha(step.releaseLua), 1, redis.lock, OWNER);
  }
  return granted !== null && granted !== false && Number(released) === 1;
}

/** The ladder as a Markdown table, with the command that produced it. */
export function scriptCostsMarkdown(results: readonly ScriptCostResult[], command: string, title = 'Server µs per uncontended acquire + release on one Redis'): string[] {
  const lines = [
    `${title} (\`${command}\`; median of rounds, range in brackets):`,
    '',
    '| step | server µs/cycle | range | + µs | commands run per cycle |',
    '|---|---:|---|---:|---|',
  ];
  let previous: number | undefined;
  for (const result of results) {
    const added = previous === undefined ? '' : (result.serverMicrosPerCycle - previous).toFixed(2);
    const commands = Object.entries(result.callsPerCycle)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([name, count]) => `${name} ${count}`)
      .join(', ');
    lines.push(`| ${result.label} | ${result.serverMicrosPerCycle.toFixed(2)} | ${result.range.min.toFixed(2)}–${result.range.max.toFixed(2)} (${result.range.rounds}) | ${added} | ${commands} |`);
    previous = result.serverMicrosPerCycle;
  }
  return lines;
}
