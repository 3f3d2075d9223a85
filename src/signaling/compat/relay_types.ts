/**
 * What the dialect hubs ask of the signaling bus, as they see it: a
 * {@linkcode TopicRelay} for `/y-webrtc` topics and `/nostr` namespaces, and
 * an {@linkcode IdRelay} for `/peerjs` (`relays.ts` makes them on the bus, or
 * on a one-node engine for a broker alone).
 *
 * @module
 */

import type { PeerJsFrame } from "./peerjs_frames.ts";

/** Carries topics across brokers (through the signaling bus). */
export interface TopicRelay {
  /**
   * A socket of this broker subscribed to `key`. Resolves false when the
   * topic is full across brokers (the hub then takes the socket out again,
   * and does not call `unsubscribe` for it).
   */
  subscribe(key: string, max: number): Promise<boolean>;
  /** A socket of this broker left `key`. */
  unsubscribe(key: string): void;
  /** Subscribers of `key` on other brokers, as last known. */
  remote(key: string): number;
  /**
   * Sends a checked publish frame (as a client would send it) to the other
   * brokers with subscribers of `key`.
   */
  publish(key: string, frame: string): void;
  /** Claims a clear-mode `from` of topic `key` for this broker. */
  claimFrom(key: string, from: string): Promise<boolean>;
  /** Lets this broker's `from` of topic `key` go. */
  releaseFrom(key: string, from: string): void;
  /** Attaches the hub: publish frames from other brokers come through it. */
  attach(deliver: (key: string, frame: string) => void): void;
}

/** A message for an id that another broker holds. */
export interface RemoteMessage {
  /** The addressee's key (namespace and id). */
  dstKey: string;
  /** The sender's id (in the same namespace). */
  src: string;
  /** The frame's type, destination and payload, checked by the sender. */
  frame: PeerJsFrame;
}

/**
 * Claims ids across brokers and carries messages to the broker that holds
 * an id (through the signaling bus).
 */
export interface IdRelay {
  /** Claims `key` for this broker; false when another broker holds it. */
  claim(key: string): Promise<boolean>;
  /** Lets `key` go. */
  release(key: string): void;
  /**
   * Sends a message to the broker that holds its addressee; false when no
   * broker does.
   */
  send(message: RemoteMessage): Promise<boolean>;
  /**
   * Asks the broker that holds `key` to let it go to the bearer of its
   * token (a PeerJS client back after its broker restarted), and claims it.
   *
   * @param proof The SHA-256 of the token, hex (the token never travels).
   * @returns True when `key` is this broker's now.
   */
  handOver(key: string, proof: string): Promise<boolean>;
  /**
   * Attaches the hub: messages for its ids, and requests to hand one over,
   * come through it.
   */
  attach(hub: IdRelayListener): void;
}

/** What an {@linkcode IdRelay} tells the hub attached to it. */
export interface IdRelayListener {
  /** A message for an id of this broker (unchecked). */
  message(message: RemoteMessage): void;
  /**
   * Another broker asks for the id `key` on behalf of its token's bearer
   * (`proof`: the token's SHA-256, hex): let it go if the proof matches
   * and its socket is away.
   */
  handOver(key: string, proof: string): void;
}
