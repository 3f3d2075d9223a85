/**
 * One link to one remote peer: an `RTCPeerConnection` with one negotiated
 * data channel (id 0, so both ends may offer and there is still only one
 * channel), negotiated with the W3C "perfect negotiation" pattern, trickle
 * ICE with candidates queued until the remote description is set, an ICE
 * restart when the connection fails, and framed messages: split into
 * chunks no larger than the channel allows (at most 64 KiB), paced by the
 * channel's `bufferedAmount`, and joined again on arrival.
 *
 * Frame: one header byte (bit 0: last chunk of the message; bit 1: the
 * message is UTF-8 text; bit 2: a control message of the client), then the
 * chunk. The channel is reliable and ordered, so chunks need no numbers.
 * A message that grows past the room's cap (a control message past 1 KiB)
 * closes the link; so does holding the most when the room's links together
 * hold more than its receive budget (`budget.ts`).
 *
 * @module
 */

import type { SignalData } from "./socket.ts";

/** How a peer is reached: `relayed` when either end is a TURN relay. */
export type Route = "direct" | "relayed" | null;

/** Header bit: the last chunk of a message. */
export const LAST = 1;
/** Header bit: the message is text. */
export const TEXT = 2;
/** Header bit: a control message (the hello). */
export const CONTROL = 4;

/** Largest chunk, header included. */
const CHUNK = 65_536;
/** Stop writing while this much is buffered in the channel. */
const HIGH_WATER = 1 << 20;
/** How long a link may stay unconnected (new, or failed and restarting). */
const GIVE_UP_MS = 30_000;
/** How often the route is read where the browser does not say it changed. */
const ROUTE_POLL_MS = 3_000;
/** The largest control message (the hello). */
const CONTROL_MAX = 1024;

/** What a link needs from its room. */
export interface LinkHost {
  /** Sends signaling data to the link's remote peer through the broker. */
  signal(link: Link, data: SignalData): void;
  /** The configuration of a new connection (certificate, ICE servers). */
  config(): RTCConfiguration;
  /** The largest message accepted from the remote peer, in bytes. */
  max: number;
  /**
   * The link holds more of a message still arriving: the room checks its
   * receive budget, which may close this link or another.
   */
  grew(): void;
  /** The data channel opened. */
  opened(link: Link): void;
  /** A whole message arrived. */
  received(link: Link, flags: number, bytes: Uint8Array<ArrayBuffer>): void;
  /** The connection state or the route changed. */
  changed(link: Link): void;
  /** The link closed for good. */
  closed(link: Link): void;
}

interface Outgoing {
  flags: number;
  bytes: Uint8Array;
  at: number;
}

/** Letters, digits, `_` and `-`: ids use the first 62. */
export const ALPHABET =
  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";

/**
 * A peer's id: 16 letters and digits from the first 16 bytes of its
 * certificate's SHA-256 fingerprint ("AB:CD:…", or a signature).
 */
export function idOf(fingerprint: string): string {
  return fingerprint.split(":").slice(0, 16).map((hex) =>
    ALPHABET[parseInt(hex, 16) % 62]
  ).join("");
}

/**
 * Which connection a description belongs to: its DTLS fingerprint (the
 * remote peer's certificate, one per room) and its SDP session id (one per
 * connection, known only to its two ends and the broker), as
 * `"AB:CD:… 123"`. Undefined unless it has one SHA-256 fingerprint (each
 * media section of a bundle repeats it: every line must be the same), so
 * that the one DTLS checks is the one a peer's id is taken from.
 */
export function signature(sdp = ""): string | undefined {
  const lines = sdp.match(/^a=fingerprint:[^\r\n]*/gm) ?? [];
  const fingerprint = /^a=fingerprint:sha-256 ([\dA-F:]{95})$/i.exec(
    lines[0] ?? "",
  );
  const session = /^o=\S+ (\d+) /m.exec(sdp);
  return sdp.split("a=fingerprint:").length === lines.length + 1 &&
      new Set(lines.map((line) => line.toUpperCase())).size === 1 &&
      fingerprint && session
    ? `${fingerprint[1]!.toUpperCase()} ${session[1]}`
    : undefined;
}

/** One remote peer's connection and data channel. */
export class Link {
  /** The remote peer's current signaling id. */
  sid: string;
  /** The route of the selected candidate pair, once connected. */
  route: Route = null;
  /** The connection. */
  readonly pc: RTCPeerConnection;
  /** The data channel. */
  readonly dc: RTCDataChannel;
  #host: LinkHost;
  #polite: boolean;
  #queued: RTCIceCandidateInit[] = [];
  #chain: Promise<void> = Promise.resolve();
  #out: Outgoing[] = [];
  #parts: Uint8Array[] = [];
  #size = 0;
  #timer?: ReturnType<typeof setTimeout>;
  #routeTimer?: ReturnType<typeof setInterval>;
  /** The remote signature once closed. */
  #remote: string | undefined;
  #closed = false;
  #again = false;
  #id = "";
  #ready = false;
  #early: ArrayBuffer[] = [];
  #earlySize = 0;

