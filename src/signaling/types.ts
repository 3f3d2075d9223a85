/**
 * What the signaling layer needs from the layers around it: a WebSocket
 * ({@linkcode PeerSocket}), its limits and collaborators
 * ({@linkcode HubOptions}), and someone to tell what it relays
 * ({@linkcode SignalingObserver}). The configuration and the metrics import
 * these; the signaling layer imports neither.
 *
 * @module
 */

import type { Logger } from "../_util/log.ts";
import type { Bus } from "./bus/mod.ts";
import type { IceServer } from "./ice.ts";

/** A WebSocket as the signaling hub sees it: the two things it ever does. */
export interface PeerSocket {
  /** Sends one text frame. */
  send(text: string): void;
  /** Closes the socket with a WebSocket close code and reason. */
  close(code: number, reason: string): void;
  /** Optional: bytes sent but not yet written to the network. */
  bufferedAmount?(): number;
  /**
   * Optional: drops the connection at once, for a peer that does not finish
   * the closing handshake in time.
   */
  terminate?(): void;
}

/** The limits of the signaling protocol the hub enforces. */
export interface SignalingLimits {
  /** Largest frame in bytes. */
  maxFrameBytes: number;
  /** Peers in one session (across brokers with a bus). */
  maxPeersPerSession: number;
  /** Open sockets in the broker. */
  maxSockets: number;
  /** Time a socket has to join before it is closed (1008). */
  joinTimeoutMs: number;
  /** Token bucket size: frames a socket may send at once. */
  rateLimitBurst: number;
  /** Token refill per second. */
  rateLimitPerSecond: number;
  /** Unsent bytes one socket may hold before it is closed (1013). */
  maxBufferedBytes: number;
  /**
   * Bytes held for all the away peers of a broker without a bus.
   * @default {MAX_HELD_BYTES_TOTAL}
   */
  maxHeldBytes?: number;
  /** Allowed `Origin` values, or null for any. */
  allowedOrigins: string[] | null;
}

/**
 * What the signaling hub reports as it relays (a `Metrics` is one), so the
 * hub depends on this shape and not on the metrics.
 */
export interface SignalingObserver {
  /** A signal frame was relayed to its addressee. */
  signal(): void;
  /**
   * An error frame was sent.
   *
   * @param code Its code.
   */
  signalingError(code: string): void;
}

/** Options of the `SignalingHub`. */
export interface HubOptions {
  /** The protocol's limits. */
  limits: SignalingLimits;
  /** Log sink; nothing is logged without one. */
  logger?: Logger | undefined;
  /**
   * The ICE servers of a peer (`joined` and `ice` frames); none without
   * this.
   */
  iceServers?: ((peerId: string) => IceServer[]) | undefined;
  /**
   * The signaling bus shared with other brokers; without one the hub's
   * sessions are its own.
   */
  bus?: Bus | undefined;
  /** Told of each relayed signal and each error frame. */
  observer?: SignalingObserver | undefined;
}
