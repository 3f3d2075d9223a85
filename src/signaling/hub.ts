/**
 * The signaling hub: the `/signal` dialect of the broker's
 * {@linkcode SocketHub}, protocol version 1. The socket hub holds its
 * sockets and keeps the rules every dialect shares (frame limit, rate, slow
 * reader, close); this hub adds the join deadline and the frames. It knows
 * sockets only as {@linkcode PeerSocket}, so both runtime adapters feed it
 * unchanged, and sessions only as a {@linkcode Membership}: this broker's
 * own ({@linkcode LocalMembership}), or shared with other brokers through a
 * bus ({@linkcode ClusterMembership}).
 *
 * @module
 */

import type { BusState } from "./bus/mod.ts";
import { CLOSE_CODES } from "./close.ts";
import { ClusterMembership } from "./cluster.ts";
import {
  LocalMembership,
  type Member,
  type Membership,
  type MembershipHost,
} from "./membership.ts";
import { checkProof } from "./keyed.ts";
import {
  fitsSession,
  frames,
  isKeyed,
  type JoinMessage,
  parseClientMessage,
  sessionLabel,
  type SignalErrorCode,
} from "./messages.ts";
import {
  type HubSocket,
  type SocketDialect,
  type SocketEvents,
  SocketHub,
} from "./socket_hub.ts";
import type { HubOptions, PeerSocket } from "./types.ts";

// Closes that keep a joined peer's place for a resume: its connection was
// lost (1006; Deno reports 0, no close frame at all), or the broker
// restarts (1012).
const PARKED: ReadonlySet<number> = new Set([
  0,
  CLOSE_CODES.abnormal,
  CLOSE_CODES.serviceRestart,
]);

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
export type HubClient = SocketEvents;

/** A `/signal` socket: a member of at most one session. */
export interface SignalPeer extends Member, HubSocket {
  /** Its join deadline, until it is admitted. */
  joinTimer: ReturnType<typeof setTimeout> | undefined;
  /** The `Host` its request connected to (what a join's proof signs). */
  readonly host: string;
  /** Whether its join's proof is being checked. */
  proving: boolean;
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
export class SignalingHub implements SocketDialect<SignalPeer> {
  /** The dialect's name, as the socket hub counts its sockets. */
  readonly name = "signal";
  #options: HubOptions;
  #sockets: SocketHub;
  #membership: Membership<SignalPeer>;
  #cluster: ClusterMembership<SignalPeer> | undefined;
  // Joined sockets of this broker by their resume token, so that a join
  // with the token of one still open here (its client moved to a new
  // connection before the broker saw the old one die) takes its place.
  #byToken = new Map<string, SignalPeer>();

