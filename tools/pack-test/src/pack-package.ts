import { runChecked } from './run-process.js';
import { DEPENDENCY_FIELDS, packageDir, type PackageManifest } from './workspace.js';

/** How long one `pnpm pack` or `tar` may take, in ms. */
export const PACK_TIMEOUT_MS = 60_000;

/** A tarball made by `pnpm pack`. */
export interface PackedPackage {
  readonly name: string;
  readonly version: string;
  /** Absolute path of the `.tgz`. */
  readonly tarball: string;
  /** Paths inside the package (`dist/index.js`, …). */
  readonly files: readonly string[];
}

interface PnpmPackJson {
  readonly name: string;
  readonly version: string;
  readonly filename: string;
  readonly files: readonly { readonly path: string }[];
}

/**
 * Packs a workspace package with `pnpm pack` into `destination`. pnpm (unlike npm) rewrites the
 * `workspace:` ranges into real versions, which is what a registry would receive.
 */
export async function packPackage(packageName: `@fencelock/${string}`, destination: string): Promise<PackedPackage> {
  const { stdout } = await runChecked('pnpm', ['pack', '--json', '--pack-destination', destination], {
    cwd: packageDir(packageName),
    timeoutMs: PACK_TIMEOUT_MS,
  });
  const packed = JSON.parse(stdout) as PnpmPackJson;
  return {
    name: packed.name,
    version: packed.version,
    tarball: packed.filename,
    files: packed.files.map((file) => file.path),
  };
}

/** The package.json inside a tarball, as the registry would publish it. */
export async function readPackedManifest(tarball: string): Promise<PackageManifest> {
  const { stdout } = await runChecked('tar', ['-xOzf', tarball, 'package/package.json'], {
    cwd: process.cwd(),
    timeoutMs: PACK_TIMEOUT_MS,
  });
  return JSON.parse(stdout) as PackageManifest;
}

/** Every dependency range that still uses pnpm's `workspace:` protocol, as `field.name@range`. */
export function workspaceRanges(manifest: PackageManifest): string[] {
  const found: string[] = [];
  for (const field of DEPENDENCY_FIELDS) {
    for (const [name, range] of Object.entries(manifest[field] ?? {})) {
      if (range.startsWith('workspace:')) found.push(`${field}.${name}@${range}`);
    }
  }
  return found;
}