  /**
   * Opens a connection and starts negotiating it.
   *
   * @param host The room.
   * @param sid The remote peer's signaling id.
   * @param polite Whether this end yields when both offer at once.
   */
  constructor(host: LinkHost, sid: string, polite: boolean) {
    this.#host = host;
    this.sid = sid;
    this.#polite = polite;
    const pc = new RTCPeerConnection(host.config());
    const dc = pc.createDataChannel("pod", { negotiated: true, id: 0 });
    this.pc = pc;
    this.dc = dc;
    dc.binaryType = "arraybuffer";
    dc.bufferedAmountLowThreshold = HIGH_WATER / 4;
    dc.onopen = () => this.#opened();
    dc.onclose = () => this.close();
    dc.onbufferedamountlow = () => this.#pump();
    dc.onmessage = (event) => this.#receive(event.data);
    pc.onnegotiationneeded = () => this.#offer();
    pc.onicecandidate = ({ candidate: c }) => {
      // Only the members the broker accepts (toJSON may add others).
      if (c) {
        host.signal(this, {
          candidate: {
            candidate: c.candidate,
            sdpMid: c.sdpMid,
            sdpMLineIndex: c.sdpMLineIndex,
            usernameFragment: c.usernameFragment,
          },
        });
      }
    };
    pc.onconnectionstatechange = () => {
      const state = pc.connectionState;
      if (state === "connected") {
        clearTimeout(this.#timer);
        this.#route();
        const ice = pc.sctp?.transport.iceTransport;
        if (ice && "onselectedcandidatepairchange" in ice) {
          ice.onselectedcandidatepairchange = () => this.#route();
        } else {
          // Firefox has no such event: read the route again now and then.
          clearInterval(this.#routeTimer);
          this.#routeTimer = setInterval(() => this.#route(), ROUTE_POLL_MS);
        }
      } else if (state === "failed") {
        // Both ends may restart at once: perfect negotiation sorts it out.
        pc.restartIce();
        this.#giveUpLater();
      } else if (state === "closed") this.close();
      host.changed(this);
    };
    this.#giveUpLater();
  }

  /**
   * The {@linkcode signature} of the remote description: every one applied
   * has the first one's.
   */
  get remote(): string | undefined {
    // Firefox throws on a closed connection's descriptions.
    return this.#closed
      ? this.#remote
      : signature(this.pc.remoteDescription?.sdp);
  }

  /**
   * The remote peer's id, from the fingerprint of its description (empty
   * before there is one); DTLS has checked it once the channel carries
   * anything.
   */
  get id(): string {
    const remote = this.remote;
    return this.#id ||= remote ? idOf(remote) : "";
  }

  /** The bytes held of messages still arriving (see `budget.ts`). */
  get held(): number {
    return this.#size + this.#earlySize;
  }

  /** Whether the data channel is open. */
  get open(): boolean {
    return this.dc.readyState === "open";
  }

  /** Applies signaling data from the remote peer, in arrival order. */
  signal(data: SignalData): void {
    this.#chain = this.#chain.then(() =>
      data.sdp ? this.#description(data.sdp) : this.#candidate(data.candidate)
    ).catch(() => {});
  }

  /** Queues one message, already encoded; see the module doc for flags. */
  send(flags: number, bytes: Uint8Array): void {
    this.#out.push({ flags, bytes, at: 0 });
    this.#pump();
  }

  /**
   * Negotiates again after signaling came back or the remote peer moved to
   * another signaling id: an offer still waiting for its answer (made while
   * signaling was down, or sent to the old id) is rolled back, so that it
   * is made again, and ICE restarts unless connected.
   */
  resume(): void {
    const pc = this.pc;
    this.#chain = this.#chain.then(async () => {
      if (pc.signalingState === "have-local-offer") {
        await pc.setLocalDescription({ type: "rollback" });
        // What it offered (tracks added meanwhile) is offered again.
        this.#again = true;
      }
      if (pc.connectionState !== "connected") pc.restartIce();
      else if (this.#again) this.#offer();
    }).catch(() => {});
  }

