/**
 * The one least-recently-used cache of the broker: a `Map` in use order
 * (the least recently used first), bounded by a number of entries, a total
 * weight (such as bytes), or both.
 *
 * @module
 */

/** Bounds of an {@linkcode Lru}. */
export interface LruOptions<V> {
  /**
   * Entries kept at most.
   * @default {Infinity}
   */
  maxEntries?: number;
  /**
   * Total weight kept at most; a value heavier than this alone is not kept.
   * @default {Infinity}
   */
  maxWeight?: number;
  /**
   * The weight of a value, read when it is set.
   * @default {() => 1}
   */
  weigh?: (value: V) => number;
}

interface Slot<V> {
  value: V;
  weight: number;
}

/**
 * A bounded least-recently-used cache. `get` and `set` make an entry the
 * most recently used; past a bound the least recently used go first.
 *
 * @example Keep the two most recently used
 * ```ts
 * import assert from "node:assert/strict";
 * import { Lru } from "./lru.ts";
 *
 * const lru = new Lru<string, number>({ maxEntries: 2 });
 * lru.set("a", 1);
 * lru.set("b", 2);
 * lru.get("a");
 * lru.set("c", 3); // drops b, the least recently used
 * assert.deepEqual([...lru.keys()], ["a", "c"]);
 * ```
 */
export class Lru<K, V> {
  readonly #slots = new Map<K, Slot<V>>();
  readonly #maxEntries: number;
  readonly #maxWeight: number;
  readonly #weigh: (value: V) => number;
  #weight = 0;
  /** The slot set or asked for last (the map's last), or undefined. */
  #newest: Slot<V> | undefined;

  /**
   * Makes an empty cache.
   *
   * @param options Its bounds.
   * @throws {RangeError} For a bound that is not a non-negative number.
   */
  constructor(options: LruOptions<V> = {}) {
    const { maxEntries = Infinity, maxWeight = Infinity } = options;
    for (
      const [name, bound] of [["maxEntries", maxEntries], [
        "maxWeight",
        maxWeight,
      ]] as const
    ) {
      if (!(bound >= 0)) {
        throw new RangeError(
          `Cannot make a cache: ${name} '${bound}' is not a non-negative number`,
        );
      }
    }
    this.#maxEntries = maxEntries;
    this.#maxWeight = maxWeight;
    this.#weigh = options.weigh ?? (() => 1);
  }

  /** Entries held now. */
  get size(): number {
    return this.#slots.size;
  }

  /** Total weight held now. */
  get weight(): number {
    return this.#weight;
  }

  /** The value of `key`, made the most recently used, or undefined. */
  get(key: K): V | undefined {
    const slot = this.#slots.get(key);
    if (slot === undefined) return undefined;
    // Already the most recently used (a hot key asked for again and again):
    // nothing to move.
    if (slot !== this.#newest) {
      this.#slots.delete(key);
      this.#slots.set(key, slot);
      this.#newest = slot;
    }
    return slot.value;
  }

  /**
   * Keeps `value` under `key` as the most recently used, dropping the least
   * recently used past a bound.
   *
   * @returns False when the value alone is heavier than `maxWeight` (it is
   * not kept, and an older value of `key` is dropped).
   */
  set(key: K, value: V): boolean {
    this.delete(key);
    const weight = this.#weigh(value);
    if (weight > this.#maxWeight || this.#maxEntries < 1) return false;
    const slot = { value, weight };
    this.#slots.set(key, slot);
    this.#newest = slot;
    this.#weight += weight;
    for (const [oldest, slot] of this.#slots) {
      if (
        this.#weight <= this.#maxWeight &&
        this.#slots.size <= this.#maxEntries
      ) {
        break;
      }
      this.#drop(oldest, slot);
    }
    return true;
  }

  /** Drops `key`; true when it was held. */
  delete(key: K): boolean {
    const slot = this.#slots.get(key);
    if (slot === undefined) return false;
    this.#drop(key, slot);
    return true;
  }

  /** The keys, least recently used first. */
  keys(): IterableIterator<K> {
    return this.#slots.keys();
  }

  #drop(key: K, slot: Slot<V>): void {
    this.#slots.delete(key);
    this.#weight -= slot.weight;
    if (slot === this.#newest) this.#newest = undefined;
  }
}
