/**
 * The signaling bus: what lets the peers of one session sit on different
 * brokers. The {@linkcode Bus} interface is the seam between the hub, which
 * holds the cluster logic once (who holds which peer, the order of joins and
 * leaves, what to do when the bus goes away), and an engine that stores the
 * membership and carries the messages: {@linkcode LocalBus} in one process
 * (several hubs sharing sessions, for tests and benchmarks) and `RedisBus`
 * across processes.
 *
 * The contract an engine keeps:
 * - every membership change of every session gets a number from one
 *   sequence (`seq`), and is published in that order to each node that
 *   holds a member of the session after the change (the joiner's node
 *   included); `join` and `snapshot` answer with the membership at a `seq`;
 * - `join` is atomic: it refuses a full session and a peer id already held
 *   anywhere;
 * - session events reach no other node, and a delivery only the node it is
 *   addressed to;
 * - when a node goes silent (its process died), the engine removes its
 *   peers within a bounded time and publishes their `left` events;
 * - a parked peer (its socket went away, it may resume) stays a member held
 *   by no node for 30 s (`RESUME_MS`): signals to it are held within the
 *   bounds of held.ts, a `resume` with its token on any node moves it there
 *   with what was held (once), and at the end of the window it leaves.
 *
 * @module
 */

import type { CompatBus } from "./compat.ts";
import type { Held, HeldWindow } from "./held.ts";
import { ParkedPeers } from "./parked.ts";
import { LocalCompatEngine } from "./local_compat.ts";

export type { CompatBus, CompatBusListener } from "./compat.ts";
export type { Held, HeldSignal } from "./held.ts";

/** Whether the bus can be used now. */
export type BusState = "up" | "down";

/** A membership change of a session, in the bus's one order. */
export interface BusEvent {
  /** Position in the bus's order: a later change has a larger number. */
  seq: number;
  /**
   * Whether the peer joined, left, or moved to another node (`node` is ""
   * while it is parked): a move changes no membership.
   */
  kind: "joined" | "left" | "moved";
  /** The session. */
  session: string;
  /** The peer. */
  peerId: string;
  /** The node (broker) that holds the peer ("" for a parked peer). */
  node: string;
}

/** The members of a session (peer id to node) as of `seq`. */
export interface BusSnapshot {
  /** The bus position this membership is exact at. */
  seq: number;
  /** Peer id to the node that holds it. */
  members: Map<string, string>;
}

/** The answer to {@linkcode Bus.join}. */
export type BusJoinResult =
  | { ok: true; snapshot: BusSnapshot }
  | { ok: false; reason: "full" | "taken" | "lost" };

/** The answer to a successful {@linkcode Bus.resume}. */
export interface BusResume {
  /** The resumed peer's id, now held by this node. */
  peerId: string;
  /** The session's members just after the move. */
  snapshot: BusSnapshot;
  /** The signals held for it (hostile until checked), and whose were dropped. */
  held: Held;
}

/**
 * Signal data for a peer that another node holds. Only the sender's id and
 * the data travel: the receiving hub checks that `from` is a member of the
 * session and that `data` is signal data, and builds the frame itself, so a
 * message put on the bus by anyone else cannot make a browser receive a
 * frame the protocol does not allow.
 */
export interface BusDelivery {
  /** The addressee's session. */
  session: string;
  /** The addressee. */
  to: string;
  /** The sender, a member of the session on the sending node. */
  from: string;
  /** The signal's data as JSON text (unchecked until the receiver parses it). */
  data: string;
}

/** What a bus reports to the hub attached to it. */
export interface BusListener {
  /** A membership change in a watched session. */
  event(event: BusEvent): void;
  /** Signal data addressed to a peer of this node (hostile until checked). */
  deliver(delivery: BusDelivery): void;
  /**
   * The bus went down or came back. `lost` is true when this node's peers
   * were dropped from the bus meanwhile (the node was taken for dead, or the
   * engine lost its data): the hub must let them go.
   */
  state(state: BusState, lost: boolean): void;
}

/**
 * One node's handle on the signaling bus. Each hub gets its own; the
 * caller creates it, passes it as the `bus` option and closes it after the
 * server.
 */
