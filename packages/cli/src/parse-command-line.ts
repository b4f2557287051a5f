import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import { MAX_ELECTION_VALUE_BYTES, MAX_METADATA_BYTES, type LockMode } from '@fencelock/core';
import { validateKey, validateSemaphoreLimit } from '@fencelock/core/adapter';
import { resolveBackendConfig, type BackendConfig } from './backend-config.js';
import { COMMAND_NAMES, COMMAND_OPTIONS, GLOBAL_OPTIONS, type CommandName, type OptionSpec } from './cli-options.js';
import { parseDuration } from './duration.js';
import { ExitCode } from './exit-codes.js';
import { UsageError } from './usage-error.js';

/** Settings every command has. */
export interface GlobalSettings {
  /** Where to lock. */
  readonly backend: BackendConfig;
  /** Progress and outcome lines on stderr. */
  readonly verbose: boolean;
  /** Stack traces and causes in error output. */
  readonly debug: boolean;
}

/** What `fencelock hold` was asked to do. */
export interface HoldSettings extends GlobalSettings {
  /** The lock key, checked by core's key rule. */
  readonly key: string;
  /** The command and its arguments (everything after `--`), run without a shell. */
  readonly command: readonly string[];
  /** How long to wait for the lock, in ms: `0` tries once, `Infinity` waits until interrupted. */
  readonly waitMs: number;
  /** The lock's TTL (or the session timeout on session backends), in ms; `undefined` keeps the backend's default. */
  readonly ttlMs: number | undefined;
  /** Time between SIGTERM and SIGKILL when the lock is lost, in ms. */
  readonly killGraceMs: number;
  /** The longest the lock may be held, in ms; `undefined` for no bound. */
  readonly maxHoldMs: number | undefined;
  /** Exclusive, or shared with `--shared`; unused when {@link semaphore} is set. */
  readonly mode: LockMode;
  /**
   * With `--permits`: hold permits of the counting semaphore `key` instead of the lock. `limit` is
   * the semaphore's number of permits (`--permits`), `permits` how many this hold takes (`--take`).
   */
  readonly semaphore: SemaphoreRequest | undefined;
  /**
   * With `fencelock elect`: campaign for the leadership of the election `key` instead of taking the
   * lock; the command runs while this campaigner leads.
   */
  readonly election: ElectionRequest | undefined;
  /** Stored with the lock and shown by `inspect`. */
  readonly metadata: string;
  /** The exit status when the lock is not acquired. */
  readonly conflictExitCode: number;
  /** Keep the command in fencelock's process group. */
  readonly foreground: boolean;
}

/** The counting semaphore a `hold --permits` asks for. */
export interface SemaphoreRequest {
  /** The semaphore's limit: how many permits it has (`--permits`). */
  readonly limit: number;
  /** How many of them this hold takes at once (`--take`, default 1). */
  readonly permits: number;
}

/** The leadership a `fencelock elect` campaigns for. */
export interface ElectionRequest {
  /** Who this campaigner is (`--value`, default `<hostname>:<pid>`), checked by core's rule. */
  readonly value: string;
}

/** What `fencelock inspect` was asked to do. */
export interface InspectSettings extends GlobalSettings {
  /** The lock key. */
  readonly key: string;
  /** One JSON object instead of text. */
  readonly json: boolean;
  /** Show the counting semaphore `key` (`--semaphore`) instead of the lock. */
  readonly semaphore: boolean;
  /** Show the leader of the election `key` (`--election`) instead of the lock. */
  readonly election: boolean;
}

/** A parsed command line. */
export type Invocation =
  | { readonly kind: 'help'; readonly command: CommandName | undefined }
  | { readonly kind: 'version' }
  | { readonly kind: 'hold'; readonly settings: HoldSettings }
  | { readonly kind: 'elect'; readonly settings: HoldSettings }
  | { readonly kind: 'inspect'; readonly settings: InspectSettings };

