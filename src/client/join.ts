/**
 * `joinRoom`: the client's way into a room.
 *
 * @module
 */

import { Room } from "./room.ts";
import type { JoinOptions } from "./room_options.ts";

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
