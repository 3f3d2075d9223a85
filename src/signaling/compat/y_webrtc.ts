/**
 * `/y-webrtc`: the signaling protocol of y-webrtc (the WebRTC provider of
 * Yjs), with every limit of protocol version 1 and these of its own:
 * - a frame is checked before it is relayed (`y_webrtc_frames.ts`);
 * - in clear mode, a socket's `from` in a topic is fixed by its first
 *   publish there, and no other socket of the topic may use it: `forged_from`;
 * - a signal with a `to` goes to the socket whose `from` that is, not to
 *   the whole topic (y-webrtc's client drops the others' anyway);
 * - at most `maxPeersPerSession` subscribers a topic (`topic_full`) and
 *   {@linkcode MAX_TOPICS_PER_SOCKET} topics a socket (`too_many_topics`);
 * - a publish costs a token for each socket it reaches;
 * - a topic is forgotten with its last subscriber.
 *
 * Topics live in the socket's namespace (see `limits.ts`). With a bus, a
 * {@linkcode TopicRelay} carries publishes to the other brokers.
 *
 * @module
 */

import { CLOSE_CODES } from "../close.ts";
import {
  type CompatClient,
  CompatHub,
  type CompatHubOptions,
  type CompatSocket,
  type CompatSocketInit,
} from "./base.ts";
import {
  type ClearData,
  parseYWebrtcFrame,
  type YWebrtcFrame,
} from "./y_webrtc_frames.ts";
import { MAX_TOPICS_PER_SOCKET, scopedKey } from "./limits.ts";
import type { TopicRelay } from "./relay_types.ts";
import type { PeerSocket } from "../types.ts";
import { exceedsBytes } from "../messages.ts";

/** Frames of one socket that may wait while a `from` is claimed. */
const MAX_WAITING_FRAMES = 64;

interface YSocket extends CompatSocket {
  /** Topic name to the `from` this socket uses there (null: none yet). */
  topics: Map<string, string | null>;
  /** The subscribe deadline, cleared by the first subscription. */
  subscribeTimer: ReturnType<typeof setTimeout> | undefined;
  /** Its frames wait on this while a `from` is claimed across brokers. */
  pending: Promise<unknown> | null;
  /** How many frames wait. */
  waiting: number;
}

/** A topic of this broker: its subscribers, and who uses which `from`. */
export interface Topic {
  /** Its key: namespace and name. */
  readonly key: string;
  /** Its name (what clients call it). */
  readonly name: string;
  /** The subscribed sockets of this broker. */
  readonly subscribers: Set<YSocket>;
  /** Clear-mode `from` to the socket that uses it. */
  readonly byFrom: Map<string, YSocket>;
}

/**
 * The hub of `/y-webrtc` sockets.
 *
 * @example A ping
 * ```ts
 * import assert from "node:assert/strict";
 * import { YWebrtcHub } from "./y_webrtc.ts";
 * import { DEFAULT_SIGNALING } from "../../config/options.ts";
 *
 * const hub = new YWebrtcHub({ limits: { ...DEFAULT_SIGNALING, allowedOrigins: null } });
 * const sent: string[] = [];
 * const client = hub.connect({ send: (t) => sent.push(t), close() {} }, null, "none");
 * client.message('{"type":"ping"}');
 * assert.deepEqual(sent, ['{"type":"pong"}']);
 * client.closed();
 * assert.equal(hub.sockets, 0);
 * ```
 */
export class YWebrtcHub extends CompatHub<YSocket> {
  /** The dialect. */
  readonly dialect = "y-webrtc" as const;
  #topics = new Map<string, Topic>();
  #relay: TopicRelay;

  /**
   * @param options The limits, a logger, an observer and the relays.
   */
  constructor(options: CompatHubOptions) {
    super(options);
    this.#relay = this.relays.topics;
    this.#relay.attach((key, frame) => this.#fromRelay(key, frame));
  }

