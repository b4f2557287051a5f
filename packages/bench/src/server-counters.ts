/**
 * Server-side counters, read over the servers' own admin interfaces, so the bench counts what the
 * servers saw rather than what the client believes it sent:
 * - Redis: `INFO commandstats` (calls per command; commands a script runs count too);
 * - ZooKeeper: the `mntr` four-letter word (packets received, watches fired per event type);
 * - etcd: the Prometheus text on each member's client URL, `/metrics` (gRPC messages by method,
 *   watch events sent).
 * Each probe returns flat `name → value` snapshots summed over every server it covers; a
 * {@link CounterDelta} is the difference of two snapshots.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { fourLetterWord, redisCommand } from '@fencelock/test-infra';

/** A flat snapshot: counter name → value, summed over the servers of one backend. */
export type CounterSnapshot = Readonly<Record<string, number>>;

/** `after − before` per counter (counters missing from a side count as 0). */
export type CounterDelta = Readonly<Record<string, number>>;

/** Reads one backend's counters. */
export interface CounterProbe {
  /** What it reads, for the docs (e.g. `INFO commandstats on 127.0.0.1:6379`). */
  readonly source: string;
  read(): Promise<CounterSnapshot>;
}

/** `after − before`. */
export function counterDelta(before: CounterSnapshot, after: CounterSnapshot): CounterDelta {
  const delta: Record<string, number> = {};
  for (const name of new Set([...Object.keys(before), ...Object.keys(after)])) {
    delta[name] = (after[name] ?? 0) - (before[name] ?? 0);
  }
  return delta;
}

/** Sum of the deltas whose names match `pattern`. */
export function sumMatching(delta: CounterDelta, pattern: RegExp): number {
  let sum = 0;
  for (const [name, value] of Object.entries(delta)) if (pattern.test(name)) sum += value;
  return sum;
}

function addInto(target: Record<string, number>, source: CounterSnapshot): void {
  for (const [name, value] of Object.entries(source)) target[name] = (target[name] ?? 0) + value;
}

const portOf = (address: string): number => {
  const port = Number(/:(\d+)\/?$/.exec(address)?.[1]);
  if (!Number.isInteger(port) || port <= 0) throw new Error(`no port in ${address}`);
  return port;
};

/**
 * Parses `INFO commandstats` into `cmdstat_<command>` → µs the server spent running it (a script's
 * own commands are counted in the script's time and again under their own names).
 */
export function parseCommandMicros(text: string): CounterSnapshot {
  const micros: Record<string, number> = {};
  for (const match of text.matchAll(/^cmdstat_([^:]+):calls=\d+,usec=(\d+)/gm)) micros[`cmdstat_${match[1] ?? ''}`] = Number(match[2]);
  return micros;
}

/**
 * A reader of the µs the Redis servers at `urls` have spent so far (summed) on the commands `clientCommands` matches
 * (`cmdstat_<command>` names): the commands a client sends itself, not those its scripts run (their
 * time is inside the script's), and not INFO, which the reader itself sends.
 */
export function redisServerMicros(urls: readonly string[], clientCommands: RegExp): () => Promise<number> {
  const ports = urls.map(portOf);
  return async () => {
    let total = 0;
    for (const port of ports) total += sumMatching(parseCommandMicros(String(await redisCommand(port, ['INFO', 'commandstats']))), clientCommands);
    return total;
  };
}

/**
 * A reader of the CPU time (µs) the processes `pids` have spent on a CPU so far, all their threads
 * summed, from each thread's `/proc/<pid>/task/<tid>/schedstat` (nanoseconds, where `/proc/<pid>/stat`
 * counts 10 ms ticks). For a server that is everything it did for its clients: the commands or
 * transactions, parsing and answering them, the socket calls, its replication and disk writes.
 * A thread that ended between two reads takes its time with it; the servers here keep theirs.
 */
export function processCpuMicros(pids: readonly number[]): () => number {
  return () => {
    let nanos = 0;
    for (const pid of pids) {
      for (const tid of readdirSync(`/proc/${pid}/task`)) nanos += threadNanos(`/proc/${pid}/task/${tid}/schedstat`);
    }
    return nanos / 1_000;
  };
}

