import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { consumerEnv } from './consumer-env.js';
import { runChecked } from './run-process.js';
import { readManifest, REPO_ROOT, workspacePackages } from './workspace.js';

/** How long one `git` or `changeset` command may take, in ms. */
export const CHANGESET_TIMEOUT_MS = 60_000;

/** A semver bump as a changeset names it. */
export type BumpType = 'patch' | 'minor' | 'major';

/** One package of a release plan, as `changeset status --output` writes it. */
export interface PlannedRelease {
  readonly name: string;
  readonly type: BumpType | 'none';
  readonly oldVersion: string;
  readonly newVersion: string;
}

/** What `changeset status` says the next `changeset version` would do. */
export interface ReleasePlan {
  readonly changesets: readonly { readonly id: string }[];
  readonly releases: readonly PlannedRelease[];
}

/** A copy of the workspace's manifests and changeset config, in its own git repository. */
export interface ChangesetSandbox {
  /** Absolute path of the copy. */
  readonly dir: string;
  /** Workspace package names → folder relative to the root (`@fencelock/core` → `packages/core`). */
  readonly packages: ReadonlyMap<string, string>;
  /** Writes `.changeset/<id>.md` releasing the given packages. */
  addChangeset(id: string, releases: Readonly<Record<string, BumpType>>, summary: string): Promise<void>;
  /** Runs `changeset status` and returns its release plan. */
  status(): Promise<ReleasePlan>;
  /** Runs `changeset version`, which rewrites versions and changelogs in the copy. */
  version(): Promise<void>;
  /** The version in a package's package.json in the copy. */
  versionOf(packageName: string): Promise<string>;
  /** Deletes the copy. */
  remove(): Promise<void>;
}

/** Options of {@link createChangesetSandbox}. */
export interface ChangesetSandboxOptions {
  /** Copy the changesets waiting in the repository's `.changeset/` too. @default false */
  readonly pendingChangesets?: boolean;
}

const CHANGESET_BIN = path.join(REPO_ROOT, 'node_modules', '@changesets', 'cli', 'bin.js');

/**
 * Copies what the changesets CLI reads — the root manifest, pnpm-workspace.yaml, every workspace
 * package's package.json and `.changeset/config.json` — into a temp dir with a fresh git
 * repository on `main` (the config's base branch), so `changeset version` can run without
 * touching the real repository or its git history.
 */
export async function createChangesetSandbox(options: ChangesetSandboxOptions = {}): Promise<ChangesetSandbox> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'fencelock-changesets-'));
  const remove = () => rm(dir, { recursive: true, force: true });
  try {
    const packages = await workspacePackages();
    const files = ['package.json', 'pnpm-workspace.yaml', '.changeset/config.json'];
    for (const folder of packages.values()) files.push(path.join(folder, 'package.json'));
    if (options.pendingChangesets === true) {
      for (const entry of await readdir(path.join(REPO_ROOT, '.changeset'))) {
        if (entry.endsWith('.md') && entry !== 'README.md') files.push(path.join('.changeset', entry));
      }
    }
    for (const file of files) {
      await mkdir(path.dirname(path.join(dir, file)), { recursive: true });
      await copyFile(path.join(REPO_ROOT, file), path.join(dir, file));
    }
    // The config names its changelog generator as a module (`@changesets/cli/changelog`): let it
    // resolve from the copy. Nothing writes into node_modules.
    await symlink(path.join(REPO_ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
    await writeFile(path.join(dir, '.gitignore'), 'node_modules\n');

    // A git identity of its own and no user or system config (hooks, signing), so the snapshot
    // commit behaves the same on every machine.
    const env = { ...consumerEnv(), GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1' };
    const run = (command: string, args: readonly string[]) => runChecked(command, args, { cwd: dir, env, timeoutMs: CHANGESET_TIMEOUT_MS });
    const git = (...args: string[]) => run('git', ['-c', 'user.name=fencelock', '-c', 'user.email=fencelock@localhost', ...args]);
    await git('init', '--quiet', '--initial-branch=main');
    await git('add', '--all');
    await git('commit', '--quiet', '--no-verify', '--message', 'workspace manifests');

    return {
      dir,
      packages,
      async addChangeset(id, releases, summary) {
        const header = Object.entries(releases).map(([name, type]) => `'${name}': ${type}`);
        await writeFile(path.join(dir, '.changeset', `${id}.md`), `---\n${header.join('\n')}\n---\n\n${summary}\n`);
      },
      async status() {
        const output = 'release-plan.json';
        await run(process.execPath, [CHANGESET_BIN, 'status', `--output=${output}`]);
        return JSON.parse(await readFile(path.join(dir, output), 'utf8')) as ReleasePlan;
      },
      async version() {
        await run(process.execPath, [CHANGESET_BIN, 'version']);
      },
      async versionOf(packageName) {
        const folder = packages.get(packageName);
        if (folder === undefined) throw new Error(`${packageName} is not a workspace package`);
        return (await readManifest(path.join(dir, folder, 'package.json'))).version;
      },
      remove,
    };
  } catch (error) {
    await remove();
    throw error;
  }
}
