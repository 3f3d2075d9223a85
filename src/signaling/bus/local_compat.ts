/**
 * The in-process engine of the dialects' shared state: the
 * {@linkcode CompatBus} of `LocalBus`'s nodes, and of a broker that has no
 * bus (one node alone). It keeps the contract `compat.ts` states, as
 * `RedisCompatBus` does across processes: per-node topic counts with an
 * atomic `max`, one holder per claim, a publish for every other node with a
 * subscriber, a direct message for the claim's holder only. Messages are
 * handed over in a microtask, as a network engine's would arrive later.
 *
 * @module
 */

import type { CompatBus, CompatBusListener } from "./compat.ts";

/**
 * Topics and claims shared by the nodes of one process.
 *
 * @example Two nodes share a claim
 * ```ts
 * import assert from "node:assert/strict";
 * import { LocalCompatEngine } from "./local_compat.ts";
 *
 * const engine = new LocalCompatEngine();
 * const a = engine.connect("a");
 * const b = engine.connect("b");
 * assert.equal(await a.claim("id"), true);
 * assert.equal(await b.claim("id"), false);
 * ```
 */
export class LocalCompatEngine {
  // Topic key to node to subscribers there; claim key to holder.
  #topics = new Map<string, Map<string, number>>();
  #claims = new Map<string, string>();
  #listeners = new Map<string, CompatBusListener>();

  /**
   * The handle of node `node` (a new node, or one whose share was dropped).
   *
   * @param node The node's id, unique on the engine.
   * @returns Its {@linkcode CompatBus}.
   */
  connect(node: string): CompatBus {
    return new LocalCompatNode(this, node);
  }

  /**
   * Removes everything `node` holds: its subscribers and its claims.
   *
   * @param node The node that left.
   */
  drop(node: string): void {
    this.#listeners.delete(node);
    for (const [key, counts] of this.#topics) {
      counts.delete(node);
      if (counts.size === 0) this.#topics.delete(key);
    }
    for (const [key, holder] of this.#claims) {
      if (holder === node) this.#claims.delete(key);
    }
  }

  /** @internal */
  _attach(node: string, listener: CompatBusListener): void {
    this.#listeners.set(node, listener);
  }

  /** @internal */
  _subscribe(
    node: string,
    key: string,
    max: number,
  ): { ok: boolean; remote: number } {
    const counts = this.#topics.get(key) ?? new Map<string, number>();
    const mine = counts.get(node) ?? 0;
    let total = 0;
    for (const count of counts.values()) total += count;
    if (total >= max) return { ok: false, remote: total - mine };
    counts.set(node, mine + 1);
    this.#topics.set(key, counts);
    return { ok: true, remote: total - mine };
  }

  /** @internal */
  _unsubscribe(node: string, key: string): void {
    const counts = this.#topics.get(key);
    const left = (counts?.get(node) ?? 0) - 1;
    if (counts === undefined) return;
    if (left > 0) counts.set(node, left);
    else counts.delete(node);
    if (counts.size === 0) this.#topics.delete(key);
  }

  /** @internal */
  _publish(node: string, key: string, message: string): number {
    let others = 0;
    for (const [holder, count] of this.#topics.get(key) ?? []) {
      if (holder === node) continue;
      others += count;
      const listener = this.#listeners.get(holder);
      queueMicrotask(() => listener?.topic(key, message));
    }
    return others;
  }

  /** @internal */
  _claim(node: string, key: string): boolean {
    const holder = this.#claims.get(key);
    if (holder !== undefined && holder !== node) return false;
    this.#claims.set(key, node);
    return true;
  }

  /** @internal */
  _release(node: string, key: string): void {
    if (this.#claims.get(key) === node) this.#claims.delete(key);
  }

  /** @internal */
  _send(key: string, message: string): boolean {
    const holder = this.#claims.get(key);
    if (holder === undefined) return false;
    const listener = this.#listeners.get(holder);
    queueMicrotask(() => listener?.direct(key, message));
    return true;
  }
}

class LocalCompatNode implements CompatBus {
  #engine: LocalCompatEngine;
  #node: string;

  constructor(engine: LocalCompatEngine, node: string) {
    this.#engine = engine;
    this.#node = node;
  }

  attach(listener: CompatBusListener): void {
    this.#engine._attach(this.#node, listener);
  }

  subscribe(
    key: string,
    max: number,
  ): Promise<{ ok: boolean; remote: number }> {
    return Promise.resolve(this.#engine._subscribe(this.#node, key, max));
  }

  unsubscribe(key: string): Promise<void> {
    this.#engine._unsubscribe(this.#node, key);
    return Promise.resolve();
  }

  publish(key: string, message: string): Promise<number> {
    return Promise.resolve(this.#engine._publish(this.#node, key, message));
  }

  claim(key: string): Promise<boolean> {
    return Promise.resolve(this.#engine._claim(this.#node, key));
  }

  release(key: string): Promise<void> {
    this.#engine._release(this.#node, key);
    return Promise.resolve();
  }

  send(key: string, message: string): Promise<boolean> {
    return Promise.resolve(this.#engine._send(key, message));
  }
}
