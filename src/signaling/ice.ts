/**
 * ICE servers for a peer: the static entries (STUN, or TURN with fixed
 * credentials) plus TURN entries with per-peer, time-limited credentials in
 * the TURN REST API scheme that coturn calls `use-auth-secret`:
 * `username = "<unix expiry seconds>:<peerId>"` and
 * `credential = base64(HMAC-SHA1(secret, username))`.
 *
 * A pod is a public file, so a password inlined in it is public; credentials
 * minted here expire, and each peer gets its own.
 *
 * @module
 */

import { nodeBuiltin } from "../_util/host.ts";

/** An `RTCIceServer` as the browser takes it. */
export interface IceServer {
  /** One URL or several (`stun:`, `turn:` or `turns:`). */
  urls: string | string[];
  /** TURN username. */
  username?: string;
  /** TURN credential. */
  credential?: string;
}

/** TURN servers whose credentials the broker mints from a shared secret. */
export interface TurnOptions {
  /** `turn:` or `turns:` URLs of the relay. */
  urls: string[];
  /** The secret shared with the TURN server (`static-auth-secret`). */
  secret: string;
  /** How long a minted credential lasts. @default {3600} */
  ttlSeconds?: number;
}

/** A TURN REST API credential. */
export interface TurnCredential {
  /** `"<unix expiry seconds>:<peerId>"`. */
  username: string;
  /** base64 (standard, padded) of HMAC-SHA1(secret, username). */
  credential: string;
}

/** URL schemes allowed in ICE server URLs. */
const ICE_SCHEME = /^(stun|turn|turns):/;
/** URL schemes of TURN servers. */
const TURN_SCHEME = /^turns?:/;

/**
 * Mints one TURN REST API credential.
 *
 * @param secret The shared secret.
 * @param peerId The peer it is for (part of the username).
 * @param expiresAt Expiry, in Unix seconds.
 * @returns The username and credential.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { mintTurnCredential } from "./ice.ts";
 *
 * const { username, credential } = mintTurnCredential("s3cret", "peer", 1700000000);
 * assert.equal(username, "1700000000:peer");
 * assert.equal(credential.length, 28);
 * ```
 */
export function mintTurnCredential(
  secret: string,
  peerId: string,
  expiresAt: number,
): TurnCredential {
  const username = `${expiresAt}:${peerId}`;
  const credential = nodeBuiltin("node:crypto").createHmac("sha1", secret)
    .update(username).digest(
      "base64",
    );
  return { username, credential };
}

/**
 * Makes the function that gives each peer its ICE servers: the static
 * entries as they are, then one TURN entry with fresh credentials.
 *
 * @param iceServers Static entries.
 * @param turn TURN with minted credentials, or null.
 * @param now Clock in milliseconds (for tests).
 * @returns `(peerId) => IceServer[]`.
 */
export function createIceServerSource(
  iceServers: readonly IceServer[],
  turn: Required<TurnOptions> | null,
  now: () => number = Date.now,
): (peerId: string) => IceServer[] {
  const fixed = iceServers.map((server) => ({ ...server }));
  if (turn === null) return () => fixed.map((server) => ({ ...server }));
  const urls = [...turn.urls];
  return (peerId) => {
    const expiresAt = Math.floor(now() / 1000) + turn.ttlSeconds;
    const minted = mintTurnCredential(turn.secret, peerId, expiresAt);
    return [...fixed.map((server) => ({ ...server })), {
      urls: [...urls],
      ...minted,
    }];
  };
}

/** Whether `url` is an ICE server URL (`stun:`, `turn:` or `turns:`). */
export function isIceUrl(url: string): boolean {
  return ICE_SCHEME.test(url) && url.length > 6 && !/\s/.test(url);
}

/** Whether `url` is a TURN server URL (`turn:` or `turns:`). */
export function isTurnUrl(url: string): boolean {
  return TURN_SCHEME.test(url) && isIceUrl(url);
}
