/**
 * The options of `joinRoom` and of a room's sends.
 *
 * @module
 */

/** Options of `joinRoom`. */
export interface JoinOptions {
  /**
   * The session: 1 to 128 characters of `[A-Za-z0-9_-]`.
   * @default {the URL fragment; a fresh one, written to `location.hash`, when it has none}
   */
  session?: string;
  /**
   * A private room: only those holding its link can join, and the broker
   * relays signaling it cannot read. Its secret is the URL fragment
   * (`#k_...`, made and written there when the fragment has none); opening
   * such a link makes a private room without this option, unless `session`
   * is given (then the room is open).
   * @default {false}
   */
  private?: boolean;
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
  /**
   * The largest message accepted from a peer, in bytes: a peer whose
   * message grows past it has its link closed (`peerleave`). Sending more
   * than it throws, as other peers would close the link.
   * @default {16 MiB}
   */
  maxMessageBytes?: number;
  /**
   * The room's receive budget: the most its links may hold together of
   * messages still arriving, in bytes. Past it, the peer holding the most
   * has its link closed (`peerleave`), so what peers can make the tab hold
   * does not grow with their number.
   * @default {4 × maxMessageBytes: 64 MiB}
   */
  maxReceiveBytes?: number;
}

/** Options of `Room.send`, `addTrack` and `removeTrack`. */
export interface SendOptions {
  /** One peer's id; every peer when absent or undefined. */
  to?: string | undefined;
}
