import type { BackendWarning, LeaderInfo, LockInfo, LockProvider, SemaphoreInfo } from '@fencelock/core';
import { describeLocation } from './backend-config.js';
import { backendWarnings } from './backend-warnings.js';
import type { CliIo } from './cli-io.js';
import { closeProvider, connectProvider } from './connect-provider.js';
import { describeError } from './describe-error.js';
import { formatDuration } from './duration.js';
import { ExitCode } from './exit-codes.js';
import type { InspectSettings } from './parse-command-line.js';

/** One holder in `inspect --json` output. Tokens are decimal strings: they may exceed 2^53. */
export interface InspectJsonHolder {
  /** The holder's owner id (`FENCELOCK_OWNER_ID` of a `hold`; for foreign lock libraries, their stored value). */
  readonly ownerId: string;
  /** Exclusive, or shared (a read lock); `semaphore` for a holder of a semaphore's permits (`--semaphore`). */
  readonly mode: 'exclusive' | 'shared' | 'semaphore';
  /** With `--semaphore`: how many permits it holds. Absent for a lock's holder. */
  readonly permits?: number;
  /** The fencing token as a decimal string, or `null` when the backend gives none. */
  readonly fencingToken: string | null;
  /** Remaining validity in ms as the backend sees it, or `null` when it does not say (session backends). */
  readonly remainingMs: number | null;
  /** What the holder stored with the lock (`--metadata`), or `null`. */
  readonly metadata: string | null;
}

/** The object `fencelock inspect --json` prints. */
export interface InspectJson {
  /** The key, as given. */
  readonly key: string;
  /** The provider's name: `redis`, `redlock`, `etcd`, `zookeeper`, `postgres`. */
  readonly backend: string;
  /** `held` when there is at least one holder. */
  readonly state: 'free' | 'held';
  /**
   * With `--semaphore`: the limit the holders agreed on (absent when free: a semaphore without
   * holders takes the limit of its next acquirer). Absent for a lock.
   */
  readonly limit?: number;
  /** Empty when free; one entry for an exclusive holder, one per reader for shared locks. */
  readonly holders: readonly InspectJsonHolder[];
  /**
   * Server settings that weaken the guarantees, from the provider's configuration check (e.g.
   * `redis-eviction-policy`); empty when none was found or the server would not tell.
   */
  readonly warnings: readonly BackendWarning[];
}

/** The object `fencelock inspect --election --json` prints. Terms are decimal strings: they may exceed 2^53. */
export interface InspectElectionJson {
  /** The election's name, as given. */
  readonly name: string;
  /** The provider's name: `etcd`, `zookeeper`, `postgres`… */
  readonly backend: string;
  /** `led` when the election has a leader, `none` when it has none. */
  readonly state: 'led' | 'none';
  /** The leader's value (`elect --value`), or `null` when there is no leader. */
  readonly value: string | null;
  /** The leader's term as a decimal string, or `null` when there is no leader (or the backend gives none). */
  readonly term: string | null;
}

/**
 * `fencelock inspect`: prints the holder(s) of a key, or that it is free; with `--election`, the
 * leader of an election, or that it has none. Exits 0 either way.
 */
export async function runInspect(settings: InspectSettings, io: CliIo): Promise<number> {
  let provider: LockProvider | undefined;
  try {
    provider = await connectProvider(settings.backend, undefined, settings.semaphore ? 1 : undefined, settings.election);
    if (settings.election) {
      const json = electionJson(settings.key, provider.name, await provider.leader(settings.key));
      io.stdout.write(settings.json ? `${JSON.stringify(json)}\n` : formatElection(json, describeLocation(settings.backend)));
      return ExitCode.OK;
    }
    const info = settings.semaphore ? await provider.inspectSemaphore(settings.key) : await provider.inspect(settings.key);
    const json = inspectJson(settings.key, provider.name, info, await backendWarnings(provider));
    io.stdout.write(settings.json ? `${JSON.stringify(json)}\n` : formatInspect(json, describeLocation(settings.backend)));
    return ExitCode.OK;
  } catch (error) {
    const report = describeError(error, { backend: settings.backend, key: settings.key, debug: settings.debug, semaphore: settings.semaphore, election: settings.election });
    for (const line of report.lines) io.stderr.write(`${line}\n`);
    return report.exitCode;
  } finally {
    await closeProvider(provider);
  }
}

/** The JSON form of what a provider's `inspect` (or `inspectSemaphore`) returned. */
export function inspectJson(
  key: string,
  backend: string,
  info: LockInfo | SemaphoreInfo | undefined,
  warnings: readonly BackendWarning[] = [],
): InspectJson {
  const holders = (info?.holders ?? []).map((holder): InspectJsonHolder => ({
    ownerId: holder.ownerId,
    mode: holder.mode,
    ...('permits' in holder ? { permits: holder.permits } : {}),
    fencingToken: holder.fencingToken === undefined ? null : holder.fencingToken.toString(),
    remainingMs: holder.remainingMs ?? null,
    metadata: holder.metadata ?? null,
  }));
  return {
    key,
    backend,
    state: holders.length === 0 ? 'free' : 'held',
    ...(info !== undefined && 'limit' in info ? { limit: info.limit } : {}),
    holders,
    warnings: warnings.map(({ code, message }) => ({ code, message })),
  };
}

/** The text form: one line when free, an aligned block per holder when held; then any warnings. */
export function formatInspect(json: InspectJson, where: string): string {
  const warnings = json.warnings.map((warning) => `warning: ${warning.message}\n`).join('');
  if (json.state === 'free') return `${JSON.stringify(json.key)} is free (${where})\n${warnings}`;
  const used = json.holders.reduce((sum, holder) => sum + (holder.permits ?? 0), 0);
  const limit = json.limit === undefined ? '' : `, ${used} of ${json.limit} permits in use`;
  const lines = [`${JSON.stringify(json.key)} is held (${where}${limit})`];
  for (const holder of json.holders) {
    lines.push(
      `  owner      ${holder.ownerId}`,
      `  mode       ${holder.mode}`,
      ...(holder.permits === undefined ? [] : [`  permits    ${holder.permits}`]),
      `  token      ${holder.fencingToken ?? 'none (this backend gives no fencing token)'}`,
      `  remaining  ${holder.remainingMs === null ? 'while the holder\'s session lives' : formatDuration(holder.remainingMs)}`,
      `  metadata   ${holder.metadata ?? '-'}`,
    );
    if (json.holders.length > 1) lines.push('');
  }
  return `${lines.join('\n')}\n${warnings}`;
}

/** The JSON form of what a provider's `leader` returned. */
export function electionJson(name: string, backend: string, leader: LeaderInfo | undefined): InspectElectionJson {
  return {
    name,
    backend,
    state: leader === undefined ? 'none' : 'led',
    value: leader?.value ?? null,
    term: leader?.term === undefined ? null : leader.term.toString(),
  };
}

/** The text form: one line when nobody leads, the value and term when someone does. */
export function formatElection(json: InspectElectionJson, where: string): string {
  const name = JSON.stringify(json.name);
  if (json.state === 'none') return `election ${name} has no leader (${where})\n`;
  return [`election ${name} is led (${where})`, `  value  ${json.value ?? ''}`, `  term   ${json.term ?? 'none (this backend gives no term)'}`, ''].join('\n');
}