export interface Bus {
  /** This node's id, unique on the bus. */
  readonly node: string;
  /** Whether the bus can be used now. */
  readonly state: BusState;
  /** Attaches the hub's listener (one per bus). */
  attach(listener: BusListener): void;
  /**
   * Adds `peerId`, held by this node, to `session` unless it holds
   * `maxPeers` already or the id is taken; publishes its `joined` event.
   */
  join(
    session: string,
    peerId: string,
    maxPeers: number,
  ): Promise<BusJoinResult>;
  /** Removes this node's `peerId` from `session`; publishes `left`. */
  leave(session: string, peerId: string): Promise<void>;
  /** The members of `session` now. */
  snapshot(session: string): Promise<BusSnapshot>;
  /** Sends signal data to a peer that `node` holds. */
  deliver(node: string, delivery: BusDelivery): Promise<void>;
  /**
   * Parks this node's `peerId`: it stays a member of `session`, held by no
   * node, for 30 s (`RESUME_MS`); `token` resumes it. Publishes `moved`
   * with node "".
   */
  park(session: string, peerId: string, token: string): Promise<void>;
  /**
   * Moves the peer parked in `session` under `token` to this node and
   * hands over what was held for it; the token is spent. Publishes `moved`.
   *
   * @returns Null for an unknown, spent or expired token, or one of another
   * session.
   */
  resume(session: string, token: string): Promise<BusResume | null>;
  /**
   * Sends signal data to `delivery.to` wherever it is now: to the node that
   * holds it, or into its hold while it is parked.
   *
   * @param delivery The signal.
   * @param held The sending broker's bound on what its peers put into holds
   * (`signaling.maxHeldBytes`): an engine that holds on shared storage
   * takes a held signal's bytes from it, and drops a signal to a parked
   * peer that does not fit (the peer is told to restart ICE). An engine
   * that holds in its own process bounds it there. Absent, the engine's
   * default bound.
   * @returns False when it is no member of the session.
   */
  send(delivery: BusDelivery, held?: HeldWindow): Promise<boolean>;
  /** Removes this node's peers from the bus and disconnects. */
  close(): Promise<void>;
  /**
   * The dialects' shared state (`/y-webrtc` and `/nostr` topics, PeerJS
   * ids) on the same engine: the part the dialect hubs cross brokers by.
   */
  readonly compat: CompatBus;
}

/**
 * Whether `value` has the methods of a {@linkcode Bus}.
 *
 * @param value Anything.
 * @returns True for an object with every method and a `node` string.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isBus, LocalBus } from "./mod.ts";
 *
 * assert.equal(isBus(new LocalBus().connect()), true);
 * assert.equal(isBus({}), false);
 * ```
 */
export function isBus(value: unknown): value is Bus {
  if (typeof value !== "object" || value === null) return false;
  const bus = value as Record<string, unknown>;
  return typeof bus.node === "string" && typeof bus.compat === "object" &&
    bus.compat !== null &&
    BUS_METHODS.every((name) => typeof bus[name] === "function");
}

const BUS_METHODS = [
  "attach",
  "join",
  "leave",
  "snapshot",
  "deliver",
  "park",
  "resume",
  "send",
  "close",
] as const;

/**
 * An in-process bus: the hubs of several brokers in one process share
 * sessions through it, as brokers in several processes do through Redis.
 * Call {@linkcode LocalBus.connect} once per broker. Messages are handed
 * over in a microtask, so callers see the same asynchrony as with a network
 * engine.
 *
 * @example Two nodes of one bus
 * ```ts
 * import assert from "node:assert/strict";
 * import { LocalBus } from "./mod.ts";
 *
 * const bus = new LocalBus();
 * const a = bus.connect();
 * const b = bus.connect();
 * assert.notEqual(a.node, b.node);
 * const joined = await a.join("s", "p1", 2);
 * assert.equal(joined.ok, true);
 * assert.deepEqual([...(await b.snapshot("s")).members.keys()], ["p1"]);
 * await a.close();
 * await b.close();
 * ```
 */