/** How long `hold` waits for the lock without `--wait`, in ms: bounded, like the library's `acquire`. */
export const DEFAULT_WAIT_MS = 30_000;
/** Time between SIGTERM and SIGKILL after a loss without `--kill-grace`, in ms. */
export const DEFAULT_KILL_GRACE_MS = 2_000;

type ParseArgsOptions = Record<string, { type: 'string' | 'boolean'; short?: string }>;
type Values = Record<string, string | boolean | undefined>;

/**
 * Reads a command line (without `node` and the script): checks every flag, duration, address and
 * key, so that bad input is refused before any network call.
 * @throws UsageError with a message that says what was wrong.
 */
export function parseCommandLine(argv: readonly string[], env: Readonly<Record<string, string | undefined>>): Invocation {
  const all = [...GLOBAL_OPTIONS, ...COMMAND_NAMES.flatMap((name) => COMMAND_OPTIONS[name])];
  const terminator = argv.indexOf('--');
  const head = terminator >= 0 ? argv.slice(0, terminator) : argv;
  // Help and version win over everything else on the line (before `--`), as users expect.
  const wantsHelp = head.includes('--help') || head.includes('-h');
  const firstWord = head.find((arg) => !arg.startsWith('-'));
  const helpTopic = COMMAND_NAMES.find((name) => name === firstWord);
  if (firstWord === 'help') {
    const topic = head[head.indexOf('help') + 1];
    return { kind: 'help', command: COMMAND_NAMES.find((name) => name === topic) };
  }
  if (wantsHelp) return { kind: 'help', command: helpTopic };
  if (head.includes('--version')) return { kind: 'version' };

  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args: [...argv], options: toParseArgs(all), allowPositionals: true, strict: true, tokens: true });
  } catch (error) {
    throw new UsageError(parseArgsMessage(error), helpTopic);
  }
  const tokens = parsed.tokens ?? [];
  const terminatorToken = tokens.find((token) => token.kind === 'option-terminator');
  const beforeTerminator = tokens.filter((token) => terminatorToken === undefined || token.index < terminatorToken.index);
  const words = beforeTerminator.flatMap((token) => (token.kind === 'positional' ? [token.value] : []));
  const commandWord = words[0];
  if (commandWord === undefined) throw new UsageError('no command given: use "fencelock hold <key> -- <command…>" or "fencelock inspect <key>"');
  const command = COMMAND_NAMES.find((name) => name === commandWord);
  if (command === undefined) throw new UsageError(`unknown command ${JSON.stringify(commandWord)} (commands: ${COMMAND_NAMES.join(', ')})`);

  // Each flag must belong to this command (or be global): `inspect --wait 5s` is a mistake worth saying.
  const allowed = new Set([...GLOBAL_OPTIONS, ...COMMAND_OPTIONS[command]].map((option) => option.name));
  for (const token of beforeTerminator) {
    if (token.kind === 'option' && !allowed.has(token.name)) {
      throw new UsageError(`${token.rawName} is not an option of "fencelock ${command}"`, command);
    }
  }
  const values = parsed.values as Values;
  const global = {
    backend: resolveBackendConfig(values, env),
    verbose: values.verbose === true,
    debug: values.debug === true,
  };
  const key = checkKey(words[1], command);
  if (words.length > 2) {
    const extra = words[2] as string;
    const advice = command !== 'inspect' ? '; put the command after --' : '';
    throw new UsageError(`unexpected argument ${JSON.stringify(extra)}${advice}`, command);
  }

  if (command === 'inspect') {
    if (terminatorToken !== undefined) throw new UsageError('"fencelock inspect" takes no command after --', command);
    if (values.semaphore === true && values.election === true) throw new UsageError('give either --semaphore or --election, not both', command);
    return { kind: 'inspect', settings: { ...global, key, json: values.json === true, semaphore: values.semaphore === true, election: values.election === true } };
  }

  if (terminatorToken === undefined) {
    throw new UsageError(`missing "--" and the command to run, e.g. ${example(command)}`, command);
  }
  const commandLine = argv.slice(terminatorToken.index + 1);
  if (commandLine.length === 0 || commandLine[0] === '') {
    throw new UsageError(`no command after "--", e.g. ${example(command)}`, command);
  }
  try {
    if (command === 'elect') return { kind: 'elect', settings: { ...global, ...electSettings(values, key, commandLine) } };
    return { kind: 'hold', settings: { ...global, ...holdSettings(values, key, commandLine) } };
  } catch (error) {
    // Duration errors know their flag, not their command: point them at hold's help.
    throw error instanceof UsageError && error.command === undefined ? new UsageError(error.message, command) : error;
  }
}

