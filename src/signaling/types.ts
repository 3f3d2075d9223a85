/**
 * What the signaling hub needs from a WebSocket.
 *
 * @module
 */

/** A WebSocket as the signaling hub sees it: the two things it ever does. */
export interface PeerSocket {
  /** Sends one text frame. */
  send(text: string): void;
  /** Closes the socket with a WebSocket close code and reason. */
  close(code: number, reason: string): void;
  /** Optional: bytes sent but not yet written to the network. */
  bufferedAmount?(): number;
  /**
   * Optional: drops the connection at once, for a peer that does not finish
   * the closing handshake in time.
   */
  terminate?(): void;
}
