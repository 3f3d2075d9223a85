/**
 * WebSocket close codes, and how the hub closes a socket: the one table of
 * codes the broker names (the hub closes with some, the metrics count every
 * one of them), and the deadline after which a socket that does not finish
 * the closing handshake is dropped.
 *
 * @module
 */

import type { PeerSocket } from "./types.ts";

/**
 * The close codes of RFC 6455 and the IANA registry's 1012–1015, by name.
 * The hub closes with `normal`, `goingAway`, `policyViolation`,
 * `messageTooBig`, `serviceRestart` (a drain) and `tryAgainLater`; the
 * metrics count any of them by number and the rest as "other".
 */
export const CLOSE_CODES = {
  normal: 1000,
  goingAway: 1001,
  protocolError: 1002,
  unsupportedData: 1003,
  noStatus: 1005,
  abnormal: 1006,
  invalidPayload: 1007,
  policyViolation: 1008,
  messageTooBig: 1009,
  mandatoryExtension: 1010,
  internalError: 1011,
  serviceRestart: 1012,
  tryAgainLater: 1013,
  badGateway: 1014,
  tlsHandshake: 1015,
} as const;

/** A close code of {@linkcode CLOSE_CODES}. */
export type CloseCode = typeof CLOSE_CODES[keyof typeof CLOSE_CODES];

const KNOWN = new Set<number>(Object.values(CLOSE_CODES));

/**
 * Whether `code` is one of {@linkcode CLOSE_CODES}.
 *
 * @param code A close code as a socket reported it.
 * @returns True for a code the table names.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isKnownCloseCode } from "./close.ts";
 *
 * assert.equal(isKnownCloseCode(1013), true);
 * assert.equal(isKnownCloseCode(4000), false);
 * ```
 */
export function isKnownCloseCode(code: number): code is CloseCode {
  return KNOWN.has(code);
}

/**
 * How long a socket asked to close may take to finish the closing
 * handshake before it is terminated, so that a peer that stopped reading
 * cannot hold its connection open.
 */
export const CLOSE_DEADLINE_MS = 2_000;

/**
 * Asks `socket` to close, and terminates it if it is still open
 * {@linkcode CLOSE_DEADLINE_MS} later (when the socket can be terminated).
 *
 * @param socket The socket.
 * @param code The close code.
 * @param reason The close reason.
 * @param gone Whether the socket's close event came meanwhile.
 * @param onError Told when `close` throws.
 * @returns The deadline's timer, to clear when the close event comes; or
 * undefined when the socket cannot be terminated.
 */
export function closeWithDeadline(
  socket: PeerSocket,
  code: number,
  reason: string,
  gone: () => boolean,
  onError?: (error: unknown) => void,
): ReturnType<typeof setTimeout> | undefined {
  try {
    socket.close(code, reason);
  } catch (error) {
    onError?.(error);
  }
  if (socket.terminate === undefined) return undefined;
  return setTimeout(() => {
    if (!gone()) socket.terminate?.();
  }, CLOSE_DEADLINE_MS);
}
