/**
 * `/peerjs`: the PeerJS server protocol, with every limit of protocol
 * version 1 and these of its own:
 * - a socket opens with `key`, `id` and `token`; the id is its own until it
 *   is gone: another token gets `ID-TAKEN`, the same token takes it back
 *   (a reconnect, on any broker), also for {@linkcode PEERJS_WAIT_MS} after
 *   its socket closed ({@linkcode RESUME_MS} when the broker restarts);
 * - frames are checked (`peerjs_frames.ts`) and `src` is stamped here;
 * - a message to an id that is not connected waits for it
 *   {@linkcode PEERJS_WAIT_MS}, then its sender gets `EXPIRE`; a socket may
 *   have {@linkcode MAX_PEERJS_QUEUED_MESSAGES} messages and
 *   {@linkcode MAX_PEERJS_QUEUED_BYTES} bytes waiting (past them: `EXPIRE`
 *   at once);
 * - an id whose socket is gone for good is told to its contacts (the ids it
 *   exchanged messages with) with `LEAVE`.
 *
 * Ids live in the socket's namespace (see `limits.ts`). An
 * {@linkcode IdRelay} claims them across brokers and carries messages.
 *
 * @module
 */

import { RESUME_MS } from "../bus/held.ts";
import { CLOSE_CODES } from "../close.ts";
import type { PeerSocket } from "../types.ts";
import {
  type CompatClient,
  CompatHub,
  type CompatHubOptions,
  type CompatSocket,
} from "./base.ts";
import {
  MAX_PEERJS_CONTACTS,
  MAX_PEERJS_QUEUED_BYTES,
  MAX_PEERJS_QUEUED_MESSAGES,
  PEERJS_RETRY_MS,
  PEERJS_WAIT_MS,
  scopedKey,
} from "./limits.ts";
import type { IdRelay, RemoteMessage } from "./relay_types.ts";
import { proofOf } from "./relays.ts";
import {
  isPeerJsId,
  isPeerJsToken,
  parsePeerJsFrame,
  PEERJS_KEY,
  type PeerJsFrame,
} from "./peerjs_frames.ts";

// An id of this broker: its token, its socket (null while it may come
// back), and the ids it exchanged messages with.
interface Client {
  key: string;
  id: string;
  namespace: string;
  token: string;
  socket: PSocket | null;
  /** Keys of the ids it exchanged messages with, to their ids. */
  contacts: Map<string, string>;
  graceTimer: ReturnType<typeof setTimeout> | undefined;
  /** Frames from other brokers that came while it had no socket (bounded). */
  inbox: string[];
}

// A frame that goes to a `dst`.
type Routed = Exclude<PeerJsFrame, { type: "HEARTBEAT" }>;

// Messages of one socket for one absent id: each as the frame to send here
// and the checked frame to send to another broker. The id is looked for on
// the other brokers every PEERJS_RETRY_MS meanwhile.
interface Waiting {
  sender: PSocket;
  dst: string;
  dstKey: string;
  messages: { text: string; frame: Routed }[];
  bytes: number;
  timer: ReturnType<typeof setTimeout> | undefined;
  retry: ReturnType<typeof setInterval> | undefined;
}

interface PSocket extends CompatSocket {
  client: Client | null;
  /** Frames that came while its id was being claimed across brokers. */
  held: string[] | null;
  waiting: Map<string, Waiting>;
  queued: number;
  queuedBytes: number;
}

/**
 * The hub of `/peerjs` sockets.
 *
 * @example Open with an id
 * ```ts
 * import assert from "node:assert/strict";
 * import { PeerJsHub } from "./peerjs.ts";
 * import { DEFAULT_SIGNALING } from "../../config/options.ts";
 *
 * const hub = new PeerJsHub({ limits: { ...DEFAULT_SIGNALING, allowedOrigins: null } });
 * const sent: string[] = [];
 * const params = { key: "peerjs", id: "alice", token: "t1" };
 * const client = hub.connect({ send: (t) => sent.push(t), close() {} }, null, "none", params);
 * // OPEN once the id is claimed (on the bus, when the broker has one).
 * await new Promise((resolve) => setTimeout(resolve, 0));
 * assert.deepEqual(sent, ['{"type":"OPEN"}']);
 * client.closed();
 * hub.shutdown();
 * ```
 */