// A thread may end between the listing and the read: it counts for nothing.
function threadNanos(path: string): number {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT' || (error as NodeJS.ErrnoException).code === 'ESRCH') return 0;
    throw error;
  }
  return parseSchedstatNanos(text);
}

/** The first field of a `schedstat` line: time spent on a CPU, ns. */
export function parseSchedstatNanos(text: string): number {
  const first = /^\d+(?=\s|$)/.exec(text.trim())?.[0];
  if (first === undefined) throw new Error(`not a schedstat line: ${JSON.stringify(text)}`);
  return Number(first);
}

/** Parses `INFO commandstats` into `cmdstat_<command>` → calls. */
export function parseCommandStats(text: string): CounterSnapshot {
  const stats: Record<string, number> = {};
  for (const match of text.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) stats[`cmdstat_${match[1] ?? ''}`] = Number(match[2]);
  return stats;
}

/** `INFO commandstats` of every Redis in `urls`, summed (the probe's own INFO calls are in `cmdstat_info`). */
export function redisCounterProbe(urls: readonly string[]): CounterProbe {
  const ports = urls.map(portOf);
  return {
    source: `INFO commandstats on ${ports.map((p) => `:${p}`).join(', ')}`,
    async read() {
      const total: Record<string, number> = {};
      for (const port of ports) addInto(total, parseCommandStats(String(await redisCommand(port, ['INFO', 'commandstats']))));
      return total;
    },
  };
}

/** Parses `mntr` (`name<TAB>value` lines), keeping the numeric ones. */
export function parseMntr(text: string): CounterSnapshot {
  const values: Record<string, number> = {};
  for (const line of text.split('\n')) {
    const [name, value] = line.split('\t');
    if (name !== undefined && value !== undefined && /^-?\d+(\.\d+)?$/.test(value.trim())) values[name] = Number(value);
  }
  return values;
}

/** `mntr` of every member of `connectionString` (`host:port,…`), summed. */
export function zooKeeperCounterProbe(connectionString: string): CounterProbe {
  const ports = connectionString.split(',').map(portOf);
  return {
    source: `mntr on ${ports.map((p) => `:${p}`).join(', ')}`,
    async read() {
      const total: Record<string, number> = {};
      for (const port of ports) addInto(total, parseMntr(await fourLetterWord(port, 'mntr', 2_000)));
      return total;
    },
  };
}

/**
 * Parses the Prometheus text format, keeping counters whose name matches `keep`; the name keeps
 * its labels (`grpc_server_msg_received_total{grpc_method="Range",…}`).
 */
export function parsePrometheus(text: string, keep: RegExp): CounterSnapshot {
  const values: Record<string, number> = {};
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    if (space <= 0) continue;
    const name = line.slice(0, space);
    if (!keep.test(name)) continue;
    const value = Number(line.slice(space + 1));
    if (Number.isFinite(value)) values[name] = value;
  }
  return values;
}

const ETCD_COUNTERS = /^(grpc_server_msg_received_total|grpc_server_handled_total|etcd_debugging_mvcc_events_total|etcd_debugging_mvcc_watcher_total|etcd_mvcc_(put|delete|range|txn)_total)/;

/** `/metrics` of every etcd member in `endpoints`, summed (gRPC counters by method, watch events). */
export function etcdCounterProbe(endpoints: readonly string[]): CounterProbe {
  return {
    source: `/metrics on ${endpoints.join(', ')}`,
    async read() {
      const total: Record<string, number> = {};
      for (const endpoint of endpoints) {
        const response = await fetch(`${endpoint.replace(/\/$/, '')}/metrics`, { signal: AbortSignal.timeout(2_000) });
        if (!response.ok) throw new Error(`${endpoint}/metrics answered ${response.status}`);
        addInto(total, parsePrometheus(await response.text(), ETCD_COUNTERS));
      }
      return total;
    },
  };
}