function example(command: CommandName): string {
  return command === 'elect' ? 'fencelock elect scheduler -- ./run-scheduler.sh' : 'fencelock hold my-job -- ./run-job.sh';
}

function textOf(values: Values): (name: string) => string | undefined {
  return (name) => (typeof values[name] === 'string' ? (values[name] as string) : undefined);
}

/** `--wait` / `--no-wait` in ms; `defaultMs` without either. */
function waitValue(values: Values, defaultMs: number, command: CommandName): number {
  const waitText = textOf(values)('wait');
  if (values['no-wait'] === true && waitText !== undefined) {
    throw new UsageError('give either --wait or --no-wait, not both', command);
  }
  return values['no-wait'] === true ? 0 : waitText === undefined ? defaultMs : parseDuration(waitText, '--wait', { allowZero: true, allowForever: true });
}

/** The settings `hold` and `elect` share: the lifetime, the kill grace, `--max-hold`, the conflict status, the process group. */
function runSettings(values: Values): Pick<HoldSettings, 'ttlMs' | 'killGraceMs' | 'maxHoldMs' | 'conflictExitCode' | 'foreground'> {
  const text = textOf(values);
  const ttlText = text('ttl');
  const graceText = text('kill-grace');
  const maxHoldText = text('max-hold');
  return {
    ttlMs: ttlText === undefined ? undefined : parseDuration(ttlText, '--ttl'),
    killGraceMs: graceText === undefined ? DEFAULT_KILL_GRACE_MS : parseDuration(graceText, '--kill-grace', { allowZero: true }),
    maxHoldMs: maxHoldText === undefined ? undefined : parseDuration(maxHoldText, '--max-hold'),
    conflictExitCode: exitCodeValue(text('conflict-exit-code')),
    foreground: values.foreground === true,
  };
}

function holdSettings(values: Values, key: string, command: readonly string[]): Omit<HoldSettings, keyof GlobalSettings> {
  const text = textOf(values);
  const metadata = text('metadata') ?? defaultMetadata(command);
  if (!metadata.isWellFormed() || Buffer.byteLength(metadata, 'utf8') > MAX_METADATA_BYTES) {
    throw new UsageError(`--metadata must be well-formed text of at most ${MAX_METADATA_BYTES} UTF-8 bytes`, 'hold');
  }
  return {
    key,
    command,
    waitMs: waitValue(values, DEFAULT_WAIT_MS, 'hold'),
    ...runSettings(values),
    mode: values.shared === true ? 'shared' : 'exclusive',
    semaphore: semaphoreRequest(text('permits'), text('take'), values.shared === true),
    election: undefined,
    metadata,
  };
}

/**
 * `elect`'s settings: a campaign waits until elected unless `--wait` bounds it (a standby leader
 * is meant to wait), and stands with `--value` or `<hostname>:<pid>`.
 */
function electSettings(values: Values, name: string, command: readonly string[]): Omit<HoldSettings, keyof GlobalSettings> {
  const value = textOf(values)('value') ?? `${hostname().toWellFormed()}:${process.pid}`;
  if (!value.isWellFormed() || Buffer.byteLength(value, 'utf8') > MAX_ELECTION_VALUE_BYTES) {
    throw new UsageError(`--value must be well-formed text of at most ${MAX_ELECTION_VALUE_BYTES} UTF-8 bytes`, 'elect');
  }
  return {
    key: name,
    command,
    waitMs: waitValue(values, Number.POSITIVE_INFINITY, 'elect'),
    ...runSettings(values),
    mode: 'exclusive',
    semaphore: undefined,
    election: { value },
    // Elections keep no metadata: the value says who leads.
    metadata: '',
  };
}

