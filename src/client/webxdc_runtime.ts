/**
 * The webxdc runtime of one app instance (`window.webxdc`, spec 1.4), apart
 * from the page: it takes a store and a wire (where messages to peers go)
 * and is told of peers and their messages, so it runs the same over a room
 * of the pod client or over a test's wires.
 *
 * - `sendUpdate(update)`: the update's JSON (at most `sendUpdateMaxSize`
 *   bytes) gets the author's next sequence number and the next serial at
 *   once, is delivered to the listener (the sender hears its own update),
 *   then signed, stored and sent to every peer.
 * - `setUpdateListener(cb, serial)`: `cb` gets every update after `serial`,
 *   in serial order, each with `serial` and `max_serial`; its promise
 *   resolves once the updates known locally (the stored log, replayed
 *   first) are delivered.
 * - `joinRealtimeChannel()`: binary messages of at most 128,000 bytes to
 *   the peers of the instance, not kept.
 *
 * @module
 */

import {
  byteLength,
  MAX_UPDATE_BYTES,
  type SignedUpdate,
  UpdateLog,
} from "./webxdc_log.ts";
import { type Author, signUpdate, Verifier } from "./webxdc_sign.ts";
import type { Store } from "./webxdc_store.ts";
import { Replicator } from "./webxdc_sync.ts";

/** What the runtime sends peers through. */
export interface RuntimeWire {
  /** A text message (updates, summaries) to one peer. */
  send(peer: string, text: string): void;
  /** A binary message (realtime data) to one peer. */
  sendBinary(peer: string, bytes: Uint8Array): void;
  /** Closes the link to a peer that was cut (again, if it comes back). */
  close?(peer: string): void;
}

/** What an instance's runtime is made of. */
export interface RuntimeOptions {
  /** The instance (the room's session). */
  instance: string;
  /** `selfAddr`. */
  selfAddr: string;
  /** `selfName`. */
  selfName: string;
  /** Where the log and key are kept. */
  store: Promise<Store>;
  /** Where messages to peers go. */
  wire: RuntimeWire;
  /** Told when a peer is cut, with why. */
  onCut?: (peer: string, why: string) => void;
  /** How long an answer a peer's summary owes may take (ms; tests shorten it). */
  answerMs?: number;
}

/** An update as the app's listener gets it. */
export type ReceivedUpdate = Record<string, unknown> & {
  serial: number;
  max_serial: number;
};

/** A realtime channel (`joinRealtimeChannel()`). */
export interface RealtimeChannel {
  /** Sets the function that gets each message. */
  setListener(listener: (data: Uint8Array) => void): void;
  /** Sends bytes (at most 128,000) to the instance's peers. */
  send(data: Uint8Array): void;
  /** Leaves the channel. */
  leave(): void;
}

/** The milliseconds between updates an app should keep to (`sendUpdateInterval`). */
export const SEND_UPDATE_INTERVAL = 1_000;

/** One instance's runtime; {@linkcode WebxdcRuntime.api} is `window.webxdc`'s core. */
export class WebxdcRuntime {
  /** The instance's log. */
  readonly log: UpdateLog = new UpdateLog();
  /** Shares the log with peers. */
  readonly replicator: Replicator;
  /** Resolves once the stored log is replayed and the author known. */
  readonly ready: Promise<void>;
  #options: RuntimeOptions;
  #author?: Author;
  #store?: Store;
  #listener?: (update: ReceivedUpdate) => void;
  #delivered = 0;
  #scheduled = false;
  #signing: Promise<void> = Promise.resolve();
  #realtime: { listener?: (data: Uint8Array) => void } | undefined;

  /**
   * Starts replaying the stored log (see {@linkcode ready}).
   *
   * @param options The instance, identity, store and wire.
   */
  constructor(options: RuntimeOptions) {
    this.#options = options;
    const verifier = new Verifier(options.instance);
    this.replicator = new Replicator(
      {
        log: this.log,
        verify: async (update) =>
          isBody(update.b) && await verifier.verify(update),
        added: (update) => {
          this.#store?.save(options.instance, update).catch(() => {});
          this.#schedule();
        },
        cut: (peer, why) => options.onCut?.(peer, why),
      },
      options.wire,
      options.answerMs,
    );
    this.ready = this.#load();
  }

  async #load(): Promise<void> {
    const store = this.#store = await this.#options.store;
    this.#author = await store.author();
    for (const update of await store.load(this.#options.instance)) {
      this.log.add(update);
    }
    this.#schedule();
  }

  /** A peer's channel opened. */
  peerJoined(peer: string): void {
    this.ready.then(() => this.replicator.join(peer));
  }

  /** A peer's channel closed. */
  peerLeft(peer: string): void {
    this.replicator.leave(peer);
  }

  /**
   * A message from a peer: text for updates, binary for realtime data.
   *
   * @returns When it was handled.
   */
  async message(peer: string, data: string | ArrayBuffer): Promise<void> {
    if (typeof data === "string") {
      await this.ready;
      return await this.replicator.receive(peer, data);
    }
    if (this.replicator.isCut(peer)) return;
    if (data.byteLength > MAX_UPDATE_BYTES) {
      return this.replicator.cut(peer, "oversized realtime data");
    }
    this.#realtime?.listener?.(new Uint8Array(data));
  }

  /** Resolves once the updates sent so far are signed, stored and sent. */
  async flushed(): Promise<void> {
    await this.ready;
    await this.#signing;
  }

