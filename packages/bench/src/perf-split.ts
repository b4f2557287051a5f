/**
 * Where a cycle's client CPU goes, down to the kernel: each subject's sequential acquire + release
 * loop runs in a process of its own under Linux `perf record` (a CPU-clock sample every 100 µs of CPU
 * of any of its threads, with call stacks; V8 names its compiled code through `--perf-basic-prof`).
 * V8's own profiler (scenario 4b) sees JavaScript only: the syscalls, the garbage collector, the
 * inline caches and the promise machinery all land in its "runtime". Here every sample of the
 * measured cycles is put in two ways:
 *
 * - by the kind of work its innermost frame does (see {@link WORK_KINDS}): JavaScript, V8 builtins,
 *   the garbage collector, the compilers, the rest of V8 and Node, the C library, the kernel, and the
 *   process's other threads (V8's background GC and compiler, libuv's pool);
 * - by whose behalf: the innermost JavaScript frame of its stack that a package owns, by the rule of
 *   the allocation split (allocation-owners.ts), so that a socket write in the kernel counts for the
 *   client library that wrote and `randomUUID` for the code that called it; no such frame: the runtime.
 *
 * The samples of the measured window only (the worker reads CLOCK_MONOTONIC around it, the clock perf
 * stamps samples with), divided by its cycles: µs per cycle. Their sum is checked against the
 * process's CPU over the window, which the table shows next to it.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { frameOwner, RUNTIME, type FrameOwner, type OwnerGroup } from './allocation-owners.js';
import type { PerfWindow } from './perf-split-worker.js';
import { round } from './stats.js';

/** The kinds of work a sample's innermost frame does, in the order the tables show them. */
export const WORK_KINDS = ['JavaScript', 'V8 builtins', 'garbage collector', 'compilers', 'V8 and Node, other', 'C library', 'kernel', 'other threads'] as const;

/** One of {@link WORK_KINDS}. */
export type WorkKind = (typeof WORK_KINDS)[number];

/** One frame of a sample's stack, as `perf script` prints it: the symbol and the object it is in. */
export interface PerfFrame {
  readonly symbol: string;
  readonly dso: string;
}

/** CPU µs of one sample: perf is asked for one every {@link SAMPLE_PERIOD_NS} of CPU time. */
export const SAMPLE_PERIOD_NS = 100_000;

const GC = /heap::|Heap::|Heap[A-Z]|Scaveng|MarkCompact|MinorMS|Sweep|Evacuat|Marking|GarbageCollect|GCTracer|NewSpace|PagedSpace|LargeObjectSpace|MemoryAllocator|MemoryChunk|Compactor/;
const COMPILERS = /compiler::|maglev::|Maglev|baseline::|Baseline|Compiler|Compile|Parser|parsing::|BytecodeGenerator|BytecodeArray|Scanner|interpreter::|Zone::|Turbofan|TurboFan/;
const C_LIBRARY = /\/(libc|libm|libstdc\+\+|libpthread|libgcc_s|ld-linux[^/]*)\.so|^\[vdso\]$/;

// A frame in code V8 made (named through its perf map, or not named at all).
const JIT_DSO = /(^|\/)perf-\d+\.map$|^\[JIT\]|^\[unknown\]$/;

/** The kind of work of a sample whose innermost frame is `leaf`, taken on the main thread or not. */
export function workKind(leaf: PerfFrame | undefined, mainThread: boolean): WorkKind {
  if (!mainThread) return 'other threads';
  if (leaf === undefined) return 'V8 and Node, other';
  const { symbol, dso } = leaf;
  if (dso === '[kernel.kallsyms]' || dso.startsWith('[kernel')) return 'kernel';
  if (symbol.startsWith('JS:') || JIT_DSO.test(dso)) return 'JavaScript';
  if (symbol.startsWith('Builtins_') || symbol.startsWith('Builtin:')) return 'V8 builtins';
  if (C_LIBRARY.test(dso)) return 'C library';
  if (GC.test(symbol)) return 'garbage collector';
  if (COMPILERS.test(symbol)) return 'compilers';
  return 'V8 and Node, other';
}

/** The script URL of a V8 code symbol (`JS:*name url:line:column`), or `undefined` for other frames. */
export function jsFrameUrl(symbol: string): string | undefined {
  if (!symbol.startsWith('JS:')) return undefined;
  const last = symbol.slice(symbol.lastIndexOf(' ') + 1);
  return last.replace(/:\d+:\d+$/, '');
}