export class LocalBus {
  #seq = 0;
  #sessions = new Map<string, Map<string, string>>();
  #peers = new Map<string, string>();
  #nodes = new Map<string, LocalBusNode>();
  #count = 0;
  #compat = new LocalCompatEngine();
  // The window is over: the parked peer leaves.
  #parked = new ParkedPeers((peerId, session) =>
    this._leave("", session, peerId)
  );

  /**
   * A new node on this bus.
   *
   * @returns The node's {@linkcode Bus}.
   */
  connect(): Bus {
    const id = `local-${++this.#count}`;
    const node = new LocalBusNode(this, id, this.#compat.connect(id));
    this.#nodes.set(node.node, node);
    return node;
  }

  /** @internal */
  _join(
    node: string,
    session: string,
    peerId: string,
    max: number,
  ): BusJoinResult {
    const members = this.#sessions.get(session) ?? new Map<string, string>();
    if (members.size >= max) return { ok: false, reason: "full" };
    if (this.#peers.has(peerId)) return { ok: false, reason: "taken" };
    members.set(peerId, node);
    this.#sessions.set(session, members);
    this.#peers.set(peerId, session);
    const seq = this._publish("joined", session, peerId, node);
    return { ok: true, snapshot: { seq, members: new Map(members) } };
  }

  /** @internal */
  _leave(node: string, session: string, peerId: string): void {
    const members = this.#sessions.get(session);
    if (members?.get(peerId) !== node) return;
    members.delete(peerId);
    if (members.size === 0) this.#sessions.delete(session);
    this.#peers.delete(peerId);
    this._publish("left", session, peerId, node);
  }

  /** @internal */
  _snapshot(session: string): BusSnapshot {
    return {
      seq: this.#seq,
      members: new Map(this.#sessions.get(session) ?? []),
    };
  }

  /** @internal */
  _publish(
    kind: BusEvent["kind"],
    session: string,
    peerId: string,
    node: string,
  ): number {
    const event = { seq: ++this.#seq, kind, session, peerId, node };
    const holders = new Set(this.#sessions.get(session)?.values());
    for (const holder of holders) this.#nodes.get(holder)?._event(event);
    return event.seq;
  }

  /** @internal */
  _park(node: string, session: string, peerId: string, token: string): void {
    const members = this.#sessions.get(session);
    if (members?.get(peerId) !== node) return;
    members.set(peerId, "");
    this.#parked.park(peerId, session, token);
    this._publish("moved", session, peerId, "");
  }

  /** @internal */
  _resume(node: string, session: string, token: string): BusResume | null {
    const resumed = this.#parked.resume(session, token);
    if (resumed === null) return null;
    const { peerId, held } = resumed;
    const members = this.#sessions.get(session)!;
    members.set(peerId, node);
    const seq = this._publish("moved", session, peerId, node);
    return { peerId, snapshot: { seq, members: new Map(members) }, held };
  }

  /** @internal */
  _send(delivery: BusDelivery): boolean {
    const node = this.#sessions.get(delivery.session)?.get(delivery.to);
    if (node === undefined) return false;
    if (node !== "") this._deliver(node, delivery);
    else {
      this.#parked.hold(
        delivery.session,
        delivery.to,
        delivery.from,
        delivery.data,
      );
    }
    return true;
  }

  /** @internal */
  _deliver(node: string, delivery: BusDelivery): void {
    this.#nodes.get(node)?._deliver(delivery);
  }

  /** @internal */
  _close(node: string): void {
    this.#nodes.delete(node);
    this.#compat.drop(node);
    // The last node gone: no one is left to resume, and no timer outlives it.
    if (this.#nodes.size === 0) {
      this.#parked.expireAll();
    }
    for (const [peerId, session] of [...this.#peers]) {
      if (this.#sessions.get(session)?.get(peerId) === node) {
        this._leave(node, session, peerId);
      }
    }
  }
}

class LocalBusNode implements Bus {
  readonly node: string;
  readonly state: BusState = "up";
  readonly compat: CompatBus;
  #bus: LocalBus;
  #listener: BusListener | undefined;

  constructor(bus: LocalBus, node: string, compat: CompatBus) {
    this.#bus = bus;
    this.node = node;
    this.compat = compat;
  }

  attach(listener: BusListener): void {
    this.#listener = listener;
  }

  join(session: string, peerId: string, max: number): Promise<BusJoinResult> {
    return Promise.resolve(this.#bus._join(this.node, session, peerId, max));
  }

  leave(session: string, peerId: string): Promise<void> {
    this.#bus._leave(this.node, session, peerId);
    return Promise.resolve();
  }

  snapshot(session: string): Promise<BusSnapshot> {
    return Promise.resolve(this.#bus._snapshot(session));
  }

  deliver(node: string, delivery: BusDelivery): Promise<void> {
    this.#bus._deliver(node, delivery);
    return Promise.resolve();
  }

  park(session: string, peerId: string, token: string): Promise<void> {
    this.#bus._park(this.node, session, peerId, token);
    return Promise.resolve();
  }

  resume(session: string, token: string): Promise<BusResume | null> {
    return Promise.resolve(this.#bus._resume(this.node, session, token));
  }

  send(delivery: BusDelivery): Promise<boolean> {
    return Promise.resolve(this.#bus._send(delivery));
  }

  close(): Promise<void> {
    this.#bus._close(this.node);
    return Promise.resolve();
  }

  _event(event: BusEvent): void {
    queueMicrotask(() => this.#listener?.event(event));
  }

  _deliver(delivery: BusDelivery): void {
    queueMicrotask(() => this.#listener?.deliver(delivery));
  }
}
