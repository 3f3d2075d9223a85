/**
 * The signaling hub: the sockets of `/signal`, and every limit of protocol
 * version 1. It knows sockets only as {@linkcode PeerSocket}, so both
 * runtime adapters feed it unchanged, and sessions only as a
 * {@linkcode Membership}: this broker's own ({@linkcode LocalMembership}),
 * or shared with other brokers through a bus ({@linkcode ClusterMembership}).
 *
 * @module
 */

import type { BusState } from "./bus/mod.ts";
import { CLOSE_CODES, closeWithDeadline } from "./close.ts";
import { ClusterMembership } from "./cluster.ts";
import {
  LocalMembership,
  type Member,
  type Membership,
  type MembershipHost,
} from "./membership.ts";
import {
  exceedsBytes,
  frames,
  parseClientMessage,
  type SignalErrorCode,
} from "./messages.ts";
import { type Bucket, RateLimit } from "./rate_limit.ts";
import type { HubOptions, PeerSocket, SignalingLimits } from "./types.ts";

/** Live figures of the hub, as `/health` reports them. */
export interface HubStats {
  /** Open sockets, joined or not. */
  sockets: number;
  /** Sessions with at least one peer. */
  sessions: number;
  /** Joined peers. */
  peers: number;
  /** Sorted set of the `Origin` values of the open sockets (absent ones left out). */
  origins: string[];
  /** The signaling bus's state; absent when there is no bus. */
  bus?: BusState;
}

/** What an adapter calls for one socket's events. */
export interface HubClient {
  /** A frame arrived: text, or bytes for a binary frame. */
  message(data: string | Uint8Array): void;
  /** The socket closed (by either side); forgets it everywhere. Idempotent. */
  closed(): void;
}

interface Peer extends Member, Bucket {
  socket: PeerSocket;
  origin: string | null;
  joinTimer: ReturnType<typeof setTimeout> | undefined;
  closeTimer: ReturnType<typeof setTimeout> | undefined;
  closing: boolean;
  gone: boolean;
}

/**
 * Relays signaling between the peers of a session. Peer ids are assigned by
 * the hub, and `from` is stamped by it, so no client can pose as another.
 *
 * @example Count live sockets
 * ```ts
 * import assert from "node:assert/strict";
 * import { SignalingHub } from "./hub.ts";
 *
 * const hub = new SignalingHub({
 *   limits: {
 *     maxFrameBytes: 65_536,
 *     maxPeersPerSession: 32,
 *     maxSockets: 10_000,
 *     joinTimeoutMs: 10_000,
 *     rateLimitBurst: 100,
 *     rateLimitPerSecond: 50,
 *     maxBufferedBytes: 1_048_576,
 *     allowedOrigins: null,
 *   },
 * });
 * const sent: string[] = [];
 * const client = hub.connect({ send: (t) => sent.push(t), close() {} }, null);
 * client.message('{"type":"join","session":"demo"}');
 * assert.equal(hub.stats.peers, 1);
 * client.closed();
 * assert.equal(hub.stats.sockets, 0);
 * ```
 */
export class SignalingHub {
  #limits: SignalingLimits;
  #options: HubOptions;
  #rate: RateLimit;
  #membership: Membership<Peer>;
  #cluster: ClusterMembership<Peer> | undefined;
  #live = new Set<Peer>();
  #origins = new Map<string, number>();
  #drained: (() => void)[] = [];

