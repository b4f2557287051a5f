import { normalizeCapabilities, type BackendWarning, type LockBackend } from '@fencelock/core/adapter';

/** The warning {@link warningBackend}'s configuration check finds. */
export const TEST_WARNING: BackendWarning = { code: 'test-unsafe-setting', message: 'the server runs a setting that weakens the guarantees' };

/** A backend whose configuration check finds {@link TEST_WARNING}; it grants nothing (what the telemetry sees of it is the warning). */
export function warningBackend(): LockBackend {
  return {
    name: 'checked',
    capabilities: normalizeCapabilities({ fencing: 'none' }),
    acquire: async () => undefined,
    inspect: async () => undefined,
    close: async () => undefined,
    checkConfiguration: async () => [TEST_WARNING],
  };
}
