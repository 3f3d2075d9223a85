/**
 * The part of the signaling bus that the y-webrtc and PeerJS dialects use
 * (`/y-webrtc` topics and PeerJS ids shared by several brokers): a
 * {@linkcode CompatBus}. A bus offers one as its `compat` member; `RedisBus`
 * does. The contract an engine keeps:
 * - a topic counts its subscribers per node, and `subscribe` refuses one
 *   past `max` across nodes, atomically;
 * - a `from` of a topic, and a PeerJS id, is claimed by one node at a time,
 *   atomically;
 * - `publish` reaches every other node with a subscriber of the topic, and
 *   `send` the node that holds the id, nothing else;
 * - when a node goes silent (its process died), its subscriptions, `from`s
 *   and ids are removed within a bounded time.
 *
 * Keys are the dialects' own (a namespace and a name); messages are text
 * the receiving hub checks as it checks a client's.
 *
 * @module
 */

/** What a compat bus reports to the hubs attached to it. */
export interface CompatBusListener {
  /** A publish to topic `key`, which this node subscribes to (unchecked). */
  topic(key: string, message: string): void;
  /** A message for claim `key` (a PeerJS id), which this node holds (unchecked). */
  direct(key: string, message: string): void;
}

/** One node's handle on the dialects' shared state. */
export interface CompatBus {
  /** Attaches the listener (one per bus). */
  attach(listener: CompatBusListener): void;
  /**
   * Counts one more subscriber of topic `key` on this node, unless the
   * topic has `max` across nodes.
   *
   * @returns Whether it was counted, and the subscribers on other nodes.
   */
  subscribe(
    key: string,
    max: number,
  ): Promise<{ ok: boolean; remote: number }>;
  /** Counts one subscriber of topic `key` on this node less. */
  unsubscribe(key: string): Promise<void>;
  /**
   * Sends `message` to the other nodes with subscribers of topic `key`.
   *
   * @returns The subscribers on other nodes.
   */
  publish(key: string, message: string): Promise<number>;
  /**
   * Claims `key` (a topic's `from`, or a PeerJS id) for this node.
   *
   * @returns True when it is this node's (newly or already).
   */
  claim(key: string): Promise<boolean>;
  /** Lets this node's claim of `key` go. */
  release(key: string): Promise<void>;
  /**
   * Sends `message` to the node that holds the claim `key` (a PeerJS id).
   *
   * @returns False when no node holds it.
   */
  send(key: string, message: string): Promise<boolean>;
}
