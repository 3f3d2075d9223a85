/**
 * Idle timeouts that survive a stalled event loop.
 *
 * The event loop runs due timers before it takes in what happened on its
 * connections. After a stall (a long synchronous task, a busy machine), an
 * idle timer fires first, although the traffic that would have reset it is
 * already there: a client that kept reading, an upload that kept sending,
 * the next request on a keep-alive connection. Closing the connection then
 * cuts off a client that did nothing wrong. So an expiry waits a moment
 * more, in which that traffic is taken in, and goes ahead only if nothing
 * moved.
 *
 * @module
 */

/**
 * How long an expired idle timer waits for traffic that a stall held back:
 * several turns of the event loop, each of which takes in what the stall
 * left waiting.
 */
export const STALL_GRACE_MS = 100;

/**
 * Calls `expire` after {@linkcode STALL_GRACE_MS}, unless `progress` (a count
 * that grows with traffic) has grown by then. A timer whose expiry is
 * skipped is re-armed by that traffic, as usual.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { expireUnlessProgress, STALL_GRACE_MS } from "./stall_grace.ts";
 *
 * let bytes = 0;
 * let closed = false;
 * expireUnlessProgress(() => bytes, () => closed = true);
 * bytes += 512; // traffic taken in during the grace
 * await new Promise((resolve) => setTimeout(resolve, STALL_GRACE_MS + 50));
 * assert.equal(closed, false);
 * ```
 */
export function expireUnlessProgress(
  progress: () => number,
  expire: () => void,
): void {
  const seen = progress();
  setTimeout(() => {
    if (progress() === seen) expire();
  }, STALL_GRACE_MS);
}
