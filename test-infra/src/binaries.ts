/**
 * The servers come from Debian's packages. Check they are there; install them when we are
 * root; otherwise fail with the exact command to run. Never skip silently.
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants, readFileSync, readdirSync, realpathSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { InfraError } from './errors.js';

/** Executables that must be on PATH. */
const EXECUTABLES = ['redis-server', 'redis-cli', 'etcd', 'etcdctl', 'java', 'openssl'] as const;

/** Jars the ZooKeeper command line uses (see zookeeper-ensemble.ts). */
export const ZOOKEEPER_JAR = '/usr/share/java/zookeeper.jar';
export const SLF4J_SIMPLE_JAR = '/usr/share/java/slf4j-simple.jar';

/** Jar of Apache Curator's recipes, the Java peer of the ZooKeeper interoperability tests. */
export const CURATOR_RECIPES_JAR = '/usr/share/java/curator-recipes.jar';
/** Debian's own Python, whose dist-packages hold kazoo and redis-py (a pyenv python3 on PATH would not). */
export const SYSTEM_PYTHON = '/usr/bin/python3';

/** Debian keeps PostgreSQL's server programs off PATH, one directory per major version: `<root>/<major>/bin`. */
const DEBIAN_POSTGRES_ROOT = '/usr/lib/postgresql';
/** The system user Debian's postgresql package creates; the server refuses to run as root. */
export const POSTGRES_SYSTEM_USER = 'postgres';

/**
 * Debian packages that provide everything above (redis-cli comes with redis-server's redis-tools),
 * plus the other languages' lock libraries the interoperability tests run against.
 */
const BASE_PACKAGES = [
  'redis-server',
  'zookeeper',
  'etcd-server',
  'etcd-client',
  'libcurator-recipes-java',
  'python3-kazoo',
  'python3-redis',
  'postgresql',
  // The secured servers' throwaway certificates.
  'openssl',
];

/** What is missing, empty when everything is present. */
export function missingBinaries(): string[] {
  const missing: string[] = EXECUTABLES.filter((name) => findExecutable(name) === undefined);
  for (const jar of [ZOOKEEPER_JAR, SLF4J_SIMPLE_JAR, CURATOR_RECIPES_JAR]) {
    if (!isReadable(jar)) missing.push(jar);
  }
  const python = spawnSync(SYSTEM_PYTHON, ['-c', 'import kazoo, redis'], { stdio: 'ignore', timeout: 10_000 });
  if (python.status !== 0) missing.push('python3 modules kazoo and redis');
  if (findPostgresBinDir() === undefined) missing.push('postgres and initdb (PostgreSQL server)');
  else if (process.getuid?.() === 0 && postgresSystemUser() === undefined) missing.push(`the ${POSTGRES_SYSTEM_USER} system user`);
  return missing;
}

/**
 * The directory holding PostgreSQL's `postgres` and `initdb`: the one of `postgres` on PATH when
 * `initdb` sits next to it, else the newest Debian `/usr/lib/postgresql/<major>/bin`; undefined if none.
 */
export function findPostgresBinDir(): string | undefined {
  const onPath = findExecutable('postgres');
  if (onPath !== undefined) {
    const dir = dirname(realpathSync(onPath));
    if (isExecutable(join(dir, 'initdb'))) return dir;
  }
  let majors: string[];
  try {
    majors = readdirSync(DEBIAN_POSTGRES_ROOT).filter((name) => /^\d+$/.test(name));
  } catch {
    return undefined;
  }
  majors.sort((a, b) => Number(b) - Number(a));
  for (const major of majors) {
    const dir = join(DEBIAN_POSTGRES_ROOT, major, 'bin');
    if (isExecutable(join(dir, 'postgres')) && isExecutable(join(dir, 'initdb'))) return dir;
  }
  return undefined;
}

/** A system user's name and numeric ids, from /etc/passwd. */
export interface SystemUser {
  readonly name: string;
  readonly uid: number;
  readonly gid: number;
}

/** Numeric ids of the `postgres` system user from /etc/passwd, or undefined when there is none. */
export function postgresSystemUser(): SystemUser | undefined {
  return systemUser(POSTGRES_SYSTEM_USER);
}

/** Numeric ids of the system user `name` from /etc/passwd, or undefined when there is none. */
export function systemUser(name: string): SystemUser | undefined {
  let passwd: string;
  try {
    passwd = readFileSync('/etc/passwd', 'utf8');
  } catch {
    return undefined;
  }
  for (const line of passwd.split('\n')) {
    const [entry, , uid, gid] = line.split(':');
    if (entry === name && uid !== undefined && gid !== undefined) return { name, uid: Number(uid), gid: Number(gid) };
  }
  return undefined;
}

/** Full path of `name` on PATH, or undefined. */
export function findExecutable(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not in this directory
    }
  }
  return undefined;
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function isReadable(path: string): boolean {
  try {
    accessSync(path, constants.R_OK);
    return true;
  } catch {
    return false;
  }
}

/** The apt-get install command line for what is missing. */
export function installCommand(missing: readonly string[]): string[] {
  const packages = [...BASE_PACKAGES];
  if (missing.includes('java')) packages.push('default-jre-headless');
  // slf4j-simple normally arrives as a dependency of zookeeper; name it if only it is missing.
  if (missing.includes(SLF4J_SIMPLE_JAR)) packages.push('libslf4j-java');
  return ['apt-get', 'install', '-y', '--no-install-recommends', ...packages];
}

let checked: Promise<void> | undefined;

/**
 * Makes sure redis-server, redis-cli, etcd, etcdctl, java, the ZooKeeper jars and PostgreSQL's
 * server (plus, as root, its `postgres` system user) are present.
 * As root, installs the Debian packages (printing each command); otherwise throws an
 * {@link InfraError} naming the missing pieces and the exact apt-get command. The result of a
 * successful check is remembered for the life of the process.
 */
export function ensureBinaries(log: (line: string) => void = (line) => console.log(line)): Promise<void> {
  checked ??= check(log).catch((error: unknown) => {
    checked = undefined;
    throw error;
  });
  return checked;
}

async function check(log: (line: string) => void): Promise<void> {
  const missing = missingBinaries();
  if (missing.length === 0) return;
  const install = installCommand(missing);
  const installText = `DEBIAN_FRONTEND=noninteractive ${install.join(' ')}`;
  if (process.getuid?.() !== 0) {
    throw new InfraError(
      `test-infra needs ${missing.join(', ')}, which are missing, and this process is not root.\n` +
        `Install them with:\n  sudo apt-get update && sudo ${installText}`,
    );
  }
  log(`[test-infra] missing ${missing.join(', ')}; installing from Debian packages`);
  run(['apt-get', 'update'], log);
  run(install, log);
  const still = missingBinaries();
  if (still.length > 0) {
    throw new InfraError(`still missing after ${installText}: ${still.join(', ')}`);
  }
}

function run(command: readonly string[], log: (line: string) => void): void {
  const [file, ...args] = command;
  if (file === undefined) return;
  log(`[test-infra] $ ${command.join(' ')}`);
  const result = spawnSync(file, args, {
    stdio: 'inherit',
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    // apt-get update + install took ~20 s here; leave room for a slow mirror but stay bounded.
    timeout: 10 * 60_000,
  });
  if (result.error) throw new InfraError(`${command.join(' ')} failed: ${result.error.message}`);
  if (result.status !== 0) throw new InfraError(`${command.join(' ')} exited with code ${String(result.status)}`);
}