  /** Closes the connection; the host hears of it once. */
  close(): void {
    if (this.#closed) return;
    this.#remote = this.remote;
    void this.id; // known from here on
    this.#closed = true;
    clearTimeout(this.#timer);
    clearInterval(this.#routeTimer);
    this.#out = [];
    this.#parts = this.#early = [];
    this.dc.close();
    this.pc.close();
    this.#host.closed(this);
  }

  async #description(description: RTCSessionDescriptionInit): Promise<void> {
    const pc = this.pc;
    // A description of another connection (of this peer, made across a
    // broker restart, or a forgery) is not for this one.
    const signed = signature(description.sdp);
    const remote = this.remote;
    if (!signed || (remote && remote !== signed)) return;
    const offer = description.type === "offer";
    const collision = offer && pc.signalingState !== "stable";
    if (collision && !this.#polite) return;
    // A polite end's own offer is rolled back implicitly.
    await pc.setRemoteDescription(description);
    this.#opened();
    for (const candidate of this.#queued.splice(0)) {
      await pc.addIceCandidate(candidate).catch(() => {});
    }
    if (offer) {
      await pc.setLocalDescription();
      this.#sendDescription();
    }
    if (this.#again && pc.signalingState === "stable") this.#offer();
  }

  // Offers are made in the same queue as remote descriptions are applied,
  // so a remote offer never lands while a local one is being set. One that
  // cannot be made yet (an offer of ours awaits its answer) is made once
  // the connection is stable again: the browser does not ask twice.
  #offer(): void {
    const pc = this.pc;
    this.#chain = this.#chain.then(async () => {
      if (pc.signalingState !== "stable") return void (this.#again = true);
      this.#again = false;
      await pc.setLocalDescription();
      this.#sendDescription();
    }).catch(() => {});
  }

  // The channel may open (and carry messages) before the remote
  // description that names the peer is visible: the host hears of it once
  // both are there, then of what came meanwhile.
  #opened(): void {
    if (this.#ready || !this.open || !this.id) return;
    this.#ready = true;
    this.#host.opened(this);
    this.#pump();
    this.#earlySize = 0;
    for (const data of this.#early.splice(0)) this.#receive(data);
  }

  async #candidate(candidate: RTCIceCandidateInit | null | undefined) {
    if (!candidate) return;
    // Candidates may outrun the description they belong to.
    if (this.pc.remoteDescription) {
      await this.pc.addIceCandidate(candidate).catch(() => {});
    } else this.#queued.push(candidate);
  }

  #sendDescription(): void {
    const { type, sdp } = this.pc.localDescription!;
    this.#host.signal(this, { sdp: { type, sdp } });
  }

  #giveUpLater(): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.close(), GIVE_UP_MS);
  }

  async #route(): Promise<void> {
    // Rejects (in Firefox, throws) once the connection is closed: then
    // there is no route.
    const stats = await Promise.resolve().then(() => this.pc.getStats())
      .catch(() => new Map());
    let route: Route = null;
    stats.forEach((report) => {
      const pair = report.type === "transport" &&
        stats.get(report.selectedCandidatePairId);
      if (pair) {
        route = [pair.localCandidateId, pair.remoteCandidateId].some((id) =>
            stats.get(id)?.candidateType === "relay"
          )
          ? "relayed"
          : "direct";
      }
    });
    if (route !== this.route) {
      this.route = route;
      this.#host.changed(this);
    }
  }

  #pump(): void {
    const dc = this.dc;
    const size = Math.min(this.pc.sctp?.maxMessageSize || CHUNK, CHUNK) - 1;
    while (this.#out[0] && this.open && dc.bufferedAmount < HIGH_WATER) {
      const message = this.#out[0];
      const { bytes, at } = message;
      const end = Math.min(at + size, bytes.length);
      const chunk = new Uint8Array(end - at + 1);
      chunk[0] = end < bytes.length ? message.flags & ~LAST : message.flags;
      chunk.set(bytes.subarray(at, end), 1);
      message.at = end;
      if (end === bytes.length) this.#out.shift();
      dc.send(chunk);
    }
  }

  #receive(data: unknown): void {
    if (!(data instanceof ArrayBuffer) || !data.byteLength) return;
    if (!this.#ready) {
      this.#early.push(data);
      if ((this.#earlySize += data.byteLength) > this.#host.max) this.close();
      else this.#host.grew();
      return;
    }
    const chunk = new Uint8Array(data);
    this.#size += chunk.length - 1;
    if (this.#size > (chunk[0]! & CONTROL ? CONTROL_MAX : this.#host.max)) {
      return this.close();
    }
    this.#parts.push(chunk.subarray(1));
    this.#host.grew();
    if (this.#closed || !(chunk[0]! & LAST)) return;
    const whole = new Uint8Array(this.#size);
    let at = 0;
    for (const part of this.#parts) {
      whole.set(part, at);
      at += part.length;
    }
    this.#parts = [];
    this.#size = 0;
    this.#host.received(this, chunk[0]!, whole);
  }
}
