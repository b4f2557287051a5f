import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { consumerEnv } from './consumer-env.js';
import { runChecked, runProcess, type RunProcessResult } from './run-process.js';
import { isInside, REPO_ROOT } from './workspace.js';

/** How long `npm install` may take, in ms (about 8 s here with a warm npm cache). */
export const NPM_INSTALL_TIMEOUT_MS = 240_000;

/** Options of {@link createConsumerProject}. */
export interface ConsumerProjectOptions {
  /** Tarballs to install, as `npm install ./x.tgz` would. */
  readonly tarballs: readonly string[];
  /** Packages from the registry, with ranges (`ioredis@^5`), as a user would name them. */
  readonly registryPackages: readonly string[];
  /** A folder whose files are copied into the project (the consumer's scripts and tsconfigs). */
  readonly filesFrom: string;
  /** npm's `--loglevel` for the install: `warn` to read its warnings (peer dependencies) from {@link ConsumerProject.installOutput}. @default 'error' */
  readonly installLogLevel?: 'error' | 'warn';
}

/** A throwaway npm project in the OS temp dir. */
export interface ConsumerProject {
  /** Absolute path of the project. */
  readonly dir: string;
  /** What `npm install` printed (stdout, then stderr), at the log level asked for. */
  readonly installOutput: string;
  /** Runs `node <file> ...args` in the project with a user's environment; never throws for a non-zero exit. */
  node(file: string, args: readonly string[], timeoutMs: number): Promise<RunProcessResult>;
  /** Runs a command in the project and throws unless it exits 0. */
  run(command: string, args: readonly string[], timeoutMs: number): Promise<RunProcessResult>;
  /** Deletes the project. */
  remove(): Promise<void>;
}

/**
 * Creates a project outside the workspace (so nothing resolves through the monorepo's
 * node_modules) and `npm install`s the tarballs and registry packages into it, the way a user
 * installs fencelock.
 */
export async function createConsumerProject(options: ConsumerProjectOptions): Promise<ConsumerProject> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'fencelock-consumer-'));
  const remove = () => rm(dir, { recursive: true, force: true });
  try {
    if (isInside(dir, REPO_ROOT)) throw new Error(`${dir} is inside the workspace ${REPO_ROOT}`);
    // No "type": the .mjs/.cjs/.mts/.cts extensions say which module system each file uses.
    await writeFile(
      path.join(dir, 'package.json'),
      `${JSON.stringify({ name: 'fencelock-consumer', version: '1.0.0', private: true }, null, 2)}\n`,
    );
    await cp(options.filesFrom, dir, { recursive: true });
    const env = consumerEnv();
    const installed = await runChecked(
      'npm',
      ['install', '--no-audit', '--no-fund', '--prefer-offline', `--loglevel=${options.installLogLevel ?? 'error'}`, ...options.tarballs, ...options.registryPackages],
      { cwd: dir, env, timeoutMs: NPM_INSTALL_TIMEOUT_MS },
    );
    return {
      dir,
      installOutput: `${installed.stdout}\n${installed.stderr}`,
      node: (file, args, timeoutMs) => runProcess(process.execPath, [file, ...args], { cwd: dir, env, timeoutMs }),
      run: (command, args, timeoutMs) => runChecked(command, args, { cwd: dir, env, timeoutMs }),
      remove,
    };
  } catch (error) {
    await remove();
    throw error;
  }
}
