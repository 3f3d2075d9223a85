/**
 * The room: every peer of one session, meshed over WebRTC data channels,
 * with the broker used for signaling only. See `mod.ts` for the design.
 *
 * @module
 */

import { CONTROL, LAST, Link, type Route, TEXT } from "./negotiation.ts";
import { type BrokerFrame, Signaling } from "./socket.ts";

/** Options of {@linkcode joinRoom}. */
export interface JoinOptions {
  /**
   * The session: 1 to 128 characters of `[A-Za-z0-9_-]`.
   * @default {the URL fragment; a fresh one, written to `location.hash`, when it has none}
   */
  session?: string;
  /**
   * The broker's signaling URL.
   * @default {`/signal` on the page's own host, `wss:` under `https:`}
   */
  url?: string;
  /**
   * More settings for each `RTCPeerConnection` (e.g. `iceTransportPolicy`);
   * its `iceServers` come before the broker's.
   */
  rtc?: RTCConfiguration;
}

/** A peer's connection: its state and whether it is direct or relayed. */
export interface ConnectionInfo {
  /** The `RTCPeerConnection`'s state (`closed` for an unknown peer). */
  state: RTCPeerConnectionState;
  /** The selected candidate pair's route; null until known. */
  route: Route;
}

/** Events a room dispatches. */
export type RoomEventType =
  | "peerjoin"
  | "peerleave"
  | "message"
  | "connectionchange"
  | "onlinechange";

/** What a room dispatches: the peer it is about and, for `message`, the data. */
export class RoomEvent extends Event {
  /** The peer (empty for `onlinechange`). */
  readonly peerId: string;
  /** The message: a string, or an ArrayBuffer for binary data. */
  readonly data: string | ArrayBuffer | undefined;

  /**
   * Makes an event.
   *
   * @param type The event type.
   * @param peerId The peer.
   * @param data The message, for `message`.
   */
  constructor(type: RoomEventType, peerId = "", data?: string | ArrayBuffer) {
    super(type);
    this.peerId = peerId;
    this.data = data;
  }
}

/** Options of {@linkcode Room.send}. */
export interface SendOptions {
  /** One peer's id; every peer when absent or undefined. */
  to?: string | undefined;
}

const SESSION = /^[\w-]{1,128}$/;
const ID = /^\w{1,64}$/;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

function freshSession(): string {
  const alphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";
  // 64 symbols: `byte & 63` picks uniformly.
  return Array.from(
    crypto.getRandomValues(new Uint8Array(16)),
    (byte) => alphabet[byte & 63],
  ).join("");
}

function defaultSession(): string {
  const hash = location.hash.slice(1);
  if (SESSION.test(hash)) return hash;
  return location.hash = freshSession();
}

function defaultUrl(): string {
  // A sandboxed pod's origin is opaque ("null"), but its href is real.
  const url = new URL("/signal", location.href);
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  return url.href;
}

/**
 * A session's peers, meshed over data channels. Made by
 * {@linkcode joinRoom}; an `EventTarget` dispatching {@linkcode RoomEvent}s:
 * `peerjoin` and `peerleave` (a data channel to `peerId` opened or closed),
 * `message` (`data` from `peerId`), `connectionchange` (see
 * {@linkcode Room.connection}) and `onlinechange` (see {@linkcode Room.online}).
 */
export class Room extends EventTarget {
  #id = "";
  #sid = "";
  #session: string;
  #rtc: RTCConfiguration;
  #signaling: Signaling;
  #ice: RTCIceServer[] = [];
  #iceTimer?: ReturnType<typeof setTimeout>;
  #online = false;
  #left = false;
  #done: ((error?: Error) => void) | null;
  // Links by the remote's current signaling id, and by its stable id once
  // its hello arrived (those are the room's peers).
  #links = new Map<string, Link>();
  #peers = new Map<string, Link>();

