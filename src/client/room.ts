/**
 * The room: every peer of one session, meshed over WebRTC data channels,
 * with the broker used for signaling only. See `mod.ts` for the design.
 *
 * @module
 */

import { CONTROL, idOf, LAST, Link, signature, TEXT } from "./negotiation.ts";
import { type BrokerFrame, type SignalData, Signaling } from "./socket.ts";
import { decoder, encoder, type RoomKeys, roomKeys } from "./private.ts";
import { Media } from "./media.ts";
import { spend } from "./budget.ts";
import { defaultSession, defaultUrl, privateSecret } from "./session.ts";
import { SESSION } from "./session.ts";
import {
  type ConnectionInfo,
  RoomEvent,
  type RoomEventType,
} from "./events.ts";
import type { JoinOptions, SendOptions } from "./room_options.ts";

export type { JoinOptions, SendOptions };

/** How many times a link that never opened is made again, for one peer. */
const MAX_RETRIES = 5;

/**
 * A session's peers, meshed over data channels. Made by
 * `joinRoom`; an `EventTarget` dispatching {@linkcode RoomEvent}s:
 * `peerjoin` and `peerleave` (a data channel to `peerId` opened or closed),
 * `message` (`data` from `peerId`), `track` and `trackend` (a `track` of
 * `peerId`, in `streams`, arrived or ended), `connectionchange` (see
 * {@linkcode Room.connection}) and `onlinechange` (see {@linkcode Room.online}).
 */
