/**
 * The signaling hub: sessions of peers, join / signal / leave, and every
 * limit of protocol version 1. It knows sockets only as {@linkcode PeerSocket},
 * so both runtime adapters feed it unchanged.
 *
 * @module
 */

import { PEER_ID_LENGTH, randomAlphanumeric } from "../_id.ts";
import type { IceServer } from "../ice.ts";
import type { Logger } from "../log.ts";
import type { ResolvedSignalingOptions } from "../options.ts";
import type { PeerSocket } from "../types.ts";
import { parseClientMessage, type SignalErrorCode } from "./messages.ts";

/** WebSocket close codes the hub uses. */
export const CLOSE_CODES = {
  normal: 1000,
  goingAway: 1001,
  policyViolation: 1008,
  messageTooBig: 1009,
  tryAgainLater: 1013,
} as const;

/**
 * How long a socket asked to close may take to finish the closing
 * handshake before it is terminated, so that a peer that stopped reading
 * cannot hold its connection open.
 */
export const CLOSE_DEADLINE_MS = 2_000;

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
}

/** What an adapter calls for one socket's events. */
export interface HubClient {
  /** A frame arrived: text, or bytes for a binary frame. */
  message(data: string | Uint8Array): void;
  /** The socket closed (by either side); forgets it everywhere. Idempotent. */
  closed(): void;
}

