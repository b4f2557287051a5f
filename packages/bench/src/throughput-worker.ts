/**
 * A measuring process of `throughput-processes.ts`: runs the section its parent asked for (in the
 * environment) on the named subjects, sends back every slice, and exits.
 */
import { parallelKeysRounds } from './parallel-keys.js';
import type { RoundsMeasurement } from './rounds.js';
import { subjectById, type Subject } from './subjects.js';
import { SECTION_REQUEST_VARIABLE, type ProcessReport, type SectionRequest } from './throughput-processes.js';
import { uncontendedRounds } from './uncontended.js';

const request = JSON.parse(process.env[SECTION_REQUEST_VARIABLE] ?? '') as SectionRequest;
const errors: { subject: string; error: string }[] = [];
const describe = (cause: unknown): string => (cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause));
const onError = (subject: Subject, cause: unknown): void => {
  errors.push({ subject: subject.id, error: describe(cause) });
};
// An exception thrown from a client library's callback would otherwise end the process and lose its
// slices: it is reported with every subject (the section's own bounded waits end the slice).
process.on('uncaughtException', (cause) => {
  for (const subject of request.subjects) errors.push({ subject, error: `uncaught exception: ${describe(cause)}` });
});

const subjects = request.subjects.map((id) => subjectById(id));
const measured: RoundsMeasurement[] =
  request.section === 'uncontended' ? await uncontendedRounds(subjects, request.options, onError) : await parallelKeysRounds(subjects, request.options, onError);
const report: ProcessReport = {
  type: 'measured',
  pid: process.pid,
  measurements: measured.map((m) => ({ subject: m.subject.id, samples: m.samples, roundOpsPerSec: m.roundOpsPerSec, seconds: m.seconds })),
  errors,
};
process.send?.(report, () => process.exit(0));
