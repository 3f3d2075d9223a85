/**
 * The signaling hub: sessions of peers, join / signal / leave, and every
 * limit of protocol version 1. It knows sockets only as {@linkcode PeerSocket},
 * so both runtime adapters feed it unchanged.
 *
 * @module
 */

import { PEER_ID_LENGTH, randomAlphanumeric } from "../_util/id.ts";
import type { IceServer } from "./ice.ts";
import type { Logger } from "../_util/log.ts";
import type { ResolvedSignalingOptions } from "../config/options.ts";
import type { PeerSocket } from "./types.ts";
import type {
  Bus,
  BusDelivery,
  BusEvent,
  BusSnapshot,
  BusState,
} from "./bus/mod.ts";
import { parseClientMessage, type SignalErrorCode } from "./messages.ts";
import type { SignalingObserver } from "../operator/metrics.ts";

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

// A session as one hub sees it. Without a bus, `peers` is all of it. With
// one, `remote` holds the members other nodes hold, `pending` the local
// joiners whose join the bus has not ordered yet, and `seq` the bus position
// the view is exact at (-1 until the first snapshot; events that arrive
// before it wait in `backlog`).
interface Session {
  name: string;
  peers: Map<string, Peer>;
  remote: Map<string, string>;
  pending: Map<string, Peer>;
  seq: number;
  backlog: BusEvent[];
  watching: Promise<void> | null;
}

interface Peer {
  socket: PeerSocket;
  origin: string | null;
  id: string | null;
  session: Session | null;
  /** Whether its join waits for the bus. */
  pending: boolean;
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
 * import { DEFAULT_SIGNALING } from "../config/options.ts";
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
  #observer: SignalingObserver | undefined;
  #iceServers: (peerId: string) => IceServer[];
  #live = new Set<Peer>();
  #peers = new Map<string, Peer>();
  #sessions = new Map<string, Session>();
  #origins = new Map<string, number>();
  #drained: (() => void)[] = [];
  #bus: Bus | undefined;
  // Peers whose bus `leave` failed while the bus was down: retried once it
  // is back (session name by peer id).
  #unsentLeaves = new Map<string, string>();

  /**
   * Makes an empty hub.
   *
   * @param options Resolved signaling limits.
   * @param logger Optional log sink.
   * @param iceServers The ICE servers of a peer (`joined` and `ice` frames);
   * none by default.
   * @param bus The signaling bus shared with other brokers; without one the
   * hub's sessions are its own.
   */
  constructor(
    options: ResolvedSignalingOptions,
    logger?: Logger,
    iceServers: (peerId: string) => IceServer[] = () => [],
    bus?: Bus,
    observer?: SignalingObserver,
  ) {
    this.#observer = observer;
    this.#options = options;
    this.#logger = logger;
    this.#iceServers = iceServers;
    this.#bus = bus;
    bus?.attach({
      event: (event) => this.#onBusEvent(event),
      deliver: (delivery) => this.#onBusDelivery(delivery),
      state: (state, lost) => this.#onBusState(state, lost),
    });
  }

