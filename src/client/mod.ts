/**
 * `pod-broker/client`: peer-to-peer rooms for pods, in the browser, with no
 * dependencies. {@linkcode joinRoom} joins a session through the broker's
 * signaling WebSocket and meshes every peer of it over WebRTC data
 * channels, with camera, microphone and screen tracks on the same
 * connections; the broker relays only descriptions and candidates.
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
 *   `bufferedamountlow`. A peer whose message grows past `maxMessageBytes`
 *   (16 MiB by default; 1 KiB for the client's own control messages) has
 *   its link closed, so what a peer can make the room hold is bounded; and
 *   when the room's links together hold more than `maxReceiveBytes` of
 *   messages still arriving (4 × `maxMessageBytes` by default), the link
 *   holding the most is closed, so what all peers together can make the
 *   tab hold is bounded too, whatever their number (`budget.ts`).
 * - Ids: each room makes one certificate (`generateCertificate`) and uses
 *   it on every link for the room's life. A peer's id (`room.peerId`, the
 *   one the application sees, in events and `peers`) is 16 letters and
 *   digits taken from its certificate's SHA-256 fingerprint, and a link's
 *   remote id is taken from the fingerprint in the remote description,
 *   which DTLS checks: a peer cannot take an id without its certificate's
 *   key. The broker's signaling id (`sid`) changes on every join.
 * - The broker going away: the socket reconnects with jittered exponential
 *   backoff (250 ms doubling to 10 s) and joins again, and open data
 *   channels do not need it meanwhile. After a rejoin, links still
 *   negotiating are dropped (they were addressed to old ids), and an open
 *   link that is not connected restarts ICE with a fresh offer (one made
 *   while the broker was unreachable never arrived; a connected link makes
 *   that offer again). Peers listed under new
 *   ids get a second link; when it opens and its remote id is that of an
 *   open link, its hello (`{id, sid}`, the first message on every channel)
 *   confirms the signaling id its signals came from: that id becomes the
 *   first link's, whose restart (if any) is made again there, and both ends
 *   close the second link. A description whose connection (DTLS
 *   fingerprint and SDP session id) is a link's own also moves that link
 *   to the sender's id; a description of another connection is ignored,
 *   so an open channel is never renegotiated. The broker's `peer-left`
 *   closes only links whose channel is not open: an open channel ends with
 *   its own close.
 * - Media: `room.addTrack(track, stream?, { to? })` sends a camera,
 *   microphone or screen track to every peer (or one), and
 *   `room.removeTrack(track, { to? })` stops it. What was added, and for
 *   whom, is kept: a link is made to match it when it is made (the tracks
 *   for every peer go in its first offer or answer), when it becomes a
 *   peer's (so a peer who joins later gets every track) and after each
 *   change, by
 *   `addTrack`/`removeTrack` on its connection, and the same perfect
 *   negotiation sends the offer (both ends adding tracks at once is glare,
 *   settled as above; a change made while an offer awaits its answer is
 *   offered once the answer is in, since the browser does not ask twice). A peer's tracks arrive as `track` events (with
 *   `track` and `streams`) once its connection is negotiated to receive
 *   them, and end (`trackend`) when it stops sending them or its link
 *   closes; like messages, only from the link DTLS proved to be the
 *   peer's. The connection is the data channel's, so ICE restarts and a
 *   broker restart keep media flowing.
 * - Trust: a link whose hello names another id than its certificate's is
 *   closed, and a hello acts on no link but its own and the first link of
 *   the same certificate. So no session member can take another's id
 *   (present or gone), close another's link or read another's messages; a
 *   member (or the broker) can at most withhold signaling, which delays
 *   new links and ICE restarts.
 *
 * @module
 */

export { type JoinOptions, Room, type SendOptions } from "./room.ts";
export { joinRoom } from "./join.ts";
export {
  type ConnectionInfo,
  RoomEvent,
  type RoomEventType,
} from "./events.ts";
export type { Route } from "./negotiation.ts";
export { checkForUpdate, type PodVersion, servedVersion } from "./version.ts";
