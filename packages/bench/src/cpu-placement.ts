/**
 * Where the client and the servers run while a single client is measured, when asked
 * (`BENCH_PLACEMENT=apart`): the client on CPUs of its own, the servers on the others (`taskset`,
 * every thread of each process). By default they share every CPU, as the recorded runs did.
 *
 * A view for diagnosis, not the default: on a machine of few cores the servers' processes (three JVMs,
 * three etcd members, five Redis masters) run on the client's core between two of its requests, so
 * the client's code runs in caches the servers filled; placed apart it does not, and the library's
 * own cost shows without that. But placed apart on 2 cores, the client (V8's helper threads included)
 * and the servers each get one core, which is not how either runs in production either, and it moves
 * the ratios both ways (see the bench README): neither placement is the realistic one here.
 *
 * Only processes the bench or `infra` started are moved (test-infra's state file), and each gets its
 * CPUs back when the measurement ends.
 */
import { execFileSync } from 'node:child_process';
import { startedServerPids } from '@fencelock/test-infra';

/** Where the processes ran during the single-client measurements. */
export interface CpuPlacement {
  /** True when the client and the servers each had CPUs of their own. */
  readonly placed: boolean;
  /** What the report says: the CPUs of each side, or why nothing was placed. */
  readonly description: string;
  /** Gives every moved process its CPUs back. Idempotent. */
  restore(): void;
}

const TASKSET_TIMEOUT_MS = 10_000;

/** The CPUs of a `taskset -c` list (`0-3,5`), ascending; throws on anything else. */
export function parseCpuList(text: string): number[] {
  const cpus = new Set<number>();
  for (const part of text.trim().split(',')) {
    const range = /^(\d+)(?:-(\d+))?$/.exec(part.trim());
    if (range === null) throw new Error(`not a CPU list: "${text}"`);
    const first = Number(range[1]);
    const last = range[2] === undefined ? first : Number(range[2]);
    if (last < first || last - first > 4096) throw new Error(`not a CPU list: "${text}"`);
    for (let cpu = first; cpu <= last; cpu += 1) cpus.add(cpu);
  }
  return [...cpus].sort((a, b) => a - b);
}

/** `cpus` as a `taskset -c` list. */
export function formatCpuList(cpus: readonly number[]): string {
  return cpus.join(',');
}

/**
 * The client's and the servers' CPUs out of `cpus` (the bench's own): the first half (at least one)
 * for the client, the rest for the servers; `undefined` with fewer than two.
 */
export function splitCpus(cpus: readonly number[]): { client: number[]; servers: number[] } | undefined {
  if (cpus.length < 2) return undefined;
  const clientCount = Math.max(1, Math.floor(cpus.length / 2));
  return { client: cpus.slice(0, clientCount), servers: cpus.slice(clientCount) };
}

type Taskset = (args: readonly string[]) => string;

const runTaskset: Taskset = (args) => execFileSync('taskset', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: TASKSET_TIMEOUT_MS });

/** The CPUs `pid` may run on. */
export function cpusOf(pid: number, taskset: Taskset = runTaskset): number[] {
  // "pid 123's current affinity list: 0,1"
  const output = taskset(['-p', '-c', String(pid)]);
  const list = /list:\s*(\S+)\s*$/.exec(output.trim());
  if (list === null) throw new Error(`unexpected taskset output: ${output.trim()}`);
  return parseCpuList(list[1] as string);
}

/**
 * Moves `client` (every thread; children started later inherit it) to the first half of its CPUs and
 * every process of `servers` to the other half. Nothing is moved when the client has fewer than two
 * CPUs, there are no servers, or `taskset` is missing or refused: the description says which.
 */
export function placeOnCpus(client: number, servers: readonly number[], taskset: Taskset = runTaskset): CpuPlacement {
  const unplaced = (why: string): CpuPlacement => ({ placed: false, description: `client and servers on shared CPUs (${why})`, restore: () => undefined });
  if (servers.length === 0) return unplaced('no servers started by the bench or `infra` to move');
  let own: number[];
  try {
    own = cpusOf(client, taskset);
  } catch (error) {
    return unplaced(`taskset failed: ${(error as Error).message.split('\n')[0]}`);
  }
  const split = splitCpus(own);
  if (split === undefined) return unplaced(`the bench may use ${own.length} CPU only`);
  const moved: { pid: number; cpus: number[] }[] = [];
  const restore = (): void => {
    for (const { pid, cpus } of moved.splice(0).reverse()) {
      // A server that exited meanwhile has nothing to get back.
      try {
        taskset(['-a', '-p', '-c', formatCpuList(cpus), String(pid)]);
      } catch {}
    }
  };
  try {
    for (const pid of servers) {
      const before = cpusOf(pid, taskset);
      taskset(['-a', '-p', '-c', formatCpuList(split.servers), String(pid)]);
      moved.push({ pid, cpus: before });
    }
    taskset(['-a', '-p', '-c', formatCpuList(split.client), String(client)]);
    moved.push({ pid: client, cpus: own });
  } catch (error) {
    restore();
    return unplaced(`taskset failed: ${(error as Error).message.split('\n')[0]}`);
  }
  const cpuWord = (cpus: readonly number[]): string => `CPU${cpus.length === 1 ? '' : 's'} ${formatCpuList(cpus)}`;
  return {
    placed: true,
    description: `client on ${cpuWord(split.client)}, servers on ${cpuWord(split.servers)}`,
    restore,
  };
}

/**
 * The placement `BENCH_PLACEMENT` asks for: `apart` moves this process (the client) and the servers
 * `infra` started (test-infra's state file) apart with {@link placeOnCpus}; `shared` (the default)
 * moves nothing. Whatever is moved gets its CPUs back at `restore()` or when the process exits,
 * whichever comes first.
 */
export function benchPlacement(env: NodeJS.ProcessEnv = process.env): CpuPlacement {
  const asked = env['BENCH_PLACEMENT'] ?? 'shared';
  if (asked === 'shared') return { placed: false, description: 'client and servers on shared CPUs', restore: () => undefined };
  if (asked !== 'apart') throw new Error(`BENCH_PLACEMENT must be "shared" (the default) or "apart", not "${asked}"`);
  const placement = placeOnCpus(process.pid, startedServerPids());
  if (placement.placed) process.once('exit', placement.restore);
  return placement;
}
