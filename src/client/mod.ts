/**
 * `pod-broker/client`: peer-to-peer rooms for pods, in the browser, with no
 * dependencies. {@linkcode joinRoom} joins a session through the broker's
 * signaling WebSocket and meshes every peer of it over WebRTC data
 * channels; the broker relays only descriptions and candidates.
 *
 * ```js ignore
 * import { joinRoom } from "pod-broker/client";
 *
 * const room = await joinRoom(); // the session is the URL fragment
 * room.addEventListener("peerjoin", (event) => room.send("hi", { to: event.peerId }));
 * room.addEventListener("message", (event) => console.log(event.peerId, event.data));
 * room.send(new Uint8Array([1, 2, 3])); // to every peer
 * ```
 *
 * Inside:
 * - Negotiation: each link has one data channel negotiated out of band
 *   (id 0), so it exists at both ends whoever offers. On learning of a peer
 *   (`joined` lists the members, `peer-joined` announces a newcomer), the
 *   end with the higher signaling id makes the link and offers; the other
 *   makes its link when the offer comes. Offers can still cross (both ends
 *   restart ICE at once, or a link is made again across a broker restart):
 *   the W3C "perfect negotiation" pattern settles it, the lower id being
 *   polite (it rolls its offer back and answers). Offers are made in the
 *   same queue in which remote descriptions are applied. Candidates are
 *   trickled, and queued until the remote description is set. A
 *   connection that fails is restarted (`restartIce`, then a new offer),
 *   and closed if it is not connected again within 30 s.
 * - ICE servers come from `joined.iceServers` (missing means none) and are
 *   applied to every connection; TURN usernames are
 *   `"<unix expiry seconds>:<peerId>"`, so at 80% of the shortest lifetime
 *   the client sends `{"type":"ice"}` and applies the answer with
 *   `setConfiguration`.
 * - Messages: text, ArrayBuffer or typed arrays. Each is framed (a header
 *   byte: last chunk, text, control), split into chunks no larger than the
 *   channel's maximum message size (at most 64 KiB) and joined on arrival;
 *   writing pauses while the channel buffers 1 MiB and resumes on
 *   `bufferedamountlow`.
 * - The broker going away: the socket reconnects with jittered exponential
 *   backoff (250 ms doubling to 10 s) and joins again, and open data
 *   channels do not need it meanwhile. A rejoin gives a new peer id, so a
 *   peer has two ids: its stable id (`room.peerId`, the id of its first
 *   join: the one the application sees, in events and `peers`) and its
 *   current signaling id. The first message on every channel is a hello
 *   `{id, sid}` (stable and signaling id), and after each rejoin a peer
 *   sends a new hello over every open channel, so the others learn its new
 *   signaling id while their link stays keyed by its stable id. A peer who
 *   joins after the restart is listed in `joined`/`peer-joined` and
 *   connects as usual. A peer listed under a new id before its hello came
 *   gets a second link for a moment; when the hello arrives, both ends keep
 *   the link they had first and close the new one, and a description from
 *   the other connection (its DTLS fingerprint differs) is ignored, so the
 *   open channel is never renegotiated. Links still negotiating with an old
 *   id are dropped on rejoin. The broker's `peer-left` closes only links
 *   whose channel is not open: an open channel ends with its own close.
 * - Trust: peer ids, like everything a peer says, are claims; a peer that
 *   repeats another's stable id only gets its own link closed.
 *
 * @module
 */

export {
  type ConnectionInfo,
  type JoinOptions,
  joinRoom,
  Room,
  RoomEvent,
  type RoomEventType,
  type SendOptions,
} from "./room.ts";
export type { Route } from "./negotiation.ts";
