/**
 * A room's media: the tracks this peer sends (each to every peer, or to
 * some), and the tracks each peer sends it.
 *
 * Sending: the room keeps what was added and for whom; {@linkcode
 * Media.sync} makes one link's senders match it (`addTrack` and
 * `removeTrack` on its connection), and the link's perfect negotiation
 * sends the offer. A link is synced when it is made (before its peer is
 * known, only the tracks for every peer: they go in the first offer or
 * answer), when it becomes a peer's (so a peer who joins later gets every
 * track already added) and after each change.
 *
 * Receiving: a link's remote tracks are those its connection receives once
 * negotiated (a transceiver whose current direction receives). They are
 * told (`track`, `trackend`) only for the link that is the peer's, under
 * the peer's DTLS-checked id, like its messages; when the link closes, its
 * tracks end.
 *
 * @module
 */

import type { Link } from "./negotiation.ts";

/** What a room tells about a remote track. */
export type TrackEmit = (
  type: "track" | "trackend",
  link: Link,
  track: MediaStreamTrack,
  streams: readonly MediaStream[],
) => void;

/** A track this peer sends: its streams, and to whom. */
interface Local {
  streams: MediaStream[];
  /** The peers it goes to; null: every peer but those in `not`. */
  to: Set<string> | null;
  not: Set<string>;
}

/** The tracks a room sends and receives. */
export class Media {
  #local = new Map<MediaStreamTrack, Local>();
  #streams = new WeakMap<MediaStreamTrack, readonly MediaStream[]>();
  #told = new WeakMap<Link, Set<MediaStreamTrack>>();
  #emit: TrackEmit;

  /** @param emit Tells the room's listeners of a remote track. */
  constructor(emit: TrackEmit) {
    this.#emit = emit;
  }

  /**
   * Sends `track` (in `stream`, if any) to peer `to`, or to every peer, and
   * syncs `links` (the peers').
   */
  add(
    links: Iterable<Link>,
    track: MediaStreamTrack,
    stream?: MediaStream,
    to?: string,
  ): void {
    const local = this.#local.get(track) ??
      { streams: [], to: new Set(), not: new Set() };
    if (stream) local.streams = [stream];
    if (to === undefined) {
      local.to = null;
      local.not.clear();
    } else {
      local.to?.add(to);
      local.not.delete(to);
    }
    this.#local.set(track, local);
    for (const link of links) this.sync(link);
  }

  /** Stops sending `track` to peer `to`, or to every peer; syncs `links`. */
  remove(links: Iterable<Link>, track: MediaStreamTrack, to?: string): void {
    const local = this.#local.get(track);
    if (to === undefined || !local) this.#local.delete(track);
    else if (local.to) local.to.delete(to);
    else local.not.add(to);
    for (const link of links) this.sync(link);
  }

  /**
   * Watches a new link's connection (the streams of its remote tracks, and
   * each negotiation's end, after which its tracks are updated) and syncs
   * it: the tracks for every peer go in its first offer or answer.
   *
   * @param link The link.
   * @param isPeers Whether the link is now its peer's.
   */
  watch(link: Link, isPeers: (link: Link) => boolean): void {
    const pc = link.pc;
    pc.ontrack = ({ track, streams }) => this.#streams.set(track, streams);
    pc.onsignalingstatechange = () =>
      // Track events follow this one: their streams are known after them.
      pc.signalingState === "stable" &&
      setTimeout(() => this.update(link, isPeers(link)));
    this.sync(link);
  }

  /** A link became its peer's: it sends and tells that peer's tracks. */
  admit(link: Link): void {
    this.sync(link);
    this.update(link, true);
  }

  /** Makes the senders of `link` (a peer's) match what goes to that peer. */
  sync(link: Link): void {
    const pc = link.pc;
    const senders = pc.getSenders();
    try {
      for (const [track, local] of this.#local) {
        if (
          !local.not.has(link.id) && (local.to?.has(link.id) ?? true) &&
          !senders.some((sender) => sender.track === track)
        ) pc.addTrack(track, ...local.streams);
      }
      for (const sender of senders) {
        const local = sender.track && this.#local.get(sender.track);
        if (
          sender.track &&
          (!local || local.not.has(link.id) || local.to?.has(link.id) === false)
        ) pc.removeTrack(sender);
      }
    } catch {
      // A closed connection takes no track.
    }
  }

  /**
   * Tells the tracks `link` receives now that it did not, and ends those it
   * no longer receives; `open`: whether the link is the peer's (else every
   * track it told ends).
   */
  update(link: Link, open: boolean): void {
    const told = this.#told.get(link) ?? new Set();
    this.#told.set(link, told);
    const live = open
      ? link.pc.getTransceivers().filter((t) =>
        /recv/.test(t.currentDirection ?? "") &&
        t.receiver.track.readyState === "live"
      ).map((t) => t.receiver.track)
      : [];
    for (const track of told) {
      if (!live.includes(track)) {
        told.delete(track);
        this.#emit("trackend", link, track, this.#streams.get(track) ?? []);
      }
    }
    for (const track of live) {
      if (!told.has(track)) {
        told.add(track);
        this.#emit("track", link, track, this.#streams.get(track) ?? []);
      }
    }
  }
}