interface Peer {
  socket: PeerSocket;
  origin: string | null;
  id: string | null;
  session: Map<string, Peer> | null;
  sessionName: string;
  tokens: number;
  refilledAt: number;
  dropped: number;
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
 * import { DEFAULT_SIGNALING } from "../options.ts";
 *
 * const hub = new SignalingHub({ ...DEFAULT_SIGNALING, allowedOrigins: null });
 * const sent: string[] = [];
 * const client = hub.connect({ send: (t) => sent.push(t), close() {} }, null);
 * client.message('{"type":"join","session":"demo"}');
 * assert.equal(hub.stats.peers, 1);
 * client.closed();
 * assert.equal(hub.stats.sockets, 0);
 * ```
 */
export class SignalingHub {
  #options: ResolvedSignalingOptions;
  #logger: Logger | undefined;
  #iceServers: (peerId: string) => IceServer[];
  #live = new Set<Peer>();
  #peers = new Map<string, Peer>();
  #sessions = new Map<string, Map<string, Peer>>();
  #origins = new Map<string, number>();
  #drained: (() => void)[] = [];

  /**
   * Makes an empty hub.
   *
   * @param options Resolved signaling limits.
   * @param logger Optional log sink.
   * @param iceServers The ICE servers of a peer (`joined` and `ice` frames);
   * none by default.
   */
  constructor(
    options: ResolvedSignalingOptions,
    logger?: Logger,
    iceServers: (peerId: string) => IceServer[] = () => [],
  ) {
    this.#options = options;
    this.#logger = logger;
    this.#iceServers = iceServers;
  }

  /** Live figures: sockets, sessions, peers and origins. */
  get stats(): HubStats {
    return {
      sockets: this.#live.size,
      sessions: this.#sessions.size,
      peers: this.#peers.size,
      origins: [...this.#origins.keys()].sort(),
    };
  }

  /** Whether one more socket is within `maxSockets`. */
  hasRoom(): boolean {
    return this.#live.size < this.#options.maxSockets;
  }

  /** Whether `origin` (the literal "null" included) may connect. */
  isOriginAllowed(origin: string | null): boolean {
    const allowed = this.#options.allowedOrigins;
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
      socket,
      origin,
      id: null,
      session: null,
      sessionName: "",
      tokens: this.#options.rateLimitBurst,
      refilledAt: Date.now(),
      dropped: 0,
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
    }, this.#options.joinTimeoutMs);
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
    if (exceedsBytes(data, this.#options.maxFrameBytes)) {
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
        this.#join(peer, message.session);
        break;
      case "signal": {
        if (peer.session === null) {
          this.#error(
            peer,
            "not_joined",
            "Cannot signal: join a session first",
          );
          return;
        }
        const target = peer.session.get(message.to);
        if (target === undefined || target === peer) {
          this.#error(
            peer,
            "unknown_peer",
            `Cannot signal: no peer "${message.to}" in this session`,
          );
          return;
        }
        this.#send(
          target,
          JSON.stringify({ type: "signal", from: peer.id, data: message.data }),
        );
        break;
      }
      case "ice":
        if (peer.id === null) {
          this.#error(
            peer,
            "not_joined",
            "Cannot send ICE servers: join a session first",
          );
          return;
        }
        this.#send(
          peer,
          JSON.stringify({
            type: "ice",
            iceServers: this.#iceServers(peer.id),
          }),
        );
        break;
      case "leave":
        this.#close(peer, CLOSE_CODES.normal, "Left");
        break;
    }
  }

  #join(peer: Peer, name: string): void {
    if (peer.session !== null) {
      this.#error(
        peer,
        "already_joined",
        `Cannot join: already in session "${peer.sessionName}"`,
      );
      return;
    }
    const session = this.#sessions.get(name) ?? new Map<string, Peer>();
    if (session.size >= this.#options.maxPeersPerSession) {
      this.#error(
        peer,
        "session_full",
        `Cannot join: session "${name}" is full`,
      );
      return;
    }
    let id = randomAlphanumeric(PEER_ID_LENGTH);
    while (this.#peers.has(id)) id = randomAlphanumeric(PEER_ID_LENGTH);
    clearTimeout(peer.joinTimer);
    peer.joinTimer = undefined;
    const others = [...session.keys()];
    const notice = JSON.stringify({ type: "peer-joined", peerId: id });
    for (const other of session.values()) this.#send(other, notice);
    peer.id = id;
    peer.session = session;
    peer.sessionName = name;
    session.set(id, peer);
    this.#sessions.set(name, session);
    this.#peers.set(id, peer);
    this.#send(
      peer,
      JSON.stringify({
        type: "joined",
        session: name,
        peerId: id,
        peers: others,
        iceServers: this.#iceServers(id),
      }),
    );
  }

  // Token bucket: refilled by elapsed time. An empty bucket drops the frame
  // with one `rate_limited` notice; a further burst of dropped frames closes.
  #takeToken(peer: Peer): boolean {
    const now = Date.now();
    const { rateLimitBurst, rateLimitPerSecond } = this.#options;
    peer.tokens = Math.min(
      rateLimitBurst,
      peer.tokens + ((now - peer.refilledAt) * rateLimitPerSecond) / 1000,
    );
    peer.refilledAt = now;
    if (peer.tokens >= 1) {
      peer.tokens -= 1;
      peer.dropped = 0;
      return true;
    }
    peer.dropped += 1;
    if (peer.dropped === 1) {
      this.#error(
        peer,
        "rate_limited",
        "Cannot accept the frame: too many messages, slow down",
      );
    } else if (peer.dropped > rateLimitBurst) {
      this.#close(peer, CLOSE_CODES.policyViolation, "Rate limit exceeded");
    }
    return false;
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
    if (buffered > this.#options.maxBufferedBytes) {
      this.#close(peer, CLOSE_CODES.tryAgainLater, "Too slow to read");
    }
  }

  #error(peer: Peer, code: SignalErrorCode, message: string): void {
    this.#send(peer, JSON.stringify({ type: "error", code, message }));
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
    try {
      peer.socket.close(code, reason);
    } catch (error) {
      this.#logger?.("debug", "Socket close failed", { error });
    }
    if (peer.socket.terminate === undefined) return;
    peer.closeTimer = setTimeout(() => {
      peer.closeTimer = undefined;
      if (!peer.gone) peer.socket.terminate?.();
    }, CLOSE_DEADLINE_MS);
  }

  #leave(peer: Peer): void {
    clearTimeout(peer.joinTimer);
    peer.joinTimer = undefined;
    const session = peer.session;
    if (session === null || peer.id === null) return;
    session.delete(peer.id);
    this.#peers.delete(peer.id);
    peer.session = null;
    if (session.size === 0) {
      this.#sessions.delete(peer.sessionName);
      return;
    }
    const notice = JSON.stringify({ type: "peer-left", peerId: peer.id });
    for (const other of session.values()) this.#send(other, notice);
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

// UTF-8 size above `max`, without encoding in the common case: a UTF-16 code
// unit takes 1 to 3 bytes.
function exceedsBytes(data: string | Uint8Array, max: number): boolean {
  if (typeof data !== "string") return data.byteLength > max;
  if (data.length > max) return true;
  if (data.length * 3 <= max) return false;
  let bytes = 0;
  for (let i = 0; i < data.length; i++) {
    const code = data.charCodeAt(i);
    bytes += code < 0x80
      ? 1
      : code < 0x800
      ? 2
      : code >= 0xd800 && code < 0xdc00
      ? 4
      : 3;
    if (code >= 0xd800 && code < 0xdc00) i++;
  }
  return bytes > max;
}
