/**
 * The traffic of a `node:http` socket, for idle timeouts that survive a
 * stalled event loop (see `stall_grace.ts`).
 *
 * @module
 */

import type { Duplex } from "node:stream";
import { expireUnlessProgress } from "../_util/stall_grace.ts";

/** What a `node:net` socket counts of its traffic. */
interface Counted {
  bytesRead?: number;
  bytesWritten?: number;
  writableLength?: number;
}

/** Bytes that moved on `socket`: read, or taken by the kernel to send. */
function moved(socket: Duplex): number {
  const { bytesRead = 0, bytesWritten = 0, writableLength = 0 } =
    socket as Counted;
  return bytesRead + bytesWritten - writableLength;
}

/**
 * Calls `expire` for a socket whose idle timer fired, unless bytes move on
 * it within the stall grace (what arrived, or left, while the loop was
 * stalled) or it is gone by then.
 */
export function expireIfStillIdle(socket: Duplex, expire: () => void): void {
  expireUnlessProgress(
    () => (socket.destroyed ? -1 : moved(socket)),
    () => {
      if (!socket.destroyed) expire();
    },
  );
}
