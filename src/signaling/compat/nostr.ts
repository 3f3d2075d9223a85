/**
 * `/nostr`: a Nostr relay (NIP-01) for ephemeral events only, as Trystero
 * and Nostr WebRTC clients signal through one, with every limit of protocol
 * version 1 and these of its own:
 * - an `EVENT` is checked (`nostr_frames.ts`: shape, size, an ephemeral
 *   kind), then charged a token for each subscription it reaches (at least
 *   one), and only then its id and signature are checked
 *   (`nostr_verify.ts`), so that a flood costs its sender, not the broker;
 * - an accepted event goes to every open subscription of the namespace
 *   that matches it, the sender's own included, and is never stored;
 * - the same event again within {@linkcode NOSTR_DUPLICATE_WINDOW_MS} is
 *   answered `duplicate:` and not relayed again;
 * - a `REQ` is answered `EOSE` at once; one with a subscription id the
 *   socket holds replaces its filters; at most
 *   {@linkcode MAX_NOSTR_SUBSCRIPTIONS} a socket;
 * - a socket that neither subscribes nor publishes within `joinTimeoutMs`
 *   is closed.
 *
 * A refusal is an `OK false` for an event, a `CLOSED` for a `REQ`, or a
 * `NOTICE`, with NIP-01's prefixes (`invalid:`, `blocked:`,
 * `rate-limited:`). Events live in the socket's namespace (see
 * `limits.ts`): a page's events reach only pages of its own origin, on
 * this broker and, through the relay (one bus topic a namespace), on the
 * other brokers with a subscription in it, which check each event again.
 *
 * @module
 */

import { encodeHex } from "../../_util/encoding.ts";
import { sha256 } from "../../_util/hash.ts";
import { Lru } from "../../_util/lru.ts";
import { CLOSE_CODES } from "../close.ts";
import { exceedsBytes } from "../messages.ts";
import type { PeerSocket } from "../types.ts";
import {
  type CompatClient,
  CompatHub,
  type CompatHubOptions,
  type CompatSocket,
} from "./base.ts";
import {
  MAX_NOSTR_RECENT_IDS,
  MAX_NOSTR_SUBSCRIPTIONS,
  NOSTR_DUPLICATE_WINDOW_MS,
} from "./limits.ts";
import {
  matchesFilter,
  type NostrEvent,
  type NostrFilter,
  type NostrFrame,
  type NostrRefusal,
  parseNostrFrame,
} from "./nostr_frames.ts";
import type { EventFault } from "./nostr_verify.ts";
import type { TopicRelay } from "./relay_types.ts";

interface NostrSocket extends CompatSocket {
  /**
   * A short digest of its namespace, for the recent event ids (an `Origin`
   * may be long; a digest keeps each remembered id small).
   */
  readonly tag: string;
  /** Its subscriptions by id. */
  subscriptions: Map<string, Subscription>;
  /** The deadline of its first REQ or EVENT, cleared by it. */
  firstTimer: ReturnType<typeof setTimeout> | undefined;
  /** Its frames that wait for the signature check to load, in order. */
  later: Promise<void> | null;
  /** How many frames wait there. */
  waiting: number;
}

// Frames (of one socket, and from the bus) that may wait for the signature
// check to load; past them, a frame is refused.
const MAX_WAITING_FRAMES = 64;

/** One subscription of a socket. */
interface Subscription {
  readonly owner: NostrSocket;
  readonly id: string;
  readonly filters: NostrFilter[];
  /** The kinds it is filed under ({@linkcode ANY_KIND}: any). */
  readonly kinds: KindKey[];
}

/** The index key of filters that name no kind. */
const ANY_KIND = "*";

/** A kind, or {@linkcode ANY_KIND}. */
type KindKey = number | typeof ANY_KIND;

// A namespace's bus topic has no bound of its own: each broker counts once.
const ANY_NUMBER_OF_BROKERS = Number.MAX_SAFE_INTEGER;

/**
 * The hub of `/nostr` sockets.
 *
 * @example A subscription answered at once
 * ```ts
 * import assert from "node:assert/strict";
 * import { NostrHub } from "./nostr.ts";
 * import { DEFAULT_SIGNALING } from "../../config/options.ts";
 *
 * const hub = new NostrHub({ limits: { ...DEFAULT_SIGNALING, allowedOrigins: null } });
 * const sent: string[] = [];
 * const client = hub.connect({ send: (t) => sent.push(t), close() {} }, null, "none");
 * client.message('["REQ","s",{"kinds":[20001]}]');
 * assert.deepEqual(sent, ['["EOSE","s"]']);
 * client.closed();
 * assert.equal(hub.stats.subscriptions, 0);
 * ```
 */
