/**
 * What a room tells: its events, and a peer's connection.
 *
 * @module
 */

import type { Route } from "./negotiation.ts";

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
  | "onlinechange"
  | "track"
  | "trackend";

/**
 * What a room dispatches: the peer it is about and, for `message`, the
 * data; for `track` and `trackend`, the track and its streams.
 */
export class RoomEvent extends Event {
  /** The peer (empty for `onlinechange`). */
  readonly peerId: string;
  /** The message: a string, or an ArrayBuffer for binary data. */
  readonly data: string | ArrayBuffer | undefined;
  /** The peer's track, for `track` and `trackend`. */
  readonly track: MediaStreamTrack | undefined;
  /** The streams the peer added the track in (maybe none). */
  readonly streams: readonly MediaStream[];

  /**
   * Makes an event.
   *
   * @param type The event type.
   * @param peerId The peer.
   * @param data The message, for `message`.
   * @param track The track, for `track` and `trackend`.
   * @param streams Its streams.
   */
  constructor(
    type: RoomEventType,
    peerId = "",
    data?: string | ArrayBuffer,
    track?: MediaStreamTrack,
    streams: readonly MediaStream[] = [],
  ) {
    super(type);
    this.peerId = peerId;
    this.data = data;
    this.track = track;
    this.streams = streams;
  }
}