/** The owner a sample is charged to: its innermost JavaScript frame that a package owns (see the module comment). */
export function chargedOwner(frames: readonly PerfFrame[]): { readonly owner: FrameOwner; readonly frame: string | undefined } {
  for (const { symbol } of frames) {
    const url = jsFrameUrl(symbol);
    if (url === undefined) continue;
    const owner = frameOwner(url);
    if (owner !== undefined) return { owner, frame: shortFrame(symbol) };
  }
  return { owner: RUNTIME, frame: undefined };
}

// `JS:*#acquire file:///…/packages/core/dist/chunk-X.js:2039:17` → `#acquire (core/dist/chunk-X.js:2039)`.
function shortFrame(symbol: string): string {
  const space = symbol.lastIndexOf(' ');
  const name = symbol.slice(4, space === -1 ? undefined : space) || '(anonymous)';
  const where = symbol
    .slice(space + 1)
    .replace(/^.*\/(packages|node_modules)\//, '')
    .replace(/^\.pnpm\/[^/]+\/node_modules\//, '')
    .replace(/:(\d+):\d+$/, ':$1');
  return `${name} (${where})`;
}

/** µs of CPU per cycle, in each split. */
export interface PerfSplit {
  readonly subject: string;
  readonly label: string;
  readonly cycles: number;
  /** The process's user + system CPU over the measured cycles (`process.cpuUsage`), per cycle. */
  readonly cpuMicrosPerCycle: number;
  /** What the samples add up to, per cycle (close to the CPU above: a check). */
  readonly sampledMicrosPerCycle: number;
  readonly byKind: Readonly<Record<WorkKind, number>>;
  readonly byGroup: Readonly<Record<OwnerGroup, number>>;
  /** Each owner (a package name, `fencelock`, `harness`, `runtime`), largest first. */
  readonly byOwner: readonly { readonly name: string; readonly group: OwnerGroup; readonly micros: number }[];
  /** fencelock's functions by what is charged to them (their own code and what they called outside any package), largest first. */
  readonly fencelockFunctions: readonly { readonly frame: string; readonly micros: number }[];
}

/**
 * V8's JIT symbol map for perf (`/tmp/perf-<pid>.map`, written by `--perf-basic-prof`): one line per
 * piece of code V8 made, `<start hex> <size hex> <name>`, in the order it made them. Code is freed
 * and its memory reused for other code, so an address may lie in several entries: perf takes an
 * old one (a function of a package loaded at startup, long gone), this the newest, which is the
 * code that ran when the bench measures after its warm-up.
 */
export function resolveJitAddresses(mapText: string, addresses: Iterable<number>): Map<number, string> {
  const sorted = [...new Set(addresses)].sort((a, b) => a - b);
  const names = new Map<number, string>();
  for (const line of mapText.split('\n')) {
    const match = /^([0-9a-f]+) ([0-9a-f]+) (.*)$/.exec(line);
    if (match === null) continue;
    const start = Number.parseInt(match[1] ?? '', 16);
    const end = start + Number.parseInt(match[2] ?? '', 16);
    let low = 0;
    let high = sorted.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if ((sorted[mid] ?? 0) < start) low = mid + 1;
      else high = mid;
    }
    for (let i = low; i < sorted.length && (sorted[i] ?? end) < end; i += 1) names.set(sorted[i] ?? 0, match[3] ?? '');
  }
  return names;
}

interface Sample {
  readonly mainThread: boolean;
  readonly frames: readonly (PerfFrame & { readonly ip: number })[];
}

/**
 * Adds the samples of `perf script` output lines (`-F comm,pid,tid,time,ip,sym,dso`) into a split;
 * code V8 made is named by {@link resolveJitAddresses} when the map is given to {@link result}.
 */
export class PerfSamples {
  readonly #samples: Sample[] = [];
  readonly #strings = new Map<string, string>();
  #frames: (PerfFrame & { ip: number })[] = [];
  #mainThread = false;
  #inSample = false;

  /** Reads one line of the output. */
  line(text: string): void {
    if (text.trim() === '') {
      this.#end();
      return;
    }
    if (!text.startsWith('\t') && !text.startsWith(' ')) {
      this.#end();
      // `comm pid/tid time:` (the command name may contain spaces: the pid/tid pair is the anchor).
      const ids = /\s(\d+)\/(\d+)\s/.exec(text);
      this.#mainThread = ids !== null && ids[1] === ids[2];
      this.#inSample = true;
      return;
    }
    // `\t ffffffff8160ac34 do_mmap ([kernel.kallsyms])`
    const frame = /^\s*([0-9a-f]+)\s+(.*?)\s+\(([^()]*)\)\s*$/.exec(text);
    if (frame !== null) this.#frames.push({ ip: Number.parseInt(frame[1] ?? '0', 16), symbol: this.#intern(frame[2] ?? ''), dso: this.#intern(frame[3] ?? '') });
  }

  #intern(text: string): string {
    const known = this.#strings.get(text);
    if (known !== undefined) return known;
    this.#strings.set(text, text);
    return text;
  }

  #end(): void {
    if (!this.#inSample) return;
    this.#inSample = false;
    this.#samples.push({ mainThread: this.#mainThread, frames: this.#frames });
    this.#frames = [];
  }

  /** The addresses of the frames in code V8 made, to be named from its perf map. */
  jitAddresses(): number[] {
    this.#end();
    return this.#samples.flatMap((sample) => sample.frames.filter((frame) => JIT_DSO.test(frame.dso)).map((frame) => frame.ip));
  }

  /** The split, per cycle; `jitNames` (from {@link resolveJitAddresses}) names the frames in code V8 made. */
  result(subject: { readonly id: string; readonly label: string }, window: Pick<PerfWindow, 'cycles' | 'cpuMicros'>, jitNames?: ReadonlyMap<number, string>): PerfSplit {
    this.#end();
    const kinds = new Map<WorkKind, number>();
    const owners = new Map<string, { group: OwnerGroup; samples: number }>();
    const functions = new Map<string, number>();
    for (const sample of this.#samples) {
      const frames = jitNames === undefined ? sample.frames : sample.frames.map((frame) => (JIT_DSO.test(frame.dso) ? { ...frame, symbol: jitNames.get(frame.ip) ?? frame.symbol } : frame));
      const kind = workKind(frames[0], sample.mainThread);
      kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
      const { owner, frame } = chargedOwner(frames);
      const entry = owners.get(owner.name) ?? { group: owner.group, samples: 0 };
      entry.samples += 1;
      owners.set(owner.name, entry);
      if (owner.group === 'fencelock' && frame !== undefined) functions.set(frame, (functions.get(frame) ?? 0) + 1);
    }
    const perCycle = (samples: number): number => round((samples * SAMPLE_PERIOD_NS) / 1000 / window.cycles, 1);
    const byKind = Object.fromEntries(WORK_KINDS.map((kind) => [kind, perCycle(kinds.get(kind) ?? 0)])) as Record<WorkKind, number>;
    const groups: OwnerGroup[] = ['fencelock', 'library', 'harness', 'runtime'];
    const byGroup = Object.fromEntries(
      groups.map((group) => [group, perCycle([...owners.values()].filter((o) => o.group === group).reduce((sum, o) => sum + o.samples, 0))]),
    ) as Record<OwnerGroup, number>;
    return {
      subject: subject.id,
      label: subject.label,
      cycles: window.cycles,
      cpuMicrosPerCycle: round(window.cpuMicros / window.cycles, 1),
      sampledMicrosPerCycle: perCycle(this.#samples.length),
      byKind,
      byGroup,
      byOwner: [...owners].map(([name, { group, samples }]) => ({ name, group, micros: perCycle(samples) })).sort((a, b) => b.micros - a.micros),
      fencelockFunctions: [...functions].map(([frame, samples]) => ({ frame, micros: perCycle(samples) })).sort((a, b) => b.micros - a.micros),
    };
  }
}

/** Bounds of one subject's measurement. */
export interface PerfSplitOptions {
  readonly cycles: number;
  readonly warmupCycles: number;
}

const WORKER = fileURLToPath(new URL('./perf-split-worker.ts', import.meta.url));
// Where V8's --perf-basic-prof writes its map, whatever TMPDIR says (perf reads it from there too).
const perfMapOf = (pid: number): string => `/tmp/perf-${pid}.map`;
const PACKAGE_DIR = fileURLToPath(new URL('..', import.meta.url));

/** `ns` (a decimal string of CLOCK_MONOTONIC nanoseconds) as `perf script --time` wants it: seconds. */
export function perfSeconds(ns: string): string {
  const padded = ns.padStart(10, '0');
  return `${padded.slice(0, -9)}.${padded.slice(-9)}`;
}

/** Measures one subject (see the module comment). Needs `perf` and the right to sample one's own processes. */
export async function runPerfSplit(subject: { readonly id: string; readonly label: string }, options: PerfSplitOptions): Promise<PerfSplit> {
  const dir = mkdtempSync(join(tmpdir(), 'fencelock-perf-'));
  const data = join(dir, 'perf.data');
  let pid: number | undefined;
  try {
    const recorded = await run('perf', [
      'record', '--no-buildid-cache', '-e', 'cpu-clock', '-c', String(SAMPLE_PERIOD_NS), '-g', '-k', 'CLOCK_MONOTONIC', '-o', data, '--',
      // V8 logs code as it makes it, not as it moves it: without compaction, code stays where it was named.
      process.execPath, '--perf-basic-prof', '--no-compact-code-space', '--import', 'tsx', WORKER,
      subject.id, String(options.cycles), String(options.warmupCycles),
    ]);
    const line = recorded.stdout.split('\n').find((text) => text.startsWith('{'));
    if (recorded.code !== 0 || line === undefined) throw new Error(`perf record of ${subject.id} failed (exit ${recorded.code}): ${recorded.stderr.trim().slice(-2000)}`);
    const window = JSON.parse(line) as PerfWindow;
    pid = window.pid;
    const samples = new PerfSamples();
    const script = spawn('perf', ['script', '-i', data, '-F', 'comm,pid,tid,time,ip,sym,dso', '--pid', String(pid), '--time', `${perfSeconds(window.startNs)},${perfSeconds(window.endNs)}`], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    script.stderr.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-4000);
    });
    const exited = new Promise<number | null>((resolve, reject) => {
      script.on('error', reject);
      script.on('close', resolve);
    });
    for await (const text of createInterface({ input: script.stdout, crlfDelay: Number.POSITIVE_INFINITY })) samples.line(text);
    const code = await exited;
    if (code !== 0) throw new Error(`perf script of ${subject.id} failed (exit ${code}): ${stderr.trim()}`);
    const map = readFileSync(perfMapOf(pid), 'utf8');
    return samples.result(subject, window, resolveJitAddresses(map, samples.jitAddresses()));
  } finally {
    rmSync(dir, { recursive: true, force: true });
    // The JIT symbol map V8 wrote for perf (--perf-basic-prof), one per process.
    if (pid !== undefined) rmSync(perfMapOf(pid), { force: true });
  }
}