  /** Live figures: sockets, sessions, peers and origins. */
  get stats(): HubStats {
    const stats: HubStats = {
      sockets: this.#live.size,
      sessions: this.#sessions.size,
      peers: this.#peers.size,
      origins: [...this.#origins.keys()].sort(),
    };
    if (this.#bus !== undefined) stats.bus = this.#bus.state;
    return stats;
  }

  /** Whether new sockets can join: always without a bus, else while it is up. */
  get busUp(): boolean {
    return this.#bus === undefined || this.#bus.state === "up";
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
      pending: false,
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
        if (peer.session === null || peer.pending) {
          this.#error(
            peer,
            "not_joined",
            "Cannot signal: join a session first",
          );
          return;
        }
        const target = peer.session.peers.get(message.to);
        const node = peer.session.remote.get(message.to);
        if ((target === undefined && node === undefined) || target === peer) {
          this.#error(
            peer,
            "unknown_peer",
            `Cannot signal: no peer "${message.to}" in this session`,
          );
          return;
        }
        const text = JSON.stringify({
          type: "signal",
          from: peer.id,
          data: message.data,
        });
        if (target !== undefined) this.#send(target, text);
        else this.#relay(node!, peer.sessionName, message.to, text);
        this.#observer?.signal();
        break;
      }
      case "ice":
        if (peer.id === null || peer.pending) {
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
    if (this.#bus !== undefined) {
      this.#joinOnBus(peer, name, this.#bus);
      return;
    }
    const session = this.#sessions.get(name) ?? newSession(name);
    if (session.peers.size >= this.#options.maxPeersPerSession) {
      this.#error(
        peer,
        "session_full",
        `Cannot join: session "${name}" is full`,
      );
      return;
    }
    const id = this.#freshId();
    peer.id = id;
    peer.session = session;
    peer.sessionName = name;
    this.#sessions.set(name, session);
    this.#peers.set(id, peer);
    this.#admit(peer, session);
  }

  // The joiner becomes a member: the others are told, then it gets `joined`
  // with every member before it (this node's and the other nodes').
  #admit(peer: Peer, session: Session): void {
    const id = peer.id!;
    clearTimeout(peer.joinTimer);
    peer.joinTimer = undefined;
    peer.pending = false;
    session.pending.delete(id);
    const others = [...session.peers.keys(), ...session.remote.keys()];
    this.#notify(session, "peer-joined", id);
    session.peers.set(id, peer);
    this.#send(
      peer,
      JSON.stringify({
        type: "joined",
        session: session.name,
        peerId: id,
        peers: others,
        iceServers: this.#iceServers(id),
      }),
    );
  }

  // A join through the bus. The session's events are watched before the
  // bus orders the join, so that from the join's snapshot on the view misses
  // no change; the joiner is admitted when its own `joined` event comes by
  // (or the snapshot that holds it, for a session new to this node), so
  // every member of this node sees changes in the bus's one order.
  #joinOnBus(peer: Peer, name: string, bus: Bus): void {
    if (bus.state !== "up") {
      this.#close(peer, CLOSE_CODES.tryAgainLater, "Signaling bus down");
      return;
    }
    let session = this.#sessions.get(name);
    if (session === undefined) {
      session = newSession(name);
      this.#sessions.set(name, session);
      session.watching = bus.watch(name);
    }
    const id = this.#freshId();
    peer.id = id;
    peer.session = session;
    peer.sessionName = name;
    peer.pending = true;
    session.pending.set(id, peer);
    this.#peers.set(id, peer);
    const joined = (async () => {
      await session.watching;
      return await bus.join(name, id, this.#options.maxPeersPerSession);
    })();
    joined.then((result) => {
      if (peer.session !== session || !peer.pending) {
        // It left (or was admitted and left) while the bus worked.
        if (result.ok && peer.session !== session) this.#busLeave(name, id);
        return;
      }
      if (result.ok) {
        if (session.seq < 0) this.#sync(session, result.snapshot);
        return;
      }
      this.#unpend(peer, session);
      if (result.reason === "full") {
        this.#error(
          peer,
          "session_full",
          `Cannot join: session "${name}" is full`,
        );
      } else if (result.reason === "taken") {
        this.#join(peer, name);
      } else {
        this.#close(peer, CLOSE_CODES.tryAgainLater, "Signaling bus lost");
      }
    }, (error) => {
      this.#logger?.("warn", "Cannot join through the signaling bus", {
        error: String((error as Error)?.message ?? error),
      });
      if (peer.session !== session) return;
      this.#close(peer, CLOSE_CODES.tryAgainLater, "Signaling bus down");
    });
  }

  #freshId(): string {
    let id = randomAlphanumeric(PEER_ID_LENGTH);
    while (this.#peers.has(id)) id = randomAlphanumeric(PEER_ID_LENGTH);
    return id;
  }

  // A pending joiner goes back to not joined.
  #unpend(peer: Peer, session: Session): void {
    session.pending.delete(peer.id!);
    this.#peers.delete(peer.id!);
    peer.id = null;
    peer.session = null;
    peer.pending = false;
    this.#dropIfEmpty(session);
  }

  #dropIfEmpty(session: Session): void {
    if (session.peers.size > 0 || session.pending.size > 0) return;
    if (this.#sessions.get(session.name) !== session) return;
    this.#sessions.delete(session.name);
    this.#bus?.unwatch(session.name).catch(() => {});
  }

  // The first view of a session on this node: the snapshot, then the events
  // that came in meanwhile.
  #sync(session: Session, snapshot: BusSnapshot): void {
    session.seq = snapshot.seq;
    const me = this.#bus!.node;
    const admitted: Peer[] = [];
    for (const [id, node] of snapshot.members) {
      if (node !== me) session.remote.set(id, node);
      else {
        const joiner = session.pending.get(id);
        if (joiner !== undefined) admitted.push(joiner);
      }
    }
    for (const joiner of admitted) this.#admit(joiner, session);
    for (const event of session.backlog.splice(0)) {
      this.#applyEvent(session, event);
    }
  }

  #onBusEvent(event: BusEvent): void {
    const session = this.#sessions.get(event.session);
    if (session === undefined) return;
    if (session.seq < 0) session.backlog.push(event);
    else this.#applyEvent(session, event);
  }

  #applyEvent(session: Session, event: BusEvent): void {
    if (event.seq <= session.seq) return;
    session.seq = event.seq;
    const mine = event.node === this.#bus!.node;
    if (event.kind === "joined") {
      if (mine) {
        const joiner = session.pending.get(event.peerId);
        if (joiner !== undefined) this.#admit(joiner, session);
      } else if (!session.remote.has(event.peerId)) {
        session.remote.set(event.peerId, event.node);
        this.#notify(session, "peer-joined", event.peerId);
      }
    } else if (session.remote.delete(event.peerId)) {
      this.#notify(session, "peer-left", event.peerId);
    } else if (mine) {
      // The bus dropped a peer this node still holds (the node was taken
      // for dead): it is no longer anyone's peer, so let it go.
      const local = session.peers.get(event.peerId);
      if (local !== undefined) {
        this.#close(local, CLOSE_CODES.tryAgainLater, "Signaling bus lost");
      }
    }
  }

  #notify(session: Session, type: "peer-joined" | "peer-left", id: string) {
    const notice = JSON.stringify({ type, peerId: id });
    for (const other of session.peers.values()) this.#send(other, notice);
  }

  #onBusDelivery(delivery: BusDelivery): void {
    const target = this.#peers.get(delivery.to);
    if (target === undefined || target.pending) return;
    if (target.sessionName !== delivery.session) return;
    this.#send(target, delivery.text);
  }

  #onBusState(state: BusState, lost: boolean): void {
    this.#logger?.(state === "up" ? "info" : "warn", `Signaling bus ${state}`, {
      lost,
    });
    if (state !== "up") return;
    if (lost) {
      // This node's peers are no longer on the bus: close them so their
      // clients join again, through this broker or another.
      this.#unsentLeaves.clear();
      for (const session of [...this.#sessions.values()]) {
        for (
          const peer of [...session.peers.values(), ...session.pending.values()]
        ) {
          this.#close(peer, CLOSE_CODES.tryAgainLater, "Signaling bus lost");
        }
      }
      return;
    }
    for (const [id, name] of [...this.#unsentLeaves]) {
      this.#unsentLeaves.delete(id);
      this.#busLeave(name, id);
    }
    for (const session of this.#sessions.values()) this.#resync(session);
  }

  // After the bus came back, events may have been lost: compare the view
  // with a fresh snapshot and tell the members what changed.
  #resync(session: Session): void {
    this.#bus!.snapshot(session.name).then((snapshot) => {
      if (this.#sessions.get(session.name) !== session) return;
      if (session.seq < 0) {
        this.#sync(session, snapshot);
        return;
      }
      if (snapshot.seq <= session.seq) return;
      session.seq = snapshot.seq;
      const me = this.#bus!.node;
      for (const id of [...session.remote.keys()]) {
        if (snapshot.members.has(id)) continue;
        session.remote.delete(id);
        this.#notify(session, "peer-left", id);
      }
      for (const [id, node] of snapshot.members) {
        const joiner = node === me ? session.pending.get(id) : undefined;
        if (joiner !== undefined) this.#admit(joiner, session);
        else if (node !== me && !session.remote.has(id)) {
          session.remote.set(id, node);
          this.#notify(session, "peer-joined", id);
        }
      }
      for (const [id, peer] of [...session.peers]) {
        if (!snapshot.members.has(id)) {
          this.#close(peer, CLOSE_CODES.tryAgainLater, "Signaling bus lost");
        }
      }
    }, () => {});
  }

  #relay(node: string, session: string, to: string, text: string): void {
    this.#bus!.deliver(node, { session, to, text }).catch((error) => {
      this.#logger?.("debug", "Cannot relay through the signaling bus", {
        error: String((error as Error)?.message ?? error),
      });
    });
  }

  #busLeave(name: string, id: string): void {
    this.#bus!.leave(name, id).catch(() => {
      this.#unsentLeaves.set(id, name);
    });
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
    this.#observer?.signalingError(code);
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
    if (peer.pending) {
      // Its join is still with the bus; the answer will undo it.
      session.pending.delete(peer.id);
      this.#peers.delete(peer.id);
      peer.session = null;
      peer.pending = false;
      this.#dropIfEmpty(session);
      return;
    }
    session.peers.delete(peer.id);
    this.#peers.delete(peer.id);
    peer.session = null;
    if (this.#bus !== undefined) this.#busLeave(session.name, peer.id);
    if (session.peers.size === 0) {
      if (this.#bus === undefined) this.#sessions.delete(session.name);
      else this.#dropIfEmpty(session);
      return;
    }
    this.#notify(session, "peer-left", peer.id);
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

function newSession(name: string): Session {
  return {
    name,
    peers: new Map(),
    remote: new Map(),
    pending: new Map(),
    seq: -1,
    backlog: [],
    watching: null,
  };
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
