import type { BackendWarning, LockProvider } from '@fencelock/core';

/** The provider's configuration warnings; none when it has no check or the check could not run. */
export async function backendWarnings(provider: LockProvider): Promise<readonly BackendWarning[]> {
  try {
    return (await provider.checkBackend?.()) ?? [];
  } catch {
    // The caller's own request reports an unreachable backend: a failed check adds nothing to that.
    return [];
  }
}

