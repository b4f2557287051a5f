import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MemoryLockProvider } from '@fencelock/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeLockProvider, type ConformanceSection } from '../src/index.js';

interface AssertionResult {
  readonly title: string;
  readonly status: string;
  readonly ancestorTitles: readonly string[];
}
interface FileResult {
  readonly name: string;
  readonly assertionResults: readonly AssertionResult[];
}

const packageDir = fileURLToPath(new URL('..', import.meta.url));
const vitestBin = join(packageDir, 'node_modules', 'vitest', 'vitest.mjs');

/** Which cases must fail for each broken provider (a subset: more may fail). */
const EXPECTED_FAILURES: Record<string, readonly string[]> = {
  'no-mutual-exclusion': [
    'tryAcquire resolves undefined on a held key, from the same and from another provider',
    'gives mutual exclusion to many clients updating a shared counter',
  ],
  'non-monotonic-tokens': [
    'increase strictly per key across acquisitions and provider instances (or are absent with fencing none)',
  ],
  'release-without-owner-check': ['release resolves true once, then false, and frees the key'],
  'never-expires': ["frees an abandoned lock by expiry, never before its holder's validity ends, and signals the loss"],
  'double-grant-after-expiry': [
    'holder paused past its validity, then two contenders at once: one grant at most, and the key stays usable',
  ],
  'lost-signal-never-fired': [
    'close() releases held locks, aborts their signals, and refuses later calls',
    'holder paused past its validity (a GC pause): loses the lock at once on resume, and the next holder is fenced above it',
  ],
  'deletion-unnoticed': [
    "lock deleted behind the holder's back: the holder notices as its capabilities declare, and never takes it back",
  ],
  'semaphore-over-limit': [
    'grants at most limit permits to holders from several providers, and shows them in inspectSemaphore',
    'never lets more than limit holders in under concurrent contention (history-checked)',
  ],
  'semaphore-limit-ignored': [
    "refuses another limit with LOCK_LIMIT_MISMATCH while held, and takes the next acquirer's limit once empty",
  ],
  'semaphore-tokens-backwards': [
    'gives every permit of a key a strictly greater token, across providers and overlapping holders (or none with fencing none)',
  ],
  'election-two-leaders': [
    'elects one leader at a time, within one provider and across providers, and leader() agrees with the handle',
    'keeps one leader at a time and strictly increasing terms under concurrent campaigns (history-checked)',
  ],
  'election-terms-backwards': [
    'keeps one leader at a time and strictly increasing terms under concurrent campaigns (history-checked)',
    'hands leadership to the next campaigner on resign, with a greater term',
  ],
  'election-observe-misses-changes': [
    'observe reports the current leader, then each leader in term order, and ends on abort or close',
  ],
};

let results: FileResult[] = [];
let workDir = '';

beforeAll(async () => {
  workDir = await mkdtemp(join(tmpdir(), 'fencelock-broken-'));
  const outputFile = join(workDir, 'results.json');
  await new Promise<void>((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [vitestBin, 'run', '--config', 'vitest.broken.config.ts', '--reporter=json', `--outputFile=${outputFile}`],
      { cwd: packageDir, stdio: 'ignore' },
    );
    // A guard against a hung run, not a measure: the healthy control runs the whole suite, each
    // broken fixture only the sections whose cases must fail it.
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error('the broken-provider run did not finish within 360 s'));
    }, 360_000);
    child.on('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.on('error', reject);
  });
  results = (JSON.parse(await readFile(outputFile, 'utf8')) as { testResults: FileResult[] }).testResults;
}, 370_000);

afterAll(async () => {
  if (workDir !== '') await rm(workDir, { recursive: true, force: true });
});

function resultsOf(fixture: string): readonly AssertionResult[] {
  const file = results.find((result) => result.name.endsWith(`${fixture}.fixture.ts`));
  if (file === undefined) throw new Error(`no results for fixture ${fixture}`);
  return file.assertionResults;
}

describe('the conformance suite proves itself', () => {
  it('passes the healthy control run with the same settings', () => {
    const control = resultsOf('healthy-control');
    expect(control.length).toBeGreaterThan(30);
    expect(control.filter((r) => r.status === 'failed').map((r) => r.title)).toEqual([]);
  });

  it('registers only the sections a run asks for', () => {
    const fencingOnly = resultsOf('non-monotonic-tokens');
    expect(fencingOnly.length).toBeGreaterThan(0);
    expect(fencingOnly.length).toBeLessThan(resultsOf('healthy-control').length);
    for (const result of fencingOnly) expect(result.ancestorTitles).toContain('fencing tokens');
  });

  it('refuses a section the suite does not have, before registering anything', () => {
    expect(() => describeLockProvider({ name: 'x', createProvider: () => new MemoryLockProvider(), sections: ['no-such-section' as ConformanceSection] })).toThrow(
      /options\.sections must name sections of the suite/,
    );
    expect(() => describeLockProvider({ name: 'x', createProvider: () => new MemoryLockProvider(), sections: [] })).toThrow(TypeError);
  });

  for (const [fixture, mustFail] of Object.entries(EXPECTED_FAILURES)) {
    it(`fails the broken provider "${fixture}"`, () => {
      const failed = resultsOf(fixture)
        .filter((r) => r.status === 'failed')
        .map((r) => r.title);
      for (const title of mustFail) expect(failed, `"${title}" should fail for ${fixture}`).toContain(title);
    });
  }
});
