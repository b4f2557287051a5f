/**
 * A checkout inside a private directory (mode 700: a `mktemp -d` folder, root's home), with TMPDIR
 * in there too, must pass what hands work to another system user: the binaries test runs a check
 * as `nobody`, and PostgreSQL runs as `postgres`. Neither user can enter such a directory.
 *
 * `.ci/run` in such a clone would take 20 minutes and start servers on the shared topology's
 * ports, so this copies test-infra into a mode-700 directory and runs there just those parts.
 */
import { spawn } from 'node:child_process';
import { chmod, cp, mkdir, mkdtemp, readdir, readFile, realpath, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  canEnter,
  findExecutable,
  findPostgresBinDir,
  freePort,
  initPostgresDataDir,
  postgresProbe,
  postgresServerSpec,
  postgresSystemUser,
  preparePostgresDataDir,
  systemUser,
  waitFor,
} from '../src/index.js';
import { formatLogTail } from '../src/errors.js';
import { spawnServer, terminatePid } from '../src/processes.js';

const TEST_INFRA = fileURLToPath(new URL('..', import.meta.url));
const REPO = fileURLToPath(new URL('../..', import.meta.url));
/** What the binaries test needs of the checkout; node_modules is linked entry by entry below. */
const TEST_INFRA_PARTS = ['bin', 'src', 'test', 'package.json', 'tsconfig.json', 'vitest.config.ts'];
const REPO_PARTS = ['pnpm-workspace.yaml', 'tsconfig.base.json'];
/** The nested vitest run takes ~3 s on 2 cores. */
const NESTED_RUN_TIMEOUT_MS = 45_000;

const postgresUser = postgresSystemUser();
const nobody = systemUser('nobody');
const canSwitchUsers =
  process.getuid?.() === 0 &&
  findExecutable('runuser') !== undefined &&
  findExecutable('setpriv') !== undefined &&
  nobody !== undefined &&
  postgresUser !== undefined &&
  findPostgresBinDir() !== undefined;

interface Finished {
  readonly code: number | null;
  readonly output: string;
}

/**
 * Runs a command in a process group of its own, SIGKILLing the group (by its id) after
 * `timeoutMs`, so that no worker of a nested test run outlives it.
 */
function runBounded(command: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<Finished> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const child = spawn(command, [...args], { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => chunks.push(chunk));
    const timer = setTimeout(() => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // the group is gone already
      }
    }, timeoutMs);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output: Buffer.concat(chunks).toString('utf8') });
    });
  });
}

/** The parts of vitest's JSON report read here. */
interface JsonReport {
  readonly testResults: readonly { readonly assertionResults: readonly AssertionResult[] }[];
}

interface AssertionResult {
  readonly title: string;
  readonly status: string;
  readonly failureMessages: readonly string[];
}

describe.runIf(canSwitchUsers)('a checkout in a mode-700 directory', () => {
  let privateDir = '';
  let privateTmp = '';
  let checkout = '';

  beforeAll(async () => {
    privateDir = await realpath(await mkdtemp(join(tmpdir(), 'fencelock-private-checkout-')));
    await chmod(privateDir, 0o700);
    privateTmp = join(privateDir, 'tmp');
    checkout = join(privateDir, 'repo');
    await mkdir(privateTmp);
    await mkdir(join(checkout, 'test-infra', 'node_modules'), { recursive: true });
    for (const part of REPO_PARTS) await cp(join(REPO, part), join(checkout, part));
    for (const part of TEST_INFRA_PARTS) await cp(join(TEST_INFRA, part), join(checkout, 'test-infra', part), { recursive: true });
    // Links to the installed packages, but a node_modules directory of its own: vitest writes
    // its cache there, which must not touch the real checkout.
    for (const entry of await readdir(join(TEST_INFRA, 'node_modules'))) {
      if (entry.startsWith('.')) continue;
      await symlink(await realpath(join(TEST_INFRA, 'node_modules', entry)), join(checkout, 'test-infra', 'node_modules', entry));
    }
  });

  afterAll(async () => {
    vi.unstubAllEnvs();
    if (privateDir) await rm(privateDir, { recursive: true, force: true });
  });

  it('passes the binaries test, whose check runs as nobody', async () => {
    // The premise: nobody cannot read this checkout.
    if (nobody !== undefined) expect(canEnter(privateDir, nobody)).toBe(false);
    const report = join(privateDir, 'binaries-report.json');
    const env: NodeJS.ProcessEnv = { ...process.env, TMPDIR: privateTmp, NO_COLOR: '1' };
    // Variables of this vitest worker would make the nested run think it is a worker too.
    for (const name of Object.keys(env)) if (name.startsWith('VITEST')) delete env[name];
    const vitest = join(checkout, 'test-infra', 'node_modules', 'vitest', 'vitest.mjs');
    const { code, output } = await runBounded(
      process.execPath,
      [vitest, 'run', 'test/binaries.test.ts', '--reporter=json', `--outputFile=${report}`],
      join(checkout, 'test-infra'),
      env,
      NESTED_RUN_TIMEOUT_MS,
    );
    const results = (JSON.parse(await readFile(report, 'utf8').catch(() => '{"testResults":[]}')) as JsonReport).testResults.flatMap(
      (file) => file.assertionResults,
    );
    const failures = results.flatMap((result) => result.failureMessages).join('\n') || output;
    expect(results.map(({ title, status }) => `${status}: ${title}`), failures).toContain(
      'passed: as a non-root user with nothing on PATH it throws the exact apt-get command instead of skipping',
    );
    expect(code, failures).toBe(0);
  });

  it('starts PostgreSQL as the postgres user with its logs in the checkout, and stops it by PID', async () => {
    const binDir = findPostgresBinDir() ?? '';
    // As `infra run` does, with a TMPDIR the postgres user cannot enter either.
    vi.stubEnv('TMPDIR', privateTmp);
    const infra = join(checkout, '.infra');
    await mkdir(join(infra, 'logs'), { recursive: true });
    const dataDir = await preparePostgresDataDir(join(infra, 'data', 'postgres', '0'));
    let pid: number | undefined;
    try {
      await initPostgresDataDir({ binDir, dataDir, logFile: join(infra, 'logs', 'postgres-initdb.log') });
      const port = await freePort();
      const logFile = join(infra, 'logs', 'postgres-0.log');
      const child = spawnServer(postgresServerSpec({ binDir, port, dataDir, logFile }), { detached: false });
      pid = child.pid;
      if (pid === undefined) throw new Error(`postgres did not start; see ${logFile}`);
      const started = pid;
      await waitFor(async () => ((await postgresProbe(port, { timeoutMs: 500 }))?.accepting === true ? true : undefined), {
        what: `postgres on port ${port}`,
        timeoutMs: 30_000,
        abortReason: () => (child.exitCode === null ? undefined : `postgres exited with code ${String(child.exitCode)}`),
        describe: () => formatLogTail(logFile),
      });
      expect(dataDir.startsWith(`${privateDir}${sep}`), dataDir).toBe(false);
      expect(await terminatePid(started, dataDir, { stopSignal: 'SIGINT' })).toBe(true);
      expect(await postgresProbe(port, { timeoutMs: 500 })).toBeUndefined();
    } finally {
      // Only if an assertion failed half-way; terminatePid checks the PID still runs in dataDir.
      if (pid !== undefined) await terminatePid(pid, dataDir, { immediate: true });
      vi.unstubAllEnvs();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