  /**
   * Makes an empty hub.
   *
   * @param options The limits, and optionally a logger, the ICE servers of
   * a peer, the bus shared with other brokers, an observer and the
   * broker's socket hub (a hub of its own when absent).
   */
  constructor(options: HubOptions & { sockets?: SocketHub | undefined }) {
    this.#options = options;
    const limits = options.limits;
    this.#sockets = options.sockets ??
      new SocketHub({ limits, logger: options.logger });
    const host: MembershipHost<SignalPeer> = {
      send: (peer, text) => this.#sockets.send(peer, text),
      admitted: (peer, others) => this.#admitted(peer, others),
      full: (peer, session) =>
        this.#error(
          peer,
          "session_full",
          `Cannot join: ${sessionLabel(session)} is full`,
        ),
      drop: (peer, reason) =>
        this.#sockets.close(peer, CLOSE_CODES.tryAgainLater, reason),
    };
    if (options.bus === undefined) {
      this.#membership = new LocalMembership(
        host,
        limits.maxPeersPerSession,
        limits.maxHeldBytes,
      );
    } else {
      this.#cluster = new ClusterMembership(host, {
        bus: options.bus,
        maxPeers: limits.maxPeersPerSession,
        maxFrameBytes: limits.maxFrameBytes,
        maxHeldBytes: limits.maxHeldBytes,
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
      sockets: this.#sockets.socketsOf(this.name),
      sessions: this.#membership.sessions,
      peers: this.#membership.peers,
    };
  }

  /**
   * Live figures: this dialect's sockets, sessions and peers, and the
   * origins of every socket of the socket hub.
   */
  get stats(): HubStats {
    const stats: HubStats = {
      ...this.counts,
      origins: this.#sockets.origins,
    };
    if (this.#cluster !== undefined) stats.bus = this.#cluster.state;
    return stats;
  }

  /** Whether new sockets can join: always without a bus, else while it is up. */
  get busUp(): boolean {
    return this.#cluster === undefined || this.#cluster.state === "up";
  }

  /**
   * Registers a freshly upgraded socket and starts its join deadline.
   *
   * @param socket The socket.
   * @param origin Its `Origin` header, or null when absent.
   * @param host The `Host` its request connected to ("" when unknown: no
   * proof into a private session is then over it).
   * @returns The callbacks for its events.
   */
  connect(socket: PeerSocket, origin: string | null, host = ""): HubClient {
    const peer: SignalPeer = {
      ...this.#sockets.initial(socket, origin),
      id: null,
      session: null,
      admitted: false,
      resume: null,
      joinTimer: undefined,
      host,
      proving: false,
    };
    const events = this.#sockets.open(this, peer);
    peer.joinTimer = setTimeout(() => {
      peer.joinTimer = undefined;
      this.#sockets.close(peer, CLOSE_CODES.policyViolation, "Join timeout");
    }, this.#options.limits.joinTimeoutMs);
    return events;
  }

  /** Closes every socket of the socket hub with 1001 (going away). */
  closeAll(): void {
    this.#sockets.closeAll();
  }

  /** Resolves once no socket of the socket hub is open. */
  drained(): Promise<void> {
    return this.#sockets.drained();
  }

  /** Handles one text frame: one token, then the frame. */
  text(peer: SignalPeer, data: string): void {
    if (!this.#sockets.take(peer, 1)) return;
    this.#onMessage(peer, data);
  }

  /** The protocol's `error` frame. */
  errorFrame(code: string, message: string): string {
    return frames.error(code as SignalErrorCode, message);
  }

  /** `{"type":"reconnect"}`: sent before a drain's 1012 close. */
  reconnectFrame(): string {
    return frames.reconnect();
  }

  /** Counts an error frame. */
  refused(code: string): void {
    this.#options.observer?.signalingError(code);
  }

  /**
   * Leaves the session: the others are told, unless its socket went away
   * (1006) or the broker restarts (1012), when its place is kept for a
   * resume.
   */
  leave(peer: SignalPeer, _shutdown: boolean, code?: number): void {
    clearTimeout(peer.joinTimer);
    peer.joinTimer = undefined;
    if (peer.resume !== null) this.#byToken.delete(peer.resume);
    this.#membership.leave(peer, code !== undefined && PARKED.has(code));
  }

  /** Forgets the places kept for a resume on this broker alone. */
  shutdown(): void {
    this.#membership.shutdown();
  }

  #onMessage(peer: SignalPeer, data: string): void {
    const message = parseClientMessage(data);
    if ("error" in message) {
      this.#error(peer, message.error, message.message);
      return;
    }
    switch (message.type) {
      case "join":
        if (peer.session !== null || peer.proving) {
          this.#error(
            peer,
            "already_joined",
            peer.session === null
              ? "Cannot join: already joining"
              : `Cannot join: already in ${sessionLabel(peer.session)}`,
          );
          return;
        }
        if (isKeyed(message.session)) {
          this.#joinKeyed(peer, message);
        } else {
          this.#join(peer, message.session, message.resume);
        }
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
        if (!fitsSession(message.data, peer.session!)) {
          this.#error(
            peer,
            "bad_message",
            "Cannot accept the frame: only a private session relays sealed signals",
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
        this.#sockets.send(peer, frames.ice(this.#iceServers(peer.id!)));
        break;
      case "leave":
        this.#sockets.close(peer, CLOSE_CODES.normal, "Left");
        break;
    }
  }

  // A private session: the socket learns nothing of it, and no member hears
  // of it, until its proof is checked. The join took its token already.
  #joinKeyed(peer: SignalPeer, join: JoinMessage): void {
    const { session, proof, resume } = join;
    peer.proving = true;
    checkProof(session, proof, peer.host, Date.now()).then((valid) => {
      peer.proving = false;
      if (peer.closing || peer.gone) return;
      if (valid) this.#join(peer, session, resume);
      else {
        this.#error(
          peer,
          "room_locked",
          "Cannot join: this private session needs a valid, fresh proof of its key over this host",
        );
      }
    });
  }

  // A join, with the token of a socket still open here in that session:
  // that socket is parked and closed first, so that this join resumes its
  // place (the old connection is the client's past, not a second peer).
  #join(peer: SignalPeer, session: string, token: string | undefined): void {
    const old = token === undefined ? undefined : this.#byToken.get(token);
    if (old !== undefined && old.admitted && old.session === session) {
      this.#byToken.delete(token!);
      this.#membership.leave(old, true);
      this.#sockets.close(
        old,
        CLOSE_CODES.normal,
        "Resumed on a new connection",
      );
    }
    this.#membership.join(peer, session, token);
  }

  #iceServers(id: string): unknown[] {
    return this.#options.iceServers?.(id) ?? [];
  }

  // The membership admitted the peer: its join deadline is over, and it
  // gets `joined` with the members before it.
  #admitted(peer: SignalPeer, others: string[]): void {
    clearTimeout(peer.joinTimer);
    peer.joinTimer = undefined;
    this.#byToken.set(peer.resume!, peer);
    const id = peer.id!;
    this.#sockets.send(
      peer,
      frames.joined(
        peer.session!,
        id,
        others,
        this.#iceServers(id),
        peer.resume!,
      ),
    );
  }

  #error(peer: SignalPeer, code: SignalErrorCode, message: string): void {
    this.#sockets.refuse(peer, code, message);
  }
}