export class Room extends EventTarget {
  #id = "";
  #sid = "";
  #session: string;
  #rtc: RTCConfiguration;
  #max: number;
  #budget: number;
  #cert?: RTCCertificate;
  #signaling?: Signaling;
  #ice: RTCIceServer[] = [];
  #online = false;
  #left = false;
  #done: ((error?: Error) => void) | null;
  #keys?: RoomKeys;
  // A private room's signals are sealed and opened in order.
  #sent = Promise.resolve();
  #got = Promise.resolve();
  // Every link; links by the remote's signaling id (where its signals go);
  // open links by the remote's id, one per peer (the room's peers).
  #all = new Set<Link>();
  #links = new Map<string, Link>();
  #peers = new Map<string, Link>();
  // Other members by signaling id: links made again after giving up.
  #members = new Map<string, number>();
  #media = new Media((type, link, track, streams) =>
    this.dispatchEvent(new RoomEvent(type, link.id, undefined, track, streams))
  );

  /**
   * Starts joining; prefer `joinRoom`, which waits for it.
   *
   * @param options Session, signaling URL, connection settings.
   * @param done Called once: on the first join, or with the reason it failed.
   * @throws {TypeError} When `options.session` is not a valid session, or `options.maxMessageBytes` or
   * `options.maxReceiveBytes` not a positive number.
   * @throws {Error} Without `options.url` in a page opened from a file
   * (`file:`), which has no broker; the message, also shown at the top of
   * the page, says to run `pod-broker dev`.
   */
  constructor(
    options: JoinOptions = {},
    done: (error?: Error) => void = () => {},
  ) {
    super();
    // A private link (or option) first: its fragment is a secret, which
    // must never become a session name.
    const secret = options.session === undefined
      ? privateSecret(options.private)
      : undefined;
    let session = secret ? "k_" : options.session ?? defaultSession();
    if (!SESSION.test(session)) {
      throw new TypeError(`Cannot join: invalid session "${session}"`);
    }
    const max = this.#max = options.maxMessageBytes ?? 1 << 24;
    if (!(max > 0)) {
      throw new TypeError(`Cannot join: invalid maxMessageBytes ${max}`);
    }
    const budget = this.#budget = options.maxReceiveBytes ?? 4 * max;
    if (!(budget > 0)) {
      throw new TypeError(`Cannot join: invalid maxReceiveBytes ${budget}`);
    }
    const url = options.url ?? defaultUrl();
    this.#session = session;
    this.#rtc = options.rtc ?? {};
    this.#done = done;
    // One certificate for the room's life: the peer's id is its fingerprint,
    // which DTLS proves on every link and which survives rejoins.
    Promise.all([
      RTCPeerConnection.generateCertificate(
        { name: "ECDSA", namedCurve: "P-256" } as EcKeyGenParams,
      ),
      secret ? roomKeys(secret) : undefined,
    ]).then(([cert, keys]) => {
      this.#cert = cert;
      if (keys) this.#session = session = (this.#keys = keys).session;
      this.#id = idOf(
        cert.getFingerprints().find((f) => f.algorithm === "sha-256")!.value!,
      );
      if (this.#left) return;
      this.#signaling = new Signaling(
        url,
        session,
        (frame) =>
          keys
            ? this.#got = this.#got.then(() => this.#open(keys, frame))
            : this.#frame(frame),
        (code) => {
          this.#setOnline(false);
          // Before the first join a closed socket is an answer, not a blip.
          this.#fail(`the signaling socket closed (${code})`);
        },
        keys?.proof,
      );
    }, (error) => this.#fail(`no certificate (${error})`));
    globalThis.addEventListener?.("pagehide", () => this.leave());
  }

  /**
   * This peer's id, taken from the room's certificate: every peer checks it
   * (DTLS), and it stays the same across rejoins, although the broker's id
   * for this peer changes.
   */
  get peerId(): string {
    return this.#id;
  }

  /**
   * The session; in a private room, `k_` and its public key (never the
   * secret), known once joined.
   */
  get session(): string {
    return this.#session;
  }

  /**
   * Whether the room is private (its secret is the URL fragment), known
   * once joined.
   */
  get private(): boolean {
    return !!this.#keys;
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
   * @throws {RangeError} When `data` is larger than `maxMessageBytes`.
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
    if (bytes.length > this.#max) {
      throw new RangeError(
        `Cannot send: ${bytes.length} bytes is more than maxMessageBytes`,
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

  /**
   * Sends a camera, microphone or screen `track` (in `stream`, which peers
   * get as `streams`) to every peer, those who join later too, or to peer
   * `options.to`; each gets a `track` event.
   *
   * @throws {Error} When the room was left.
   */
  addTrack(
    track: MediaStreamTrack,
    stream?: MediaStream,
    options: SendOptions = {},
  ): void {
    if (this.#left) throw new Error("Cannot add a track: the room was left");
    this.#media.add(this.#peers.values(), track, stream, options.to);
  }

  /** Stops sending `track` to every peer, or to `options.to` (`trackend`). */
  removeTrack(track: MediaStreamTrack, options: SendOptions = {}): void {
    this.#media.remove(this.#peers.values(), track, options.to);
  }

  /** Closes the link to peer `peerId` (both ends get `peerleave`); it may connect again. */
  disconnect(peerId: string): void {
    this.#peers.get(peerId)?.close();
  }

  /** Leaves the session: closes the signaling socket and every connection. */
  leave(): void {
    if (this.#left) return;
    this.#left = true;
    this.#signaling?.close();
    for (const link of this.#all) link.close();
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
        // A resume (the same id) keeps every link, each negotiating again (so
        // `restart-ice` needs nothing more); a rejoin drops links still
        // negotiating (with old ids), and open ones resume (restart ICE).
        const resumed = frame.peerId === this.#sid;
        this.#sid = frame.peerId!;
        this.#setIce(frame.iceServers);
        if (!resumed) this.#members.clear();
        for (const l of this.#all) resumed || l.open ? l.resume() : l.close();
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
        this.#members.delete(frame.peerId!);
        const link = this.#links.get(frame.peerId!);
        if (link && !link.open) link.close();
        break;
      }
      case "signal": {
        const { from, data } = frame;
        let link = this.#links.get(from!);
        // A description of a link's own connection from a new signaling id:
        // the peer rejoined, and only it (or the broker) knows that
        // connection's session id. Its signals go there from now on.
        const signed = signature(data?.sdp?.sdp);
        const owner = [...this.#all].find((l) => signed && l.remote === signed);
        if (owner && owner !== link) {
          this.#key(owner, from!);
          owner.resume();
          link = owner;
        }
        // Only an offer starts a link: anything else from an unknown id is
        // left over from a link that is gone.
        link ??= data?.sdp?.type === "offer" ? this.#link(from!) : undefined;
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
    this.#members.set(sid, this.#members.get(sid) ?? 0);
    if (sid < this.#sid) this.#link(sid);
  }

  #link(sid: string): Link {
    let link = this.#links.get(sid);
    if (!link) {
      link = new Link(
        {
          signal: (link, data) => this.#signal(link.sid, data),
          config: () => ({
            ...this.#rtc,
            certificates: [this.#cert!],
            iceServers: [...this.#rtc.iceServers ?? [], ...this.#ice],
          }),
          max: this.#max,
          grew: () => spend(this.#all, this.#budget),
          opened: (link) => {
            link.send(
              CONTROL | LAST,
              encoder.encode(JSON.stringify({ id: this.#id, sid: this.#sid })),
            );
            this.#admit(link);
          },
          received: (link, flags, bytes) => this.#received(link, flags, bytes),
          changed: (link) =>
            this.#peers.get(link.id) === link &&
            this.#emit("connectionchange", link.id),
          closed: (link) => {
            this.#all.delete(link);
            if (this.#links.get(link.sid) === link) {
              this.#links.delete(link.sid);
            }
            if (this.#peers.get(link.id) === link) {
              this.#media.update(link, false);
              this.#peers.delete(link.id);
              this.#emit("peerleave", link.id);
            } else this.#retry(link.sid);
          },
        },
        sid,
        this.#sid < sid,
      );
      this.#all.add(link);
      this.#links.set(sid, link);
      this.#media.watch(link, (l) => this.#peers.get(l.id) === l);
    }
    return link;
  }

  // A link to a member that gave up before it opened (a slow machine) is
  // made again, a few times: nothing else would connect the two.
  #retry(sid: string): void {
    const tries = this.#members.get(sid);
    if (this.#left || tries === undefined || tries >= MAX_RETRIES) return;
    this.#members.set(sid, tries + 1);
    if (sid < this.#sid) this.#link(sid);
  }

  // In a private room every signal is sealed for its recipient, in order.
  #signal(to: string, data: SignalData): void {
    const keys = this.#keys;
    const from = this.#sid;
    const send = (data: SignalData) =>
      this.#signaling?.send({ type: "signal", to, data });
    if (!keys) return send(data);
    this.#sent = this.#sent.then(async () =>
      send({ sealed: await keys.seal(JSON.stringify(data), from, to) })
    );
  }

  // A private room takes every frame in order, and a signal only if it
  // opens: one the broker altered, made or redirected is dropped.
  async #open(keys: RoomKeys, frame: BrokerFrame): Promise<void> {
    if (frame.type === "signal") {
      try {
        frame.data = JSON.parse(
          await keys.open(frame.data!.sealed!, frame.from!, this.#sid),
        );
      } catch {
        return;
      }
    }
    this.#frame(frame);
  }

  // Signals from `sid` go to `link` from now on.
  #key(link: Link, sid: string): void {
    if (this.#links.get(link.sid) === link) this.#links.delete(link.sid);
    link.sid = sid;
    this.#links.set(sid, link);
  }

  // The first open link to a peer is the peer's; a second one (made across
  // a broker restart, before either end knew the other's new id) waits for
  // the hello.
  #admit(link: Link): void {
    if (this.#peers.has(link.id)) return;
    this.#peers.set(link.id, link);
    this.#emit("peerjoin", link.id);
    this.#emit("connectionchange", link.id);
    this.#media.admit(link);
  }

  // The hello repeats the id DTLS proved and gives the sender's signaling
  // id. A link whose hello lies is closed; a hello acts on no other link but
  // the first one of the same peer (the same certificate): a second link
  // whose hello confirms the id its signals came from tells where that peer
  // is now, and is closed, both ends keeping their first.
  #received(link: Link, flags: number, bytes: Uint8Array<ArrayBuffer>): void {
    const first = this.#peers.get(link.id);
    if (flags & CONTROL) {
      let hello;
      try {
        hello = JSON.parse(decoder.decode(bytes));
      } catch { /* a lie like any other */ }
      if (hello?.id !== link.id) link.close();
      else if (!first) this.#admit(link);
      else if (first !== link) {
        if (hello.sid === link.sid) {
          this.#key(first, link.sid);
          first.resume();
        }
        link.close();
      }
    } else if (first === link) {
      this.#emit(
        "message",
        link.id,
        flags & TEXT ? decoder.decode(bytes) : bytes.buffer,
      );
    }
  }

  #setIce(servers: RTCIceServer[] | undefined): void {
    this.#ice = Array.isArray(servers) ? servers : [];
    for (const link of this.#all) {
      try {
        link.pc.setConfiguration({
          ...link.pc.getConfiguration(),
          iceServers: [...this.#rtc.iceServers ?? [], ...this.#ice],
        });
      } catch {
        // A closed connection takes no configuration.
      }
    }
  }
}