  /** Open sockets, and topics with a subscriber on this broker. */
  get stats(): { sockets: number; topics: number } {
    return { sockets: this.sockets, topics: this.#topics.size };
  }

  /**
   * Registers an upgraded socket. It must subscribe within
   * `joinTimeoutMs`, or it is closed (1008).
   *
   * @param socket The socket.
   * @param origin Its `Origin`, or null.
   * @param namespace Its namespace (`namespaceOf`).
   * @returns The callbacks of its events.
   */
  connect(
    socket: PeerSocket,
    origin: string | null,
    namespace: string,
  ): CompatClient {
    const init: CompatSocketInit = { socket, origin, namespace };
    const state: YSocket = {
      ...this.initial(init),
      topics: new Map(),
      subscribeTimer: undefined,
      pending: null,
      waiting: 0,
    };
    state.subscribeTimer = setTimeout(() => {
      state.subscribeTimer = undefined;
      this.close(state, CLOSE_CODES.policyViolation, "Subscribe timeout");
    }, this.limits.joinTimeoutMs);
    return this.register(state);
  }

  /** Handles one frame. */
  text(state: YSocket, text: string): void {
    // While a `from` is being claimed across brokers, the socket's next
    // frames wait (a few): every frame is answered in order.
    if (state.pending !== null) {
      if (state.waiting >= MAX_WAITING_FRAMES) {
        this.refuse(state, "rate_limited", "Cannot accept the frame yet");
        return;
      }
      state.waiting++;
      this.#after(state, () => {
        state.waiting--;
        if (!state.closing) this.#onFrame(state, text);
      });
      return;
    }
    this.#onFrame(state, text);
  }

  // Chains `act` after what the socket waits for.
  #after(state: YSocket, act: () => unknown): void {
    const after = (state.pending ?? Promise.resolve()).then(act, () => {});
    state.pending = after;
    void after.then(() => {
      if (state.pending === after) state.pending = null;
    });
  }

  #onFrame(state: YSocket, text: string): void {
    const frame = parseYWebrtcFrame(text);
    if (frame.type === "publish") {
      this.#publish(state, frame);
      return;
    }
    if (!this.takeTokens(state, 1)) return;
    if (frame.type === "error") {
      this.refuse(state, frame.code, frame.message);
      return;
    }
    switch (frame.type) {
      case "subscribe":
        this.#subscribe(state, frame.topics);
        break;
      case "unsubscribe":
        for (const name of frame.topics) this.#unsubscribe(state, name);
        break;
      case "ping":
        this.send(state, '{"type":"pong"}');
        break;
    }
  }

  /** y-webrtc's client ignores frames of types it does not know. */
  errorFrame(code: string, message: string): string {
    return JSON.stringify({ type: "error", code, message });
  }

  /** Leaves every topic. */
  leave(state: YSocket): void {
    clearTimeout(state.subscribeTimer);
    state.subscribeTimer = undefined;
    for (const name of [...state.topics.keys()]) {
      this.#unsubscribe(state, name);
    }
  }

  #subscribe(state: YSocket, names: string[]): void {
    for (const name of names) {
      if (state.topics.has(name)) continue;
      if (state.topics.size >= MAX_TOPICS_PER_SOCKET) {
        this.refuse(
          state,
          "too_many_topics",
          `Cannot subscribe to '${
            name.slice(0, 64)
          }': at most ${MAX_TOPICS_PER_SOCKET} topics a socket`,
        );
        return;
      }
      const key = scopedKey(state.namespace, name);
      const held = this.#topics.get(key)?.subscribers.size ?? 0;
      const max = this.limits.maxPeersPerSession;
      // Only this broker's own count refuses at once. The count on other
      // brokers is what the last subscribe or publish found, and may be
      // stale (a broker that died since); the bus's atomic count decides.
      if (held >= max) {
        this.#full(state, name);
        continue;
      }
      let topic = this.#topics.get(key);
      if (topic === undefined) {
        topic = { key, name, subscribers: new Set(), byFrom: new Map() };
        this.#topics.set(key, topic);
      }
      topic.subscribers.add(state);
      state.topics.set(name, null);
      clearTimeout(state.subscribeTimer);
      state.subscribeTimer = undefined;
      this.#relay.subscribe(key, max).then((ok) => {
        if (ok || !state.topics.has(name)) return;
        this.#unsubscribe(state, name, false);
        this.#full(state, name);
      }, () => {});
    }
  }

  #full(state: YSocket, name: string): void {
    this.refuse(
      state,
      "topic_full",
      `Cannot subscribe to '${
        name.slice(0, 64)
      }': it has ${this.limits.maxPeersPerSession} subscribers`,
    );
  }

  // Leaves one topic; the topic goes with its last subscriber, so nothing
  // is left behind. `counted`: whether the relay counted the subscription.
  #unsubscribe(state: YSocket, name: string, counted = true): void {
    if (!state.topics.has(name)) return;
    const from = state.topics.get(name);
    state.topics.delete(name);
    const key = scopedKey(state.namespace, name);
    const topic = this.#topics.get(key);
    if (topic === undefined) return;
    topic.subscribers.delete(state);
    if (from != null && topic.byFrom.get(from) === state) {
      topic.byFrom.delete(from);
      this.#relay.releaseFrom(key, from);
    }
    if (topic.subscribers.size === 0) this.#topics.delete(key);
    if (counted) this.#relay.unsubscribe(key);
  }

  #publish(
    state: YSocket,
    frame: Extract<YWebrtcFrame, { type: "publish" }>,
  ): void {
    const { topic: name, data } = frame;
    if (!state.topics.has(name)) {
      if (!this.takeTokens(state, 1)) return;
      this.refuse(
        state,
        "not_subscribed",
        `Cannot publish to '${name.slice(0, 64)}': subscribe to it first`,
      );
      return;
    }
    const topic = this.#topics.get(scopedKey(state.namespace, name))!;
    const recipients = this.#recipients(topic, data);
    const remote = this.#relay.remote(topic.key);
    // One token for each socket the publish reaches (at least one).
    if (!this.takeTokens(state, Math.max(1, recipients.length + remote))) {
      return;
    }
    const bound = typeof data === "string"
      ? true
      : this.#bindFrom(state, topic, data.from);
    if (bound === false) return;
    const go = () => {
      if (!state.topics.has(name) || state.closing) return;
      this.#deliver(topic, data, this.#recipients(topic, data));
      this.#relay.publish(
        topic.key,
        JSON.stringify({ type: "publish", topic: name, data }),
      );
    };
    // The publish waits for its `from` being claimed across brokers.
    if (bound instanceof Promise) {
      this.#after(state, () => bound.then((ok) => ok && go()));
      return;
    }
    go();
  }

  // Clear mode: the first `from` a socket uses in a topic is its own there
  // once the relay's claim says no other broker's socket has it.
  #bindFrom(
    state: YSocket,
    topic: Topic,
    from: string,
  ): boolean | Promise<boolean> {
    const mine = state.topics.get(topic.name);
    const holder = topic.byFrom.get(from);
    if (mine === from) return true;
    if (mine === null && holder === undefined) {
      state.topics.set(topic.name, from);
      topic.byFrom.set(from, state);
      return this.#relay.claimFrom(topic.key, from).then((ok) => {
        if (ok) return true;
        if (topic.byFrom.get(from) === state) topic.byFrom.delete(from);
        if (state.topics.get(topic.name) === from) {
          state.topics.set(topic.name, null);
        }
        this.refuse(
          state,
          "forged_from",
          `Cannot publish as '${from}': a socket on another broker is it`,
        );
        return false;
      }, () => false);
    }
    this.refuse(
      state,
      "forged_from",
      mine === null
        ? `Cannot publish as '${from}': another socket of this topic is it`
        : `Cannot publish as '${from}': this socket is '${mine}' in this topic`,
    );
    return false;
  }

  // A signal goes to its addressee; the rest to every subscriber, the
  // sender included (as y-webrtc's reference server does).
  #recipients(topic: Topic, data: ClearData | string): YSocket[] {
    if (typeof data !== "string" && data.type === "signal") {
      const target = topic.byFrom.get(data.to);
      return target === undefined ? [] : [target];
    }
    return [...topic.subscribers];
  }

  #deliver(
    topic: Topic,
    data: ClearData | string,
    recipients: YSocket[],
  ): void {
    if (recipients.length === 0) return;
    const text = JSON.stringify({
      type: "publish",
      topic: topic.name,
      data,
      clients: topic.subscribers.size + this.#relay.remote(topic.key),
    });
    for (const recipient of recipients) this.send(recipient, text);
    this.relayed(recipients.length);
  }

  // A publish from another broker, checked again here as a client's frame;
  // delivered by the same rule (a signal only to the socket whose `from`
  // is its `to`).
  #fromRelay(key: string, text: string): void {
    const topic = this.#topics.get(key);
    if (topic === undefined) return;
    if (exceedsBytes(text, this.limits.maxFrameBytes)) return;
    const frame = parseYWebrtcFrame(text);
    if (frame.type !== "publish" || frame.topic !== topic.name) return;
    this.#deliver(topic, frame.data, this.#recipients(topic, frame.data));
  }
}