  /**
   * Starts joining; prefer {@linkcode joinRoom}, which waits for it.
   *
   * @param options Session, signaling URL, connection settings.
   * @param done Called once: on the first join, or with the reason it failed.
   * @throws {TypeError} When `options.session` is not a valid session.
   */
  constructor(
    options: JoinOptions = {},
    done: (error?: Error) => void = () => {},
  ) {
    super();
    const session = options.session ?? defaultSession();
    if (!SESSION.test(session)) {
      throw new TypeError(`Cannot join: invalid session "${session}"`);
    }
    this.#session = session;
    this.#rtc = options.rtc ?? {};
    this.#done = done;
    this.#signaling = new Signaling(
      options.url ?? defaultUrl(),
      session,
      (frame) => this.#frame(frame),
      (code) => {
        this.#setOnline(false);
        // Before the first join a closed socket is an answer, not a blip.
        this.#fail(`the signaling socket closed (${code})`);
      },
    );
    globalThis.addEventListener?.("pagehide", () => this.leave());
  }

  /**
   * This peer's id: the one the broker gave on the first join. It stays the
   * same across rejoins, although the broker's id for it changes.
   */
  get peerId(): string {
    return this.#id;
  }

  /** The session. */
  get session(): string {
    return this.#session;
  }

  /** The ids of the peers with an open data channel. */
  get peers(): string[] {
    return [...this.#peers.keys()];
  }

  /** Whether the broker can be reached now (new peers can join). */
  get online(): boolean {
    return this.#online;
  }

  /**
   * The connection to one peer: its state and whether it is direct or
   * relayed (from the selected candidate pair).
   *
   * @param peerId The peer.
   * @returns Its state and route.
   */
  connection(peerId: string): ConnectionInfo {
    const link = this.#peers.get(peerId);
    return {
      state: link?.pc.connectionState ?? "closed",
      route: link?.route ?? null,
    };
  }

  /**
   * Sends a message to one peer or to every peer. Large messages are split
   * and joined again; sending waits for room in each channel's buffer.
   *
   * @param data Text, an ArrayBuffer or a typed array (copied at once).
   * @param options `to`: one peer's id.
   * @throws {TypeError} When `data` is of another type.
   * @throws {Error} When the room was left or `to` is not an open peer.
   */
  send(
    data: string | ArrayBuffer | ArrayBufferView,
    options: SendOptions = {},
  ): void {
    if (this.#left) throw new Error("Cannot send: the room was left");
    let flags = LAST;
    let bytes: Uint8Array;
    if (typeof data === "string") {
      bytes = encoder.encode(data);
      flags |= TEXT;
    } else if (data instanceof ArrayBuffer) {
      bytes = new Uint8Array(data).slice();
    } else if (ArrayBuffer.isView(data)) {
      bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength)
        .slice();
    } else {
      throw new TypeError(
        "Cannot send: data must be a string, an ArrayBuffer or a typed array",
      );
    }
    const { to } = options;
    const links = to === undefined
      ? this.#peers.values()
      : [this.#peers.get(to)];
    for (const link of links) {
      if (!link) throw new Error(`Cannot send: no open channel to "${to}"`);
      link.send(flags, bytes);
    }
  }

  /** Leaves the session: closes the signaling socket and every connection. */
  leave(): void {
    if (this.#left) return;
    this.#left = true;
    clearTimeout(this.#iceTimer);
    this.#signaling.close();
    for (const link of [...this.#links.values(), ...this.#peers.values()]) {
      link.close();
    }
    this.#fail("the room was left");
  }

  #fail(reason: string): void {
    if (!this.#done) return;
    this.#done(new Error(`Cannot join: ${reason}`));
    this.#done = null;
    this.leave();
  }

  #emit(type: RoomEventType, peerId?: string, data?: string | ArrayBuffer) {
    this.dispatchEvent(new RoomEvent(type, peerId, data));
  }

  #setOnline(online: boolean): void {
    if (online === this.#online) return;
    this.#online = online;
    this.#emit("onlinechange");
  }

  #frame(frame: BrokerFrame): void {
    switch (frame.type) {
      case "joined": {
        this.#sid = frame.peerId!;
        this.#id ||= this.#sid;
        this.#setIce(frame.iceServers);
        // A rejoin: links still negotiating were addressed to old ids and
        // are dropped; open ones stay, and learn this peer's new id.
        for (const link of this.#links.values()) {
          if (!link.open) link.close();
        }
        for (const link of this.#peers.values()) this.#hello(link);
        for (const sid of frame.peers ?? []) this.#meet(sid);
        this.#done?.();
        this.#done = null;
        this.#setOnline(true);
        break;
      }
      case "peer-joined":
        this.#meet(frame.peerId!);
        break;
      case "peer-left": {
        // An open channel does not need the broker: only its own close
        // (the peer left the room, or its connection failed) ends it.
        const link = this.#links.get(frame.peerId!);
        if (link && !link.open) link.close();
        break;
      }
      case "signal": {
        // Only an offer starts a link: anything else from an unknown id is
        // left over from a link that is gone.
        const { from, data } = frame;
        const link = this.#links.get(from!) ??
          (data?.sdp?.type === "offer" ? this.#link(from!) : null);
        link?.signal(data!);
        break;
      }
      case "ice":
        this.#setIce(frame.iceServers);
        break;
      case "error":
        // Only fatal before the first join (e.g. session_full); later ones
        // are races such as `unknown_peer` for a peer that just left.
        this.#fail(`${frame.code}: ${frame.message}`);
    }
  }

  // The end with the higher signaling id offers; the other makes its link
  // when the offer comes. Offers still cross at times (both ends restart
  // ICE at once, or a link is made again across a broker restart): then
  // the lower id is polite and yields.
  #meet(sid: string): void {
    if (sid < this.#sid) this.#link(sid);
  }

  #link(sid: string): Link {
    let link = this.#links.get(sid);
    if (!link) {
      link = new Link(
        {
          signal: (link, data) =>
            this.#signaling.send({ type: "signal", to: link.sid, data }),
          config: () => ({
            ...this.#rtc,
            iceServers: [...this.#rtc.iceServers ?? [], ...this.#ice],
          }),
          opened: (link) => this.#hello(link),
          received: (link, flags, bytes) => this.#received(link, flags, bytes),
          changed: (link) => link.id && this.#emit("connectionchange", link.id),
          closed: (link) => {
            if (this.#links.get(link.sid) === link) {
              this.#links.delete(link.sid);
            }
            if (link.id && this.#peers.get(link.id) === link) {
              this.#peers.delete(link.id);
              this.#emit("peerleave", link.id);
            }
          },
        },
        sid,
        this.#sid < sid,
      );
      this.#links.set(sid, link);
    }
    return link;
  }

  #hello(link: Link): void {
    link.send(
      CONTROL | LAST,
      encoder.encode(JSON.stringify({ id: this.#id, sid: this.#sid })),
    );
  }

  #received(link: Link, flags: number, bytes: Uint8Array<ArrayBuffer>): void {
    if (flags & CONTROL) {
      let hello: { id?: unknown; sid?: unknown };
      try {
        hello = JSON.parse(decoder.decode(bytes));
      } catch {
        return;
      }
      const { id, sid } = hello;
      if (typeof id === "string" && typeof sid === "string" && ID.test(id)) {
        this.#identify(link, id, sid);
      }
    } else if (link.id && this.#peers.get(link.id) === link) {
      this.#emit(
        "message",
        link.id,
        flags & TEXT ? decoder.decode(bytes) : bytes.buffer,
      );
    }
  }

  // A hello says which peer is at the other end of `link` and its current
  // signaling id. Across a broker restart one peer may briefly have two
  // links: both ends keep the one that was theirs first and close the other.
  #identify(link: Link, id: string, sid: string): void {
    const keep = this.#peers.get(id) ?? link;
    if (keep !== link) link.close();
    const other = this.#links.get(sid);
    if (other && other !== keep) other.close();
    if (this.#links.get(keep.sid) === keep) this.#links.delete(keep.sid);
    keep.sid = sid;
    this.#links.set(sid, keep);
    if (!keep.id) {
      keep.id = id;
      this.#peers.set(id, keep);
      this.#emit("peerjoin", id);
      this.#emit("connectionchange", id);
    }
  }

  #setIce(servers: RTCIceServer[] | undefined): void {
    this.#ice = Array.isArray(servers) ? servers : [];
    for (const link of this.#links.values()) {
      try {
        link.pc.setConfiguration({
          ...link.pc.getConfiguration(),
          iceServers: [...this.#rtc.iceServers ?? [], ...this.#ice],
        });
      } catch {
        // A closed connection takes no configuration.
      }
    }
    clearTimeout(this.#iceTimer);
    // TURN usernames are "<unix expiry seconds>:<peerId>": ask again at
    // 80% of the shortest remaining lifetime.
    const left = Math.min(
      ...this.#ice.map((server) =>
        Number(/^(\d+):/.exec(server.username ?? "")?.[1] ?? Infinity) * 1000
      ),
    ) - Date.now();
    if (left > 0 && left < Infinity) {
      this.#iceTimer = setTimeout(
        () => this.#signaling.send({ type: "ice" }),
        Math.max(1000, left * 0.8),
      );
    }
  }
}

/**
 * Joins a session and resolves once the broker has admitted this peer.
 *
 * @param options Session (default: the URL fragment), signaling URL
 * (default: this page's host's `/signal`), connection settings.
 * @returns The room.
 * @throws {Error} (rejects) When the first join fails: the broker is
 * unreachable, or it refused (e.g. the session is full).
 * @throws {TypeError} (rejects) When `options.session` is not a valid session.
 *
 * @example Greet every peer, log what they say
 * ```ts ignore
 * import { joinRoom } from "pod-broker/client";
 *
 * const room = await joinRoom();
 * room.addEventListener("peerjoin", (event) => {
 *   room.send(`hello, ${event.peerId}`, { to: event.peerId });
 * });
 * room.addEventListener("message", (event) => {
 *   console.log(event.peerId, event.data); // a string or an ArrayBuffer
 * });
 * ```
 */
export function joinRoom(options?: JoinOptions): Promise<Room> {
  return new Promise((resolve, reject) => {
    const room: Room = new Room(
      options,
      (error) => error ? reject(error) : resolve(room),
    );
  });
}