  /**
   * Makes an empty hub.
   *
   * @param options The limits, and optionally a logger, the ICE servers of
   * a peer, the bus shared with other brokers and an observer.
   */
  constructor(options: HubOptions) {
    this.#options = options;
    this.#limits = options.limits;
    this.#rate = new RateLimit(
      this.#limits.rateLimitBurst,
      this.#limits.rateLimitPerSecond,
    );
    const host: MembershipHost<Peer> = {
      send: (peer, text) => this.#send(peer, text),
      admitted: (peer, others) => this.#admitted(peer, others),
      full: (peer, session) =>
        this.#error(
          peer,
          "session_full",
          `Cannot join: session "${session}" is full`,
        ),
      drop: (peer, reason) =>
        this.#close(peer, CLOSE_CODES.tryAgainLater, reason),
    };
    if (options.bus === undefined) {
      this.#membership = new LocalMembership(
        host,
        this.#limits.maxPeersPerSession,
      );
    } else {
      this.#cluster = new ClusterMembership(host, {
        bus: options.bus,
        maxPeers: this.#limits.maxPeersPerSession,
        maxFrameBytes: this.#limits.maxFrameBytes,
        logger: options.logger,
      });
      this.#membership = this.#cluster;
    }
  }

  /**
   * The live counts without the origins: constant time, for a metrics
   * scrape (the origins take a sort of every distinct `Origin`).
   */
  get counts(): { sockets: number; sessions: number; peers: number } {
    return {
      sockets: this.#live.size,
      sessions: this.#membership.sessions,
      peers: this.#membership.peers,
    };
  }

  /** Live figures: sockets, sessions, peers and origins. */
  get stats(): HubStats {
    const stats: HubStats = {
      sockets: this.#live.size,
      sessions: this.#membership.sessions,
      peers: this.#membership.peers,
      origins: [...this.#origins.keys()].sort(),
    };
    if (this.#cluster !== undefined) stats.bus = this.#cluster.state;
    return stats;
  }

  /** Whether new sockets can join: always without a bus, else while it is up. */
  get busUp(): boolean {
    return this.#cluster === undefined || this.#cluster.state === "up";
  }

  /** Whether one more socket is within `maxSockets`. */
  hasRoom(): boolean {
    return this.#live.size < this.#limits.maxSockets;
  }

  /** Whether `origin` (the literal "null" included) may connect. */
  isOriginAllowed(origin: string | null): boolean {
    const allowed = this.#limits.allowedOrigins;
    return allowed === null || (origin !== null && allowed.includes(origin));
  }

  /**
   * Registers a freshly upgraded socket and starts its join deadline.
   *
   * @param socket The socket.
   * @param origin Its `Origin` header, or null when absent.
   * @returns The callbacks for its events.
   */
  connect(socket: PeerSocket, origin: string | null): HubClient {
    const peer: Peer = {
      ...this.#rate.bucket(),
      socket,
      origin,
      id: null,
      session: null,
      admitted: false,
      joinTimer: undefined,
      closeTimer: undefined,
      closing: false,
      gone: false,
    };
    this.#live.add(peer);
    if (origin !== null) {
      this.#origins.set(origin, (this.#origins.get(origin) ?? 0) + 1);
    }
    peer.joinTimer = setTimeout(() => {
      peer.joinTimer = undefined;
      this.#close(peer, CLOSE_CODES.policyViolation, "Join timeout");
    }, this.#limits.joinTimeoutMs);
    return {
      message: (data) => this.#onMessage(peer, data),
      closed: () => this.#onClosed(peer),
    };
  }

  /**
   * Closes every socket with 1001 (going away). Peers are not told of each
   * other's departure: the broker is leaving, not they, and their data
   * channels live on without it.
   */
  closeAll(): void {
    for (const peer of this.#live) peer.closing = true;
    for (const peer of this.#live) {
      this.#leave(peer);
      this.#closeSocket(peer, CLOSE_CODES.goingAway, "Server shutting down");
    }
  }

  /** Resolves once no socket is open. */
  drained(): Promise<void> {
    if (this.#live.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#drained.push(resolve));
  }

  #onMessage(peer: Peer, data: string | Uint8Array): void {
    if (peer.closing) return;
    if (exceedsBytes(data, this.#limits.maxFrameBytes)) {
      this.#close(peer, CLOSE_CODES.messageTooBig, "Frame too large");
      return;
    }
    if (!this.#takeToken(peer)) return;
    if (typeof data !== "string") {
      this.#error(
        peer,
        "bad_message",
        "Cannot accept the frame: frames must be JSON text",
      );
      return;
    }
    const message = parseClientMessage(data);
    if ("error" in message) {
      this.#error(peer, message.error, message.message);
      return;
    }
    switch (message.type) {
      case "join":
        if (peer.session !== null) {
          this.#error(
            peer,
            "already_joined",
            `Cannot join: already in session "${peer.session}"`,
          );
          return;
        }
        this.#membership.join(peer, message.session);
        break;
      case "signal":
        if (!peer.admitted) {
          this.#error(
            peer,
            "not_joined",
            "Cannot signal: join a session first",
          );
          return;
        }
        if (!this.#membership.signal(peer, message.to, message.data)) {
          this.#error(
            peer,
            "unknown_peer",
            `Cannot signal: no peer "${message.to}" in this session`,
          );
          return;
        }
        this.#options.observer?.signal();
        break;
      case "ice":
        if (!peer.admitted) {
          this.#error(
            peer,
            "not_joined",
            "Cannot send ICE servers: join a session first",
          );
          return;
        }
        this.#send(peer, frames.ice(this.#iceServers(peer.id!)));
        break;
      case "leave":
        this.#close(peer, CLOSE_CODES.normal, "Left");
        break;
    }
  }

  #iceServers(id: string): unknown[] {
    return this.#options.iceServers?.(id) ?? [];
  }

  // The membership admitted the peer: its join deadline is over, and it
  // gets `joined` with the members before it.
  #admitted(peer: Peer, others: string[]): void {
    clearTimeout(peer.joinTimer);
    peer.joinTimer = undefined;
    const id = peer.id!;
    this.#send(
      peer,
      frames.joined(peer.session!, id, others, this.#iceServers(id)),
    );
  }

  // An empty bucket drops the frame with one `rate_limited` notice; a
  // further burst of dropped frames closes.
  #takeToken(peer: Peer): boolean {
    const verdict = this.#rate.take(peer);
    if (verdict === "warn") {
      this.#error(
        peer,
        "rate_limited",
        "Cannot accept the frame: too many messages, slow down",
      );
    } else if (verdict === "close") {
      this.#close(peer, CLOSE_CODES.policyViolation, "Rate limit exceeded");
    }
    return verdict === "accept";
  }

  // Sends one frame; a socket whose unsent bytes pass maxBufferedBytes is a
  // slow reader: closed with 1013 so that it cannot make the broker buffer
  // without limit, and its peers are told it left.
  #send(peer: Peer, text: string): void {
    if (peer.closing) return;
    try {
      peer.socket.send(text);
    } catch {
      // A socket that is already closing cannot send; its close event follows.
      return;
    }
    const buffered = peer.socket.bufferedAmount?.() ?? 0;
    if (buffered > this.#limits.maxBufferedBytes) {
      this.#close(peer, CLOSE_CODES.tryAgainLater, "Too slow to read");
    }
  }

  #error(peer: Peer, code: SignalErrorCode, message: string): void {
    this.#options.observer?.signalingError(code);
    this.#send(peer, frames.error(code, message));
  }

  // Leaves the session at once (peers are told), then asks the socket to
  // close; the adapter's close event later calls #onClosed.
  #close(peer: Peer, code: number, reason: string): void {
    if (peer.closing) return;
    peer.closing = true;
    this.#leave(peer);
    this.#closeSocket(peer, code, reason);
  }

  #closeSocket(peer: Peer, code: number, reason: string): void {
    peer.closeTimer = closeWithDeadline(
      peer.socket,
      code,
      reason,
      () => peer.gone,
      (error) =>
        this.#options.logger?.("debug", "Socket close failed", { error }),
    );
  }

  #leave(peer: Peer): void {
    clearTimeout(peer.joinTimer);
    peer.joinTimer = undefined;
    this.#membership.leave(peer);
  }

  #onClosed(peer: Peer): void {
    if (peer.gone) return;
    peer.gone = true;
    clearTimeout(peer.closeTimer);
    peer.closing = true;
    this.#leave(peer);
    this.#live.delete(peer);
    if (peer.origin !== null) {
      const count = this.#origins.get(peer.origin)! - 1;
      if (count === 0) this.#origins.delete(peer.origin);
      else this.#origins.set(peer.origin, count);
    }
    if (this.#live.size === 0) {
      for (const resolve of this.#drained.splice(0)) resolve();
    }
  }
}
