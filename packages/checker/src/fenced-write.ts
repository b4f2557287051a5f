import { HistoryFormatError } from './history.js';

/**
 * One write attempt as the fenced store logs it (FAULTS.md: `{t, key, token, proc, accepted}`),
 * plus the value written, so a final read can be compared with what was acknowledged.
 */
export interface FencedWriteRecord {
  /** When the store handled it, monotonic ns (same axis as a history's `t`). */
  readonly t: number;
  /** The resource key. */
  readonly key: string;
  /** The fencing token presented. */
  readonly token: bigint;
  /** The writer's proc id. */
  readonly proc: string;
  /** Whether the store accepted it (token ≥ the highest accepted for the key). */
  readonly accepted: boolean;
  /** The value appended, if any. */
  readonly value?: string;
}

/** The JSON form: token as a decimal string. */
export function serializeFencedWrite(record: FencedWriteRecord): string {
  return JSON.stringify({ ...record, token: record.token.toString() });
}

/** Validates one parsed JSON write record. @throws {@link HistoryFormatError} */
export function toFencedWrite(json: unknown): FencedWriteRecord {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) throw new HistoryFormatError('a write record must be an object');
  const record = json as Readonly<Record<string, unknown>>;
  const { t, key, token, proc, accepted, value } = record;
  if (typeof t !== 'number' || !Number.isFinite(t) || t < 0) throw new HistoryFormatError('"t" must be a non-negative number of ns');
  if (typeof key !== 'string' || typeof proc !== 'string') throw new HistoryFormatError('"key" and "proc" must be strings');
  if (typeof token !== 'string' || !/^-?(0|[1-9][0-9]*)$/.test(token)) throw new HistoryFormatError('"token" must be a decimal string');
  if (typeof accepted !== 'boolean') throw new HistoryFormatError('"accepted" must be a boolean');
  if (value !== undefined && typeof value !== 'string') throw new HistoryFormatError('"value" must be a string');
  return { t, key, token: BigInt(token), proc, accepted, ...(value === undefined ? {} : { value }) };
}

/** Parses a JSONL write log (blank lines skipped). @throws {@link HistoryFormatError} naming the line. */
export function parseFencedWriteLog(text: string): FencedWriteRecord[] {
  const records: FencedWriteRecord[] = [];
  const lines = text.split('\n');
  for (let index = 0; index < lines.length; index += 1) {
    const line = lines[index]?.trim() ?? '';
    if (line === '') continue;
    try {
      records.push(toFencedWrite(JSON.parse(line)));
    } catch (error) {
      throw new HistoryFormatError(error instanceof Error ? error.message : String(error), index + 1);
    }
  }
  return records;
}
