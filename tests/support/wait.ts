// Bounded waits: every wait in the suite gives up after a while and says
// what it waited for, so that a socket that closes early fails its test
// instead of leaving it waiting for ever (tests/unit/waits_test.ts finds
// the waits on socket events that are not bounded).
// Runtime-neutral (it imports nothing): the contract suite imports it, and
// tests/contract/node_test.ts transpiles it for Node 22.

/**
 * How long a wait lasts by default: far longer than anything takes on a
 * machine busy with other work, far shorter than a CI job's time limit.
 */
export const WAIT_MS = 30_000;

/**
 * How long a program the suite runs may take by default: longer than any
 * takes on a loaded machine (a doc section's script, a type check), shorter
 * than a CI job's time limit.
 */
export const RUN_MS = 600_000;

/** Thrown by a bounded wait that gave up. */
export class WaitTimeout extends Error {
  /**
   * @param what What was waited for ("the socket to open").
   * @param ms How long.
   */
  constructor(what: string, ms: number) {
    super(`Timed out after ${ms} ms waiting for ${what}`);
    this.name = "WaitTimeout";
  }
}

/**
 * `promise`, or a {@linkcode WaitTimeout} naming `what` once `ms` have
 * passed. The timer is cleared as soon as `promise` settles.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { within } from "./wait.ts";
 *
 * assert.equal(await within(Promise.resolve(1), "one"), 1);
 * await assert.rejects(
 *   within(new Promise(() => {}), "nothing", 10),
 *   /Timed out after 10 ms waiting for nothing/,
 * );
 * ```
 */
export function within<T>(
  promise: Promise<T>,
  what: string,
  ms: number = WAIT_MS,
): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new WaitTimeout(what, ms)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** What {@linkcode nextEvent} waits for, and what ends the wait early. */
export interface NextEventOptions {
  /** Milliseconds before it gives up. @default {WAIT_MS} */
  ms?: number;
  /**
   * Events that mean `type` will not come (a socket's `close` while waiting
   * for `open`): the wait fails at once, naming the event.
   */
  failOn?: string[];
}

/**
 * The next `type` event of `target` (a WebSocket, an RTCDataChannel, any
 * EventTarget), failing after `ms` with a message naming `what`, or at once
 * when one of `failOn` comes first.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nextEvent } from "./wait.ts";
 *
 * const target = new EventTarget();
 * const opened = nextEvent(target, "open", "the socket to open", {
 *   failOn: ["close"],
 * });
 * target.dispatchEvent(new Event("close"));
 * await assert.rejects(opened, /"close" came while waiting for the socket to open/);
 * ```
 */
export function nextEvent<E extends Event = Event>(
  target: EventTarget,
  type: string,
  what: string,
  { ms = WAIT_MS, failOn = [] }: NextEventOptions = {},
): Promise<E> {
  const listeners: [string, (event: Event) => void][] = [];
  const settled = new Promise<E>((resolve, reject) => {
    listeners.push([type, (event) => resolve(event as E)]);
    for (const other of failOn) {
      listeners.push([other, (event) => reject(early(other, event, what))]);
    }
    for (const [name, listener] of listeners) {
      target.addEventListener(name, listener);
    }
  });
  return within(settled, what, ms).finally(() => {
    for (const [name, listener] of listeners) {
      target.removeEventListener(name, listener);
    }
  });
}

/** A node:events emitter, as far as {@linkcode nextEmit} needs it. */
export interface Emitter {
  once(name: string, listener: (...args: unknown[]) => void): unknown;
  off(name: string, listener: (...args: unknown[]) => void): unknown;
}

/**
 * The arguments of the next `name` event of a node:events `emitter` (a
 * socket, a child process), failing after `ms` with a message naming
 * `what`, or at once on an `error` event.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { EventEmitter } from "node:events";
 * import { nextEmit } from "./wait.ts";
 *
 * const emitter = new EventEmitter();
 * const closed = nextEmit(emitter, "close", "the socket to close");
 * emitter.emit("close", false);
 * assert.deepEqual(await closed, [false]);
 * ```
 */
export function nextEmit(
  emitter: Emitter,
  name: string,
  what: string,
  ms: number = WAIT_MS,
): Promise<unknown[]> {
  let onEvent = (..._: unknown[]) => {};
  let onError = (..._: unknown[]) => {};
  const settled = new Promise<unknown[]>((resolve, reject) => {
    onEvent = (...args) => resolve(args);
    onError = (error) =>
      reject(new Error(`Failed waiting for ${what}`, { cause: error }));
    emitter.once(name, onEvent);
    if (name !== "error") emitter.once("error", onError);
  });
  return within(settled, what, ms).finally(() => {
    emitter.off(name, onEvent);
    emitter.off("error", onError);
  });
}

function early(type: string, event: Event, what: string): Error {
  const code = (event as { code?: number }).code;
  const detail = code === undefined ? "" : ` (code ${code})`;
  return new Error(`"${type}" came${detail} while waiting for ${what}`);
}
