import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Absolute path of the monorepo's root (the folder with pnpm-workspace.yaml). */
export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/** The subset of a package.json these checks read. */
export interface PackageManifest {
  readonly name: string;
  readonly version: string;
  readonly private?: boolean;
  readonly dependencies?: Readonly<Record<string, string>>;
  readonly devDependencies?: Readonly<Record<string, string>>;
  readonly peerDependencies?: Readonly<Record<string, string>>;
  readonly optionalDependencies?: Readonly<Record<string, string>>;
}

/** The dependency fields of a manifest, in the order npm reads them. */
export const DEPENDENCY_FIELDS = ['dependencies', 'peerDependencies', 'optionalDependencies', 'devDependencies'] as const;

/** Reads and parses a package.json. */
export async function readManifest(file: string): Promise<PackageManifest> {
  return JSON.parse(await readFile(file, 'utf8')) as PackageManifest;
}

/** Folder of a publishable package in this monorepo, e.g. `packages/redis` for `@fencelock/redis`. */
export function packageDir(packageName: `@fencelock/${string}`): string {
  return path.join(REPO_ROOT, 'packages', packageName.slice('@fencelock/'.length));
}

/**
 * Throws unless the package's build output exists. Under `pnpm test`, turbo builds the packed
 * packages before this test (see turbo.json); run alone, the test needs `pnpm build` first.
 */
export function assertBuilt(packageName: `@fencelock/${string}`): void {
  const entry = path.join(packageDir(packageName), 'dist', 'index.js');
  if (!existsSync(entry)) {
    throw new Error(`${packageName} is not built (${entry} is missing): run \`pnpm build\` first`);
  }
}

/** Whether `inner` is `outer` or lies inside it. */
export function isInside(inner: string, outer: string): boolean {
  const relative = path.relative(outer, inner);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

/**
 * The workspace's packages, from the globs in pnpm-workspace.yaml (`dir` or `dir/*`, the only
 * forms this repository uses).
 */
export async function workspacePackages(): Promise<Map<string, string>> {
  const yaml = await readFile(path.join(REPO_ROOT, 'pnpm-workspace.yaml'), 'utf8');
  const packagesBlock = /^packages:\s*\n((?:[ \t]+-.*\n?)+)/m.exec(yaml)?.[1] ?? '';
  const globs = [...packagesBlock.matchAll(/^[ \t]+-[ \t]*['"]?([^'"\n]+?)['"]?[ \t]*$/gm)].map((match) => match[1] ?? '');
  const folders: string[] = [];
  for (const glob of globs) {
    if (glob.endsWith('/*')) {
      const parent = glob.slice(0, -2);
      for (const entry of await readdir(path.join(REPO_ROOT, parent), { withFileTypes: true })) {
        if (entry.isDirectory()) folders.push(path.join(parent, entry.name));
      }
    } else {
      folders.push(glob);
    }
  }
  const packages = new Map<string, string>();
  for (const folder of folders) {
    const manifest = path.join(REPO_ROOT, folder, 'package.json');
    if (existsSync(manifest)) packages.set((await readManifest(manifest)).name, folder);
  }
  return packages;
}