/**
 * `--permits n [--take k]` as a semaphore request, checked by core's own rule (whole numbers,
 * 1 ≤ k ≤ n ≤ MAX_SEMAPHORE_LIMIT); `undefined` without `--permits`.
 */
function semaphoreRequest(limitText: string | undefined, takeText: string | undefined, shared: boolean): SemaphoreRequest | undefined {
  if (limitText === undefined) {
    if (takeText !== undefined) throw new UsageError('--take needs --permits: it says how many of the semaphore\'s permits to take', 'hold');
    return undefined;
  }
  if (shared) throw new UsageError('give either --shared (a read lock) or --permits (a semaphore), not both', 'hold');
  const limit = countValue(limitText, '--permits');
  const permits = takeText === undefined ? 1 : countValue(takeText, '--take');
  try {
    return validateSemaphoreLimit(limit, permits);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new UsageError(`${message.replace(/options\.limit/g, '--permits').replace(/options\.permits/g, '--take')}`, 'hold');
  }
}

/** A flag's value as a whole number, or a usage error naming the flag. */
function countValue(text: string, flag: string): number {
  if (!/^\d{1,10}$/.test(text.trim())) throw new UsageError(`${flag} must be a whole number, got ${JSON.stringify(text)}`, 'hold');
  return Number(text);
}

function checkKey(key: string | undefined, command: CommandName): string {
  if (key === undefined) {
    if (command === 'elect') throw new UsageError('missing the election name: fencelock elect <name> -- <command…>', command);
    throw new UsageError(`missing the lock key: fencelock ${command} <key>${command === 'hold' ? ' -- <command…>' : ''}`, command);
  }
  try {
    return validateKey(key);
  } catch (error) {
    throw new UsageError(`bad ${command === 'elect' ? 'election name' : 'lock key'}: ${error instanceof Error ? error.message.replace(/^key /, '') : String(error)}`, command);
  }
}

function exitCodeValue(text: string | undefined): number {
  if (text === undefined) return ExitCode.NOT_ACQUIRED;
  if (!/^\d{1,3}$/.test(text.trim()) || Number(text) > 255) {
    throw new UsageError(`--conflict-exit-code must be a whole number from 0 to 255, got ${JSON.stringify(text)}`, 'hold');
  }
  return Number(text);
}

/**
 * `host=<hostname> pid=<pid> cmd=<program>`: enough for `inspect` to say who holds the lock. Only the
 * program, never its arguments: they may carry secrets, and anyone who can inspect a lock sees this.
 */
function defaultMetadata(command: readonly string[]): string {
  const program = (command[0] ?? '').toWellFormed();
  const text = `host=${hostname().toWellFormed()} pid=${process.pid} cmd=${program}`;
  if (Buffer.byteLength(text, 'utf8') <= MAX_METADATA_BYTES) return text;
  // Cut by code points (never inside a surrogate pair) until the UTF-8 form fits with the ellipsis.
  const points = Array.from(text);
  while (points.length > 0 && Buffer.byteLength(`${points.join('')}…`, 'utf8') > MAX_METADATA_BYTES) points.splice(-64);
  return `${points.join('')}…`;
}

function toParseArgs(options: readonly OptionSpec[]): ParseArgsOptions {
  const result: ParseArgsOptions = {};
  for (const option of options) {
    result[option.name] = option.short === undefined ? { type: option.type } : { type: option.type, short: option.short };
  }
  return result;
}

/** parseArgs' messages carry advice about `--` that is wrong for us; keep their first sentence. */
function parseArgsMessage(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown }).code;
  const first = (message.split('\n')[0] ?? message).replace(/\. To specify a positional argument.*$/, '');
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' && /ambiguous/.test(message)) {
    return `${first.replace(/\.$/, '')}: it needs a value (write --flag=-value for a value starting with -)`;
  }
  return first;
}