  /** `window.webxdc` without the page's parts (files, chat). */
  get api(): {
    selfAddr: string;
    selfName: string;
    sendUpdateInterval: number;
    sendUpdateMaxSize: number;
    sendUpdate(update: unknown, descr?: string): void;
    setUpdateListener(
      listener: (update: ReceivedUpdate) => void,
      serial?: number,
    ): Promise<void>;
    getAllUpdates(): Promise<ReceivedUpdate[]>;
    joinRealtimeChannel(): RealtimeChannel;
  } {
    return {
      selfAddr: this.#options.selfAddr,
      selfName: this.#options.selfName,
      sendUpdateInterval: SEND_UPDATE_INTERVAL,
      sendUpdateMaxSize: MAX_UPDATE_BYTES,
      sendUpdate: (update) => this.sendUpdate(update),
      setUpdateListener: (listener, serial) =>
        this.setUpdateListener(listener, serial),
      getAllUpdates: async () => {
        await this.ready;
        return Array.from(
          { length: this.log.maxSerial },
          (_, i) => this.#received(i + 1, this.log.maxSerial),
        );
      },
      joinRealtimeChannel: () => this.joinRealtimeChannel(),
    };
  }

  /**
   * Adds an update of this page's author and sends it (see the module's
   * documentation).
   *
   * @throws {TypeError} When `update` is not an object with a `payload`,
   * or cannot be written as JSON.
   * @throws {RangeError} When its JSON is over `sendUpdateMaxSize` bytes.
   * @throws {Error} When the instance's log is full (nothing is dropped).
   */
  sendUpdate(update: unknown): void {
    if (
      typeof update !== "object" || update === null || !("payload" in update)
    ) {
      throw new TypeError("Cannot send the update: it needs a payload");
    }
    const body = JSON.stringify(update);
    const bytes = byteLength(body);
    if (bytes > MAX_UPDATE_BYTES) {
      throw new RangeError(
        `Cannot send the update: ${bytes} bytes is more than sendUpdateMaxSize (${MAX_UPDATE_BYTES})`,
      );
    }
    const full = this.log.fullFor(bytes);
    if (full) throw new Error(`Cannot send the update: ${full}`);
    if (!this.#author) {
      this.ready.then(() => this.#commit(body)).catch((error) =>
        console.error(error)
      );
    } else this.#commit(body);
  }

  /** Gives the update a place in the log, then signs, stores and sends it. */
  #commit(body: string): void {
    const author = this.#author!;
    const update: SignedUpdate = {
      a: author.id,
      n: this.log.nextSequence(author.id),
      b: body,
      s: "",
    };
    const added = this.log.add(update);
    if (added !== "added") {
      throw new Error(`Cannot send the update: ${this.log.fullFor(0)}`);
    }
    this.#schedule();
    const { instance } = this.#options;
    this.#signing = this.#signing.then(async () => {
      update.s = await signUpdate(instance, author, update);
      await this.#store!.save(instance, update).catch(() => {});
      this.replicator.broadcast(update);
    });
  }

  /**
   * Sets the listener, which gets every update after `serial`; resolves
   * once the updates known now (the replayed log too) are delivered.
   */
  async setUpdateListener(
    listener: (update: ReceivedUpdate) => void,
    serial = 0,
  ): Promise<void> {
    this.#listener = listener;
    this.#delivered = Math.max(0, Math.floor(Number(serial) || 0));
    await this.ready;
    this.#deliver();
  }

  /** Joins the realtime channel (one at a time). */
  joinRealtimeChannel(): RealtimeChannel {
    if (this.#realtime) {
      throw new Error("Cannot join the realtime channel: it is joined already");
    }
    const channel: { listener?: (data: Uint8Array) => void } = {};
    this.#realtime = channel;
    return {
      setListener: (listener) => channel.listener = listener,
      send: (data) => this.#sendRealtime(channel, data),
      leave: () => {
        if (this.#realtime === channel) this.#realtime = undefined;
      },
    };
  }

  #sendRealtime(
    channel: { listener?: (data: Uint8Array) => void },
    data: Uint8Array,
  ): void {
    if (this.#realtime !== channel) {
      throw new Error("Cannot send: the realtime channel was left");
    }
    if (!(data instanceof Uint8Array)) {
      throw new TypeError("Cannot send: realtime data must be a Uint8Array");
    }
    if (data.length > MAX_UPDATE_BYTES) {
      throw new RangeError(
        `Cannot send: ${data.length} bytes is more than ${MAX_UPDATE_BYTES}`,
      );
    }
    for (const peer of this.replicator.peers) {
      this.#options.wire.sendBinary(peer, data.slice());
    }
  }

  /** Delivers soon (once per turn, however many updates came). */
  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    queueMicrotask(() => {
      this.#scheduled = false;
      this.#deliver();
    });
  }

  #deliver(): void {
    const max = this.log.maxSerial;
    while (this.#listener && this.#delivered < max) {
      const serial = ++this.#delivered;
      try {
        this.#listener(this.#received(serial, max));
      } catch (error) {
        console.error(error); // the app's error; the next update still comes
      }
    }
  }

  #received(serial: number, max: number): ReceivedUpdate {
    const body = JSON.parse(this.log.at(serial)!.b) as Record<string, unknown>;
    return { ...body, serial, max_serial: max };
  }
}

/** Whether a body is the JSON of an object with a payload. */
function isBody(text: string): boolean {
  try {
    const value = JSON.parse(text);
    return typeof value === "object" && value !== null &&
      !Array.isArray(value) && "payload" in value;
  } catch {
    return false;
  }
}