// Runs `command` to its end; a missing command is reported by name.
function run(command: string, args: readonly string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: PACKAGE_DIR, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-20_000);
    });
    child.on('error', (error: NodeJS.ErrnoException) => {
      reject(error.code === 'ENOENT' ? new Error(`${command} is not installed: bench:perf-split needs Linux perf (Debian: apt-get install linux-perf)`) : error);
    });
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The tables of a run, with the command that made it. */
export function perfSplitMarkdown(results: readonly PerfSplit[], command: string): string[] {
  const f = (value: number): string => value.toFixed(1);
  const lines = [
    `CPU µs per acquire + release cycle, one client, one key, each subject in a process of its own under \`perf record\` (command: \`${command}\`).`,
    '"process CPU" is `process.cpuUsage()` over the measured cycles; "sampled" is what the samples add up to.',
    '',
    'By the kind of work the sample was doing (its innermost frame):',
    '',
    `| subject | process CPU | sampled | ${WORK_KINDS.join(' | ')} |`,
    `|---|---:|---:|${WORK_KINDS.map(() => '---:').join('|')}|`,
    ...results.map((r) => `| ${r.label} | ${f(r.cpuMicrosPerCycle)} | ${f(r.sampledMicrosPerCycle)} | ${WORK_KINDS.map((kind) => f(r.byKind[kind])).join(' | ')} |`),
    '',
    'On whose behalf (the innermost frame of a package: fencelock, a client library, the bench harness; none: the runtime):',
    '',
    '| subject | fencelock | client libraries | harness | runtime | largest owners |',
    '|---|---:|---:|---:|---:|---|',
    ...results.map(
      (r) =>
        `| ${r.label} | ${f(r.byGroup.fencelock)} | ${f(r.byGroup.library)} | ${f(r.byGroup.harness)} | ${f(r.byGroup.runtime)} | ${r.byOwner
          .slice(0, 4)
          .map((o) => `${o.name} ${f(o.micros)}`)
          .join(', ')} |`,
    ),
  ];
  for (const r of results.filter((result) => result.fencelockFunctions.length > 0)) {
    const top = r.fencelockFunctions.slice(0, 12).map((fn) => `\`${fn.frame}\` ${f(fn.micros)}`);
    lines.push('', `fencelock's functions in ${r.label} (µs per cycle charged to each, with what it called outside any package): ${top.join(', ')}.`);
  }
  return lines;
}
