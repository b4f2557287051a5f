import type { Attributes } from '@opentelemetry/api';
import type { LockEventBase } from '@fencelock/core';
import { AcquireOutcome, AttributeName, HoldOutcome, type ElectionOutcome } from './names.js';

// Attribute sets are cached per (backend, mode, key attribute): without keys that is a handful of
// entries; with keys it is bounded here, oldest first out, so unbounded keys cannot grow it.
const MAX_CACHED_SETS = 1_000;

/**
 * @internal The attribute objects one (backend, mode, key attribute) combination records with, each
 * built on first use and then reused, so that recording allocates nothing per event.
 */
export class LockAttributeSets {
  /** backend, mode, the key attribute if any, and the constant attributes. */
  readonly base: Attributes;
  #acquiredContended: Attributes | undefined;
  #acquiredUncontended: Attributes | undefined;
  #timeout: Attributes | undefined;
  #aborted: Attributes | undefined;
  #declined: Attributes | undefined;
  readonly #failed = new Map<string, Attributes>();
  #released: Attributes | undefined;
  #notHeld: Attributes | undefined;
  #held: Attributes | undefined;
  #uncertain: Attributes | undefined;
  #extendedAutomatic: Attributes | undefined;
  #extendedManual: Attributes | undefined;
  readonly #losses = new Map<string, { readonly loss: Attributes; readonly hold: Attributes }>();
  // By state and limit: a key's holders agree on one limit, so this holds one or two entries.
  readonly #permits = new Map<string, Attributes>();
  // By outcome and loss reason: a handful of fixed values.
  readonly #electionChanges = new Map<string, Attributes>();

  constructor(base: Attributes) {
    this.base = Object.freeze(base);
  }

  /** An acquisition sample. */
  acquired(contended: boolean): Attributes {
    if (contended) return (this.#acquiredContended ??= this.#with(AttributeName.OUTCOME, AcquireOutcome.ACQUIRED, AttributeName.CONTENDED, true));
    return (this.#acquiredUncontended ??= this.#with(AttributeName.OUTCOME, AcquireOutcome.ACQUIRED, AttributeName.CONTENDED, false));
  }

  get timeout(): Attributes {
    return (this.#timeout ??= this.#with(AttributeName.OUTCOME, AcquireOutcome.TIMEOUT));
  }

  get aborted(): Attributes {
    return (this.#aborted ??= this.#with(AttributeName.OUTCOME, AcquireOutcome.ABORTED));
  }

  get declined(): Attributes {
    return (this.#declined ??= this.#with(AttributeName.OUTCOME, AcquireOutcome.DECLINED));
  }

  /** A failed acquire call, by error code (a small, fixed set). */
  failed(code: string): Attributes {
    let attributes = this.#failed.get(code);
    if (attributes === undefined) {
      attributes = this.#with(AttributeName.OUTCOME, AcquireOutcome.FAILED, AttributeName.ERROR_TYPE, code);
      this.#failed.set(code, attributes);
    }
    return attributes;
  }

  /** A hold that ended with `release()`, still held (`released`) or not (`not_held`). */
  released(wasHeld: boolean): Attributes {
    if (wasHeld) return (this.#released ??= this.#with(AttributeName.OUTCOME, HoldOutcome.RELEASED));
    return (this.#notHeld ??= this.#with(AttributeName.OUTCOME, HoldOutcome.NOT_HELD));
  }

  /** The `fencelock.lock.count` series for a state. */
  state(state: 'held' | 'uncertain'): Attributes {
    if (state === 'held') return (this.#held ??= this.#with(AttributeName.STATE, 'held'));
    return (this.#uncertain ??= this.#with(AttributeName.STATE, 'uncertain'));
  }

  /** The `fencelock.semaphore.permit.count` series for a state and a semaphore's limit. */
  permits(state: 'held' | 'uncertain', limit: number): Attributes {
    const id = `${state}\u0000${limit}`;
    let attributes = this.#permits.get(id);
    if (attributes === undefined) {
      attributes = Object.freeze({ ...this.state(state), [AttributeName.SEMAPHORE_LIMIT]: limit });
      this.#permits.set(id, attributes);
    }
    return attributes;
  }

  /** A `fencelock.election.leadership.changes` sample: the outcome, and for a loss its reason. */
  electionChange(outcome: ElectionOutcome, reason?: string): Attributes {
    const id = `${outcome}\u0000${reason ?? ''}`;
    let attributes = this.#electionChanges.get(id);
    if (attributes === undefined) {
      attributes =
        reason === undefined
          ? this.#with(AttributeName.ELECTION_OUTCOME, outcome)
          : this.#with(AttributeName.ELECTION_OUTCOME, outcome, AttributeName.LOSS_REASON, reason);
      this.#electionChanges.set(id, attributes);
    }
    return attributes;
  }

  /** An extension sample. */
  extended(automatic: boolean): Attributes {
    if (automatic) return (this.#extendedAutomatic ??= this.#with(AttributeName.EXTENSION_AUTOMATIC, true));
    return (this.#extendedManual ??= this.#with(AttributeName.EXTENSION_AUTOMATIC, false));
  }

  /** A loss (`loss`) and the hold it ended (`hold`), by loss reason. */
  lost(reason: string | undefined): { readonly loss: Attributes; readonly hold: Attributes } {
    const id = reason ?? '';
    let sets = this.#losses.get(id);
    if (sets === undefined) {
      const loss = reason === undefined ? this.base : this.#with(AttributeName.LOSS_REASON, reason);
      sets = { loss, hold: Object.freeze({ ...loss, [AttributeName.OUTCOME]: HoldOutcome.LOST }) };
      this.#losses.set(id, sets);
    }
    return sets;
  }

  #with(name: string, value: string | boolean, name2?: string, value2?: string | boolean): Attributes {
    const attributes: Attributes = { ...this.base, [name]: value };
    if (name2 !== undefined) attributes[name2] = value2;
    // Shared by every measurement of the series: nothing may change it.
    return Object.freeze(attributes);
  }
}

/**
 * @internal Gives the {@link LockAttributeSets} of an event, from a bounded cache.
 * `keyAttribute` maps the key to its attribute value (undefined: no key attribute).
 */
export function lockAttributeCache(
  constantAttributes: Attributes,
  keyAttribute: (key: string) => string | undefined,
): (event: LockEventBase) => LockAttributeSets {
  const cache = new Map<string, LockAttributeSets>();
  return (event) => {
    const key = keyAttribute(event.key);
    // NUL cannot occur in a provider name or mode, so ids cannot collide.
    const id = key === undefined ? `${event.provider}\u0000${event.mode}` : `${event.provider}\u0000${event.mode}\u0000${key}`;
    let sets = cache.get(id);
    if (sets === undefined) {
      const base: Attributes = { ...constantAttributes, [AttributeName.BACKEND]: event.provider, [AttributeName.MODE]: event.mode };
      if (key !== undefined) base[AttributeName.KEY] = key;
      sets = new LockAttributeSets(base);
      if (cache.size >= MAX_CACHED_SETS) cache.delete(cache.keys().next().value as string);
      cache.set(id, sets);
    }
    return sets;
  };
}
