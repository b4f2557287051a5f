import { chmod, mkdir, mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { canEnter, InfraError, tempRootFor, type UserIdentity } from '../src/index.js';

// An identity that owns nothing here, so only the "others" bits apply to it.
const STRANGER: UserIdentity = { name: 'stranger', uid: 54_321, gid: 54_321 };

describe('canEnter() and tempRootFor()', () => {
  const dirs: string[] = [];
  afterEach(async () => {
    for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
  });

  async function tree(): Promise<{ open: string; inside: string; privateDir: string }> {
    const open = await realpath(await mkdtemp(join(tmpdir(), 'fencelock-reach-')));
    dirs.push(open);
    await chmod(open, 0o755);
    const privateDir = join(open, 'private');
    const inside = join(privateDir, 'inside');
    await mkdir(inside, { recursive: true });
    await chmod(privateDir, 0o700);
    await chmod(inside, 0o755);
    return { open, inside, privateDir };
  }

  it('needs search permission on every directory above, not just the last', async () => {
    const { open, inside, privateDir } = await tree();
    // Premise: the system temp dir itself is open to everyone.
    expect(canEnter(open, STRANGER)).toBe(true);
    expect(canEnter(privateDir, STRANGER)).toBe(false);
    expect(canEnter(inside, STRANGER)).toBe(false);
    expect(canEnter(join(open, 'missing'), STRANGER)).toBe(false);
  });

  it('picks the first candidate the user can enter, and says what to do when there is none', async () => {
    const { open, inside } = await tree();
    expect(tempRootFor(STRANGER, [inside, open])).toBe(open);
    expect(() => tempRootFor(STRANGER, [inside])).toThrow(InfraError);
    expect(() => tempRootFor(STRANGER, [inside])).toThrow(/stranger user cannot enter .*set TMPDIR/);
  });
});