export class PeerJsHub extends CompatHub<PSocket> {
  /** The dialect. */
  readonly dialect = "peerjs" as const;
  #clients = new Map<string, Client>();
  #waiting = new Map<string, Set<Waiting>>();
  #relay: IdRelay;

  /**
   * @param options The limits, a logger, an observer and the relays.
   */
  constructor(options: CompatHubOptions) {
    super(options);
    this.#relay = this.relays.ids;
    this.#relay.attach({
      message: (message) => this.#fromRelay(message),
      handOver: (key, proof) => this.#handOver(key, proof),
    });
  }

  /** Open sockets, and ids held (connected or about to come back). */
  get stats(): { sockets: number; ids: number } {
    return { sockets: this.sockets, ids: this.#clients.size };
  }

  /** At shutdown, once every socket has left: lets every id go, untold. */
  shutdown(): void {
    for (const client of [...this.#clients.values()]) this.#forget(client);
  }

  /**
   * Registers an upgraded socket and opens its id (`OPEN`), or refuses it
   * (`ERROR` or `ID-TAKEN`, then closes it).
   *
   * @param socket The socket.
   * @param origin Its `Origin`, or null.
   * @param namespace Its namespace (`namespaceOf`).
   * @param params The query's `key`, `id` and `token`.
   * @returns The callbacks of its events.
   */
  connect(
    socket: PeerSocket,
    origin: string | null,
    namespace: string,
    params: Record<string, string>,
  ): CompatClient {
    const state: PSocket = {
      ...this.initial({ socket, origin, namespace }),
      client: null,
      held: null,
      waiting: new Map(),
      queued: 0,
      queuedBytes: 0,
    };
    const events = this.register(state);
    const { key, id, token } = params;
    if (key === undefined || id === undefined || token === undefined) {
      this.#refuseOpen(
        state,
        "invalid_id",
        "No id, token, or key supplied to websocket server",
      );
    } else if (key !== PEERJS_KEY) {
      this.#refuseOpen(state, "invalid_key", "Invalid key provided");
    } else if (!isPeerJsId(id) || !isPeerJsToken(token)) {
      this.#refuseOpen(
        state,
        "invalid_id",
        "Invalid id or token: an id is letters and digits (single spaces, - or _ between), at most 64; a token 1 to 64 characters",
      );
    } else {
      this.#open(state, id, token);
    }
    return events;
  }

  /** Handles one frame. */
  text(state: PSocket, text: string): void {
    if (!this.takeTokens(state, 1)) return;
    if (state.held === null) {
      this.#handle(state, text);
    } else if (state.held.length < MAX_PEERJS_QUEUED_MESSAGES) {
      state.held.push(text);
    } else {
      this.refuse(state, "queue_full", "Cannot accept the frame: not open yet");
    }
  }

  #handle(state: PSocket, text: string): void {
    const frame = parsePeerJsFrame(text);
    if (frame.type === "refused") {
      this.refuse(state, frame.code, frame.message);
      return;
    }
    const client = state.client;
    if (frame.type === "HEARTBEAT" || client === null) return;
    this.#route(client, frame);
  }

  /** PeerJS's error frame (its client gives up on it). */
  errorFrame(code: string, message: string): string {
    return JSON.stringify({ type: "ERROR", payload: { msg: message, code } });
  }

  /**
   * The socket is gone: its waiting messages are dropped, and its id waits
   * {@linkcode PEERJS_WAIT_MS} for its token to come back, or
   * {@linkcode RESUME_MS} when the broker closed it to restart (at shutdown
   * it goes at once, untold).
   */
  leave(state: PSocket, shutdown: boolean, code?: number): void {
    for (const waiting of [...state.waiting.values()]) this.#unwait(waiting);
    const client = state.client;
    state.client = null;
    if (client === null || client.socket !== state) return;
    client.socket = null;
    if (shutdown) {
      this.#forget(client);
      return;
    }
    const wait = code === CLOSE_CODES.serviceRestart
      ? RESUME_MS
      : PEERJS_WAIT_MS;
    client.graceTimer = setTimeout(() => this.#die(client), wait);
  }

  // Another broker asks for an id of this one for its token's bearer: an
  // id whose socket is away goes, and its contacts are not told.
  #handOver(key: string, proof: string): void {
    const client = this.#clients.get(key);
    if (client === undefined || client.socket !== null) return;
    if (proofOf(client.token) !== proof) return;
    this.#forget(client);
  }

  #refuseOpen(state: PSocket, code: string, message: string): void {
    this.refuse(state, code, message);
    this.close(state, CLOSE_CODES.policyViolation, message);
  }

  #open(state: PSocket, id: string, token: string): void {
    const key = scopedKey(state.namespace, id);
    const held = this.#clients.get(key);
    if (held !== undefined) {
      if (held.token !== token) {
        this.#taken(state);
        return;
      }
      // The same token: a reconnect takes the id back.
      clearTimeout(held.graceTimer);
      held.graceTimer = undefined;
      const old = held.socket;
      if (old !== null) {
        old.client = null;
        this.close(old, CLOSE_CODES.normal, "Replaced by a new connection");
      }
      this.#attach(state, held);
      return;
    }
    const client: Client = {
      key,
      id,
      namespace: state.namespace,
      token,
      socket: null,
      contacts: new Map(),
      graceTimer: undefined,
      inbox: [],
    };
    this.#clients.set(key, client);
    state.held = [];
    // Held by another broker: its token's bearer may take it over (back
    // after that broker restarted).
    this.#relay.claim(key).then((ok) =>
      ok || this.#relay.handOver(key, proofOf(token))
    ).then((ok) => {
      const held = state.held ?? [];
      state.held = null;
      if (ok && !state.closing) {
        this.#attach(state, client);
        for (const text of held) this.#handle(state, text);
        return;
      }
      if (ok) this.#relay.release(key);
      if (this.#clients.get(key) === client) this.#clients.delete(key);
      if (!state.closing) this.#taken(state);
    }, () => {
      if (this.#clients.get(key) === client) this.#clients.delete(key);
      this.close(state, CLOSE_CODES.tryAgainLater, "Signaling bus down");
    });
  }

  #taken(state: PSocket): void {
    this.observer?.compatRefused(this.dialect, "id_taken");
    this.send(state, '{"type":"ID-TAKEN","payload":{"msg":"ID is taken"}}');
    this.close(state, CLOSE_CODES.policyViolation, "ID is taken");
  }

  // The socket holds the id now: OPEN, then what waited for it.
  #attach(state: PSocket, client: Client): void {
    client.socket = state;
    state.client = client;
    this.send(state, '{"type":"OPEN"}');
    for (const text of client.inbox.splice(0)) this.send(state, text);
    const waiting = this.#waiting.get(client.key);
    if (waiting === undefined) return;
    for (const entry of [...waiting]) {
      this.#unwait(entry);
      for (const { text } of entry.messages) this.send(state, text);
      this.relayed(entry.messages.length);
      const sender = entry.sender.client;
      if (sender !== null) {
        this.#contact(client, sender.key, sender.id);
        this.#contact(sender, client.key, client.id);
      }
    }
  }

  // Sends a checked frame from `client` to its `dst`: here, on another
  // broker, or waiting for it (a LEAVE to an absent id is dropped, as
  // PeerJS's server does).
  #route(client: Client, frame: Routed): void {
    const { dst } = frame;
    const dstKey = scopedKey(client.namespace, dst);
    const text = JSON.stringify({
      type: frame.type,
      src: client.id,
      dst,
      ...("payload" in frame ? { payload: frame.payload } : {}),
    });
    const target = this.#clients.get(dstKey);
    const leave = frame.type === "LEAVE";
    if (target?.socket != null) {
      this.send(target.socket, text);
      this.relayed(1);
      if (leave) return;
      this.#contact(client, dstKey, dst);
      this.#contact(target, client.key, client.id);
      return;
    }
    const sender = client.socket;
    // After a message that waits, the next waits too: they keep their order;
    // and an id held here but away waits here for its socket.
    if (
      sender !== null && !leave &&
      (sender.waiting.has(dstKey) || target !== undefined)
    ) {
      this.#wait(sender, { text, frame }, dstKey);
      return;
    }
    if (target !== undefined) return;
    this.#relay.send({ dstKey, src: client.id, frame }).then((sent) => {
      if (sent && !leave) this.#contact(client, dstKey, dst);
      if (sent || leave || client.socket === null) return;
      this.#wait(client.socket, { text, frame }, dstKey);
    }, () => {});
  }

  // Queues a message for an absent id, within the socket's bounds.
  #wait(
    sender: PSocket,
    message: { text: string; frame: Routed },
    dstKey: string,
  ): void {
    const dst = message.frame.dst;
    const bytes = message.text.length;
    if (
      sender.queued + 1 > MAX_PEERJS_QUEUED_MESSAGES ||
      sender.queuedBytes + bytes > MAX_PEERJS_QUEUED_BYTES
    ) {
      this.observer?.compatRefused(this.dialect, "queue_full");
      this.#expire(sender, dst);
      return;
    }
    let waiting = sender.waiting.get(dstKey);
    if (waiting === undefined) {
      const entry: Waiting = {
        sender,
        dst,
        dstKey,
        messages: [],
        bytes: 0,
        timer: undefined,
        retry: undefined,
      };
      entry.timer = setTimeout(() => {
        this.#unwait(entry);
        this.observer?.compatRefused(this.dialect, "expired");
        this.#expire(sender, dst);
      }, PEERJS_WAIT_MS);
      entry.retry = setInterval(() => this.#retry(entry), PEERJS_RETRY_MS);
      waiting = entry;
      sender.waiting.set(dstKey, waiting);
      let set = this.#waiting.get(dstKey);
      if (set === undefined) this.#waiting.set(dstKey, set = new Set());
      set.add(waiting);
    }
    waiting.messages.push(message);
    waiting.bytes += bytes;
    sender.queued++;
    sender.queuedBytes += bytes;
  }

  #expire(sender: PSocket, dst: string): void {
    const id = sender.client?.id;
    if (id === undefined) return;
    this.send(sender, JSON.stringify({ type: "EXPIRE", src: dst, dst: id }));
  }

  // Looks for the id on the other brokers: found, its messages go there.
  #retry(waiting: Waiting): void {
    const client = waiting.sender.client;
    const first = waiting.messages[0];
    if (client === null || first === undefined) return;
    const { dstKey } = waiting;
    this.#relay.send({ dstKey, src: client.id, frame: first.frame }).then(
      (sent) => {
        if (!sent || waiting.sender.waiting.get(dstKey) !== waiting) return;
        this.#unwait(waiting);
        this.#contact(client, dstKey, waiting.dst);
        for (const { frame } of waiting.messages.slice(1)) {
          this.#relay.send({ dstKey, src: client.id, frame }).catch(() => {});
        }
      },
      () => {},
    );
  }

  #unwait(waiting: Waiting): void {
    clearTimeout(waiting.timer);
    clearInterval(waiting.retry);
    const { sender, dstKey } = waiting;
    if (sender.waiting.get(dstKey) !== waiting) return;
    sender.waiting.delete(dstKey);
    sender.queued -= waiting.messages.length;
    sender.queuedBytes -= waiting.bytes;
    const set = this.#waiting.get(dstKey);
    set?.delete(waiting);
    if (set?.size === 0) this.#waiting.delete(dstKey);
  }

  #contact(client: Client, key: string, id: string): void {
    if (key === client.key || client.contacts.size >= MAX_PEERJS_CONTACTS) {
      return;
    }
    client.contacts.set(key, id);
  }

  // The id did not come back: its contacts are told it left.
  #die(client: Client): void {
    if (this.#clients.get(client.key) !== client || client.socket !== null) {
      return;
    }
    this.#forget(client);
    for (const dst of client.contacts.values()) {
      this.#route(client, { type: "LEAVE", dst });
    }
  }

  #forget(client: Client): void {
    clearTimeout(client.graceTimer);
    client.graceTimer = undefined;
    if (this.#clients.get(client.key) !== client) return;
    this.#clients.delete(client.key);
    this.#relay.release(client.key);
  }

  // A message from another broker for an id of this one, checked again
  // here: nothing from the bus reaches a socket unchecked.
  #fromRelay(message: RemoteMessage): void {
    const target = this.#clients.get(message.dstKey);
    if (target === undefined || !isPeerJsId(message.src)) return;
    const frame = parsePeerJsFrame(JSON.stringify(message.frame));
    if (frame.type === "refused" || frame.type === "HEARTBEAT") return;
    if (frame.dst !== target.id) return;
    const text = JSON.stringify({ ...frame, src: message.src });
    if (target.socket === null) {
      // The bus told the sender this id is ours before its socket had it.
      if (target.inbox.length < MAX_PEERJS_QUEUED_MESSAGES) {
        target.inbox.push(text);
      }
    } else {
      this.send(target.socket, text);
    }
    this.relayed(1);
    if (frame.type === "LEAVE") return;
    const srcKey = scopedKey(target.namespace, message.src);
    this.#contact(target, srcKey, message.src);
  }
}
