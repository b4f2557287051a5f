import { waitFor } from '@fencelock/test-infra';
import { describe, expect, it } from 'vitest';
import { consumerEnv } from '../src/consumer-env.js';
import { ProcessError, runChecked, runProcess } from '../src/run-process.js';
import { parseScriptOutput } from '../src/script-output.js';
import { REPO_ROOT, workspacePackages } from '../src/workspace.js';

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('runProcess', () => {
  it('kills the whole process group when the timeout runs out', async () => {
    // The shell starts a grandchild and prints its pid: a timeout must not leave it behind.
    const result = await runProcess('sh', ['-c', 'sleep 60 & echo $!; wait'], { cwd: REPO_ROOT, timeoutMs: 500 });
    expect(result.timedOut).toBe(true);
    expect(result.signal).toBe('SIGKILL');
    const grandchild = Number(result.stdout.trim());
    expect(grandchild).toBeGreaterThan(0);
    await waitFor(async () => (isAlive(grandchild) ? undefined : true), { timeoutMs: 5_000, what: `pid ${grandchild} to end` });
  });

  it('runChecked rejects with PROCESS_FAILED and keeps both outputs', async () => {
    const failure = await runChecked('sh', ['-c', 'echo out; echo err >&2; exit 3'], { cwd: REPO_ROOT, timeoutMs: 10_000 }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(ProcessError);
    const error = failure as ProcessError;
    expect(error.code).toBe('PROCESS_FAILED');
    expect(error.result).toMatchObject({ code: 3, stdout: 'out\n', stderr: 'err\n', timedOut: false });
  });
});

describe('consumerEnv', () => {
  it("keeps the user's npm settings and drops what the script runner and the source condition add", () => {
    const env = consumerEnv({
      PATH: '/usr/bin',
      HOME: '/home/user',
      npm_config_registry: 'http://127.0.0.1:4873/',
      npm_config_user_agent: 'pnpm/10',
      npm_package_name: '@fencelock/pack-test',
      npm_lifecycle_event: 'test',
      PNPM_PACKAGE_NAME: '@fencelock/pack-test',
      NODE_OPTIONS: '--conditions=@fencelock/source',
      VITEST: 'true',
    });
    expect(env).toEqual({ PATH: '/usr/bin', HOME: '/home/user', npm_config_registry: 'http://127.0.0.1:4873/' });
  });
});

describe('parseScriptOutput', () => {
  it('reads name=value words across lines', () => {
    expect(parseScriptOutput('token=17 held=true\nreleased=false\nnoise\n')).toEqual({ token: '17', held: 'true', released: 'false' });
  });
});

describe('workspacePackages', () => {
  it('finds the packages of every glob in pnpm-workspace.yaml', async () => {
    const packages = await workspacePackages();
    expect(packages.get('@fencelock/core')).toBe('packages/core');
    expect(packages.get('@fencelock/test-infra')).toBe('test-infra');
    expect(packages.get('@fencelock/pack-test')).toBe('tools/pack-test');
    expect(packages.get('@fencelock/example-demo')).toBe('examples/demo');
  });
});