export class NostrHub extends CompatHub<NostrSocket> {
  /** The dialect. */
  readonly dialect = "nostr" as const;
  /** Namespace, then kind (or {@linkcode ANY_KIND}), to the subscriptions. */
  readonly #index = new Map<string, Map<KindKey, Set<Subscription>>>();
  /** Namespace tag and event id to when it was relayed. */
  readonly #recent = new Lru<string, number>({
    maxEntries: MAX_NOSTR_RECENT_IDS,
  });
  #subscriptions = 0;
  #relay: TopicRelay;
  // The signature check: `@noble/curves` loads with the first socket, so
  // that a broker's start does not wait for it.
  #verify: ((event: NostrEvent) => EventFault) | null = null;
  #loading: Promise<void> | null = null;
  #waitingFromBus = 0;

  /**
   * @param options The limits, a logger, an observer, the socket hub and
   *   the relays.
   */
  constructor(options: CompatHubOptions) {
    super(options);
    this.#relay = this.relays.events;
    this.#relay.attach((namespace, text) => this.#fromRelay(namespace, text));
  }

  /** Open sockets, and their subscriptions. */
  get stats(): { sockets: number; subscriptions: number } {
    return { sockets: this.sockets, subscriptions: this.#subscriptions };
  }

  /**
   * Registers an upgraded socket. It must send a `REQ` or an `EVENT`
   * within `joinTimeoutMs`, or it is closed (1008).
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
    const state: NostrSocket = {
      ...this.initial({ socket, origin, namespace }),
      tag: tagOf(namespace),
      subscriptions: new Map(),
      firstTimer: undefined,
      later: null,
      waiting: 0,
    };
    this.#loading ??= import("./nostr_verify.ts").then(
      (module) => void (this.#verify = module.eventFault),
      (error) =>
        this.logger?.("error", "Cannot load the Nostr signature check", {
          error: String(error),
        }),
    );
    state.firstTimer = setTimeout(() => {
      state.firstTimer = undefined;
      this.close(state, CLOSE_CODES.policyViolation, "Subscribe timeout");
    }, this.limits.joinTimeoutMs);
    return this.register(state);
  }

  /**
   * Handles one frame. Until the signature check has loaded, an `EVENT`
   * waits for it, and the socket's later frames wait behind it, in order.
   */
  text(state: NostrSocket, text: string): void {
    const frame = parseNostrFrame(text);
    const wait = state.later !== null ||
      (frame.type === "event" && this.#verify === null);
    if (!wait) {
      this.#handle(state, frame);
      return;
    }
    if (state.waiting >= MAX_WAITING_FRAMES) {
      this.refused("rate_limited");
      this.send(state, '["NOTICE","rate-limited: the relay is starting"]');
      return;
    }
    state.waiting++;
    const later: Promise<void> = (state.later ?? this.#loading!).then(() => {
      state.waiting--;
      if (state.later === later) state.later = null;
      if (!state.closing) this.#handle(state, frame);
    });
    state.later = later;
  }

  #handle(state: NostrSocket, frame: NostrFrame | NostrRefusal): void {
    if (frame.type === "event") {
      this.#event(state, frame.event);
      return;
    }
    if (!this.takeTokens(state, 1)) return;
    switch (frame.type) {
      case "refused":
        this.#refuse(state, frame);
        break;
      case "req":
        this.#subscribe(state, frame.sub, frame.filters);
        break;
      case "close":
        this.#unsubscribe(state, frame.sub);
        break;
    }
  }

  /** A `NOTICE`, with NIP-01's prefix for the code. */
  errorFrame(code: string, message: string): string {
    const prefix = code === "rate_limited" ? "rate-limited" : "invalid";
    return JSON.stringify(["NOTICE", `${prefix}: ${message}`]);
  }

  /** Ends every subscription of the socket. */
  leave(state: NostrSocket): void {
    clearTimeout(state.firstTimer);
    state.firstTimer = undefined;
    for (const id of [...state.subscriptions.keys()]) {
      this.#unsubscribe(state, id);
    }
  }

  #refuse(state: NostrSocket, refusal: NostrRefusal): void {
    const message = `${refusal.prefix}: ${refusal.message}`;
    this.refused(refusal.code);
    if (refusal.reply === "OK") {
      this.send(state, JSON.stringify(["OK", refusal.target, false, message]));
    } else if (refusal.reply === "CLOSED") {
      this.send(state, JSON.stringify(["CLOSED", refusal.target, message]));
    } else {
      this.send(state, JSON.stringify(["NOTICE", message]));
    }
  }

  #ok(state: NostrSocket, id: string, ok: boolean, message: string): void {
    this.send(state, JSON.stringify(["OK", id, ok, message]));
  }

  #event(state: NostrSocket, event: NostrEvent): void {
    const key = state.tag + event.id;
    const seen = this.#recent.get(key);
    if (seen !== undefined && Date.now() - seen < NOSTR_DUPLICATE_WINDOW_MS) {
      if (!this.#take(state, event.id, 1)) return;
      this.#ok(state, event.id, true, "duplicate: already relayed");
      return;
    }
    const { namespace } = state;
    const reached = this.#matching(namespace, event);
    // The rate limit before the signature check: a token for each
    // subscription the event reaches (at least one), and one for each
    // other broker with a subscription in the namespace.
    const cost = Math.max(1, reached.length + this.#relay.remote(namespace));
    if (!this.#take(state, event.id, cost)) return;
    const fault = this.#verify === null
      ? "no signature check"
      : this.#verify(event);
    if (fault !== null) {
      this.refused("bad_signature");
      this.#ok(state, event.id, false, `invalid: ${fault}`);
      return;
    }
    this.#started(state);
    this.#recent.set(key, Date.now());
    this.#ok(state, event.id, true, "");
    const text = JSON.stringify(event);
    this.#deliver(reached, text);
    this.#relay.publish(namespace, text);
  }

  #deliver(reached: Subscription[], text: string): void {
    for (const { owner, id } of reached) {
      this.send(owner, `["EVENT",${JSON.stringify(id)},${text}]`);
    }
    this.relayed(reached.length);
  }

  // An event from another broker, checked again here as a client's (shape,
  // size, kind, id and signature), and relayed once.
  #fromRelay(namespace: string, text: string): void {
    if (this.#verify === null) {
      if (
        this.#loading === null || this.#waitingFromBus >= MAX_WAITING_FRAMES
      ) {
        return;
      }
      this.#waitingFromBus++;
      void this.#loading.then(() => {
        this.#waitingFromBus--;
        if (this.#verify !== null) this.#fromRelay(namespace, text);
      });
      return;
    }
    if (!this.#index.has(namespace)) return;
    if (exceedsBytes(text, this.limits.maxFrameBytes)) return;
    const frame = parseNostrFrame(`["EVENT",${text}]`);
    if (frame.type !== "event") return;
    const { event } = frame;
    const key = tagOf(namespace) + event.id;
    const seen = this.#recent.get(key);
    if (seen !== undefined && Date.now() - seen < NOSTR_DUPLICATE_WINDOW_MS) {
      return;
    }
    if (this.#verify(event) !== null) return;
    this.#recent.set(key, Date.now());
    this.#deliver(this.#matching(namespace, event), JSON.stringify(event));
  }

  // Takes an event's tokens; refused, it is answered `rate-limited:`.
  #take(state: NostrSocket, id: string, cost: number): boolean {
    if (this.takeTokens(state, cost)) return true;
    this.#ok(state, id, false, "rate-limited: too many events, slow down");
    return false;
  }

  // The open subscriptions of `namespace` that `event` matches, each once.
  #matching(namespace: string, event: NostrEvent): Subscription[] {
    const found = new Set<Subscription>();
    const kinds = this.#index.get(namespace);
    for (const kind of [event.kind, ANY_KIND] as const) {
      for (const sub of kinds?.get(kind) ?? []) {
        if (found.has(sub)) continue;
        if (sub.filters.some((filter) => matchesFilter(filter, event))) {
          found.add(sub);
        }
      }
    }
    return [...found];
  }

  #subscribe(state: NostrSocket, id: string, filters: NostrFilter[]): void {
    const replaced = state.subscriptions.has(id);
    if (!replaced && state.subscriptions.size >= MAX_NOSTR_SUBSCRIPTIONS) {
      this.refused("too_many_topics");
      this.send(
        state,
        JSON.stringify([
          "CLOSED",
          id,
          `blocked: at most ${MAX_NOSTR_SUBSCRIPTIONS} subscriptions a socket`,
        ]),
      );
      return;
    }
    // The same id again replaces the filters (Trystero re-sends it).
    if (replaced) this.#unsubscribe(state, id);
    const kinds = new Set<KindKey>();
    for (const filter of filters) {
      for (const kind of filter.kinds ?? [ANY_KIND] as const) kinds.add(kind);
    }
    const sub: Subscription = { owner: state, id, filters, kinds: [...kinds] };
    let index = this.#index.get(state.namespace);
    if (index === undefined) {
      this.#index.set(state.namespace, index = new Map());
      void this.#relay.subscribe(state.namespace, ANY_NUMBER_OF_BROKERS);
    }
    for (const kind of sub.kinds) {
      let subs = index.get(kind);
      if (subs === undefined) index.set(kind, subs = new Set());
      subs.add(sub);
    }
    state.subscriptions.set(id, sub);
    this.#subscriptions++;
    this.#started(state);
    this.send(state, JSON.stringify(["EOSE", id]));
  }

  #unsubscribe(state: NostrSocket, id: string): void {
    const sub = state.subscriptions.get(id);
    if (sub === undefined) return;
    state.subscriptions.delete(id);
    this.#subscriptions--;
    const index = this.#index.get(state.namespace);
    if (index === undefined) return;
    for (const kind of sub.kinds) {
      const subs = index.get(kind);
      subs?.delete(sub);
      if (subs?.size === 0) index.delete(kind);
    }
    if (index.size === 0) {
      this.#index.delete(state.namespace);
      this.#relay.unsubscribe(state.namespace);
    }
  }

  #started(state: NostrSocket): void {
    clearTimeout(state.firstTimer);
    state.firstTimer = undefined;
  }
}

/**
 * A short digest of a namespace, for the recent event ids (an `Origin` may
 * be long; a digest keeps each remembered id small).
 */
function tagOf(namespace: string): string {
  return encodeHex(sha256(new TextEncoder().encode(namespace))).slice(0, 32);
}
