/**
 * A module of `src/` as plain JavaScript in a directory of its own, for a process that runs as
 * another user. That user may not be able to read the checkout (a clone under a private home or a
 * mode-700 folder), so it can neither load the sources nor tsx from `node_modules`.
 */
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';

const COMPILER_OPTIONS: ts.CompilerOptions = { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 };

/** Every directory up to and including `dir` below `root` gets mode 0755, whatever the umask. */
async function makeReadableDir(root: string, dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  for (let current = dir; current.startsWith(root); current = dirname(current)) {
    await chmod(current, 0o755);
    if (current === root) break;
  }
}

async function writeReadable(file: string, text: string): Promise<void> {
  await writeFile(file, text);
  await chmod(file, 0o644);
}

/**
 * Transpiles `entry` and, transitively, the relative modules it imports (`./errors.js` is read from
 * `./errors.ts`) into `outDir`, keeping their layout, with a package.json that makes them ES
 * modules. Everything written is world-readable. Imports must stay inside `entry`'s directory.
 *
 * @returns the path of `entry`'s JavaScript.
 */
export async function writeStandaloneModule(entry: string, outDir: string): Promise<string> {
  const root = dirname(entry);
  const pending = [entry];
  const done = new Set<string>();
  // Bounded by the number of modules under `root`.
  for (let file = pending.pop(); file !== undefined; file = pending.pop()) {
    if (done.has(file)) continue;
    done.add(file);
    const path = relative(root, file);
    if (path.startsWith(`..${sep}`)) throw new Error(`${entry} imports ${file}, outside ${root}`);
    const source = await readFile(file, 'utf8');
    const target = join(outDir, path.replace(/\.ts$/, '.js'));
    await makeReadableDir(outDir, dirname(target));
    await writeReadable(target, ts.transpileModule(source, { compilerOptions: COMPILER_OPTIONS, fileName: file }).outputText);
    for (const { fileName } of ts.preProcessFile(source, true, true).importedFiles) {
      if (fileName.startsWith('.')) pending.push(resolve(dirname(file), fileName.replace(/\.js$/, '.ts')));
    }
  }
  await writeReadable(join(outDir, 'package.json'), '{ "type": "module" }\n');
  return join(outDir, basename(entry).replace(/\.ts$/, '.js'));
}
