/**
 * The cluster layer: sessions whose members sit on several brokers, kept in
 * step through a {@linkcode Bus}. Like socket.io's `ClusterAdapter`, the
 * cluster logic is here once (the order of joins and leaves, the view of the
 * other brokers' members, what to do when the bus goes away); a bus engine
 * (`LocalBus`, `RedisBus`) only stores, publishes and receives.
 *
 * A join is one call of the bus, which orders it and answers with the
 * session's members at its number; from then on the bus sends this broker
 * every change of the session while it holds a member there. The joiner is
 * admitted when its own `joined` event comes by, or by the snapshot that
 * holds it when the view is older (a session new to this broker, or one
 * whose changes it missed while it held no member there), so every member
 * of this broker sees changes in the bus's one order.
 *
 * @module
 */

import type { Logger } from "../_util/log.ts";
import type {
  Bus,
  BusDelivery,
  BusEvent,
  BusSnapshot,
  BusState,
} from "./bus/mod.ts";
import { type HeldSignal, HeldWindow } from "./bus/held.ts";
import {
  LocalMembership,
  type Member,
  type MembershipHost,
  type Session,
} from "./membership.ts";
import { frames, parseSignalData, type SignalData } from "./messages.ts";

// A session as seen through the bus: `seq` is the bus position the view is
// exact at (-1 until the first snapshot; events that arrive before it wait
// in `backlog`).
interface ClusterSession<M extends Member> extends Session<M> {
  seq: number;
  backlog: BusEvent[];
}

const LOST = "Signaling bus lost";
const DOWN = "Signaling bus down";

// Peers this broker parked lately, remembered (at most this many, the
// oldest forgotten first) so that a signal still on its way to it here is
// sent on to wherever the peer is now.
const MAX_RECENTLY_PARKED = 4_096;
// Signals that arrive for a peer whose resume is under way, kept per
// session until the bus answers (at most this many, the oldest dropped).
const MAX_EARLY = 64;

/** Options of {@linkcode ClusterMembership}. */
export interface ClusterOptions {
  /** The bus (this broker's handle on it). */
  bus: Bus;
  /** Peers in one session, across brokers. */
  maxPeers: number;
  /** The largest signal frame: signal data from the bus is held to it. */
  maxFrameBytes: number;
  /**
   * Bytes this broker's peers may put into the holds of parked peers within
   * a resume window (`signaling.maxHeldBytes`). @default {67108864}
   */
  maxHeldBytes?: number | undefined;
  /** Log sink. */
  logger?: Logger | undefined;
}

/** The sessions of one broker on a bus shared with other brokers. */
export class ClusterMembership<M extends Member>
  extends LocalMembership<M, ClusterSession<M>> {
  #bus: Bus;
  #maxFrameBytes: number;
  #held: HeldWindow;
  #logger: Logger | undefined;
  // Peers whose bus `leave` failed while the bus was down: retried once it
  // is back (session name by peer id).
  #unsentLeaves = new Map<string, string>();
  #recentlyParked = new Map<string, string>();
  // Sessions with resumes under way: how many, and what came meanwhile.
  #resuming = new Map<string, { count: number; early: BusDelivery[] }>();

  /**
   * Makes the membership and attaches it to the bus.
   *
   * @param host The hub.
   * @param options The bus and the limits.
   */
  constructor(host: MembershipHost<M>, options: ClusterOptions) {
    super(host, options.maxPeers);
    this.#bus = options.bus;
    this.#maxFrameBytes = options.maxFrameBytes;
    this.#held = new HeldWindow(options.maxHeldBytes);
    this.maxDataBytes = options.maxFrameBytes;
    this.#logger = options.logger;
    this.#bus.attach({
      event: (event) => this.#onEvent(event),
      deliver: (delivery) => this.#onDelivery(delivery),
      state: (state, lost) => this.#onState(state, lost),
    });
  }

  /** The bus's state. */
  get state(): BusState {
    return this.#bus.state;
  }

  /**
   * Asks the bus to order the join (or, with a token, to move the parked
   * peer here); the answer comes through the host.
   */
  override join(member: M, name: string, token?: string): void {
    const bus = this.#bus;
    if (bus.state !== "up") {
      this.host.drop(member, DOWN);
      return;
    }
    if (token !== undefined) {
      this.#resume(member, name, token);
      return;
    }
    const session = this.enter(member, name);
    const id = member.id!;
    session.pending.set(id, member);
    bus.join(name, id, this.maxPeers).then((result) => {
      if (member.id !== id || member.session !== name) {
        // It left while the bus worked.
        if (result.ok) this.#busLeave(name, id);
        return;
      }
      // Admitted already, by its event.
      if (member.admitted) return;
      if (result.ok) {
        this.#reconcile(session, result.snapshot);
        return;
      }
      this.#unpend(member, session);
      if (result.reason === "full") this.host.full(member, name);
      else if (result.reason === "taken") this.join(member, name);
      else this.host.drop(member, LOST);
    }, (error) => {
      this.#logger?.("warn", "Cannot join through the signaling bus", {
        error: String((error as Error)?.message ?? error),
      });
      if (member.id === id && member.session === name) {
        this.host.drop(member, DOWN);
      }
    });
  }

  /** Nothing is forgotten here: parked peers live on the bus. */
  override shutdown(): void {
    this.#recentlyParked.clear();
  }

  /** A session with no member of this broker is forgotten. */
  protected override keeps(): boolean {
    return false;
  }

  /**
   * Parks the peer on the bus: the others keep it, signals to it are held
   * there. Until this broker hears otherwise, it sends to it through the
   * bus, which knows where it is.
   */
  protected override park(
    session: ClusterSession<M>,
    id: string,
    token: string,
  ): void {
    this.members.delete(id);
    this.#recentlyParked.set(id, session.name);
    if (this.#recentlyParked.size > MAX_RECENTLY_PARKED) {
      this.#recentlyParked.delete(this.#recentlyParked.keys().next().value!);
    }
    session.remote.set(id, "");
    this.dropIfEmpty(session);
    this.#bus.park(session.name, id, token).catch((error) => {
      this.#logger?.("warn", "Cannot park a peer on the signaling bus", {
        error: String((error as Error)?.message ?? error),
      });
    });
  }

  /** A new session, not yet synced with the bus. */
  protected override createSession(name: string): ClusterSession<M> {
    return {
      name,
      peers: new Map(),
      remote: new Map(),
      pending: new Map(),
      seq: -1,
      backlog: [],
    };
  }

  /** Tells the bus that a member of this broker left. */
  protected override left(session: ClusterSession<M>, id: string): void {
    this.#busLeave(session.name, id);
  }

  /**
   * Sends signal data to the broker that holds `to` (or into its hold while
   * it is parked): only `from` and the data travel; that broker checks them
   * and builds the frame.
   */
  protected override forward(
    session: ClusterSession<M>,
    from: string,
    to: string,
    data: SignalData,
  ): boolean {
    if (!session.remote.has(to)) return false;

    const delivery = {
      session: session.name,
      to,
      from,
      data: JSON.stringify(data),
    };
    // Routed by the bus, which knows where the peer is now (this view may
    // be behind a move): to its broker, or held while it is parked. One
    // sender's signals go in one order through one connection.
    this.#bus.send(delivery, this.#held).catch((error) => {
      this.#logger?.("debug", "Cannot relay through the signaling bus", {
        error: String((error as Error)?.message ?? error),
      });
    });
    return true;
  }

  // A pending joiner goes back to not joined.
  #unpend(member: M, session: ClusterSession<M>): void {
    session.pending.delete(member.id!);
    this.members.delete(member.id!);
    member.id = null;
    member.session = null;
    member.admitted = false;
    this.dropIfEmpty(session);
  }

  // The first view of a session on this broker: the snapshot, then the
  // events that came in meanwhile.
  #sync(session: ClusterSession<M>, snapshot: BusSnapshot): void {
    session.seq = snapshot.seq;
    const me = this.#bus.node;
    const admitted: M[] = [];
    for (const [id, node] of snapshot.members) {
      if (node !== me) session.remote.set(id, node);
      else {
        const joiner = session.pending.get(id);
        if (joiner !== undefined) admitted.push(joiner);
      }
    }
    for (const joiner of admitted) this.admit(joiner, session);
    for (const event of session.backlog.splice(0)) {
      this.#apply(session, event);
    }
  }

  #onEvent(event: BusEvent): void {
    const session = this.byName.get(event.session);
    if (session === undefined) return;
    if (session.seq < 0) session.backlog.push(event);
    else this.#apply(session, event);
  }

  #apply(session: ClusterSession<M>, event: BusEvent): void {
    if (event.seq <= session.seq) return;
    session.seq = event.seq;
    const mine = event.node === this.#bus.node;
    if (event.kind === "moved") {
      // A move changes no membership: only where signals to the peer go.
      // One to this broker is taken in by the bus's answer to its resume.
      if (!mine && session.remote.has(event.peerId)) {
        session.remote.set(event.peerId, event.node);
      }
      return;
    }
    if (event.kind === "joined") {
      if (mine) {
        const joiner = session.pending.get(event.peerId);
        if (joiner !== undefined) this.admit(joiner, session);
      } else if (!session.remote.has(event.peerId)) {
        session.remote.set(event.peerId, event.node);
        this.notify(session, frames.peer("peer-joined", event.peerId));
      }
    } else if (session.remote.delete(event.peerId)) {
      this.notify(session, frames.peer("peer-left", event.peerId));
    } else if (mine) {
      // The bus dropped a peer this broker still holds (it was taken for
      // dead): it is no longer anyone's peer, so let it go.
      const local = session.peers.get(event.peerId);
      if (local !== undefined) this.host.drop(local, LOST);
    }
  }

  // A signal from another broker: delivered only to a joined member of this
  // broker in the named session, from a member the bus says another broker
  // holds there, with data that is signal data within the frame limit. The
  // frame is built here; nothing else from the bus reaches a socket.
  #onDelivery(delivery: BusDelivery): void {
    const target = this.members.get(delivery.to);
    if (target === undefined || !target.admitted) {
      this.#early(delivery);
      return;
    }
    if (target.session !== delivery.session) return;
    const session = this.byName.get(delivery.session);
    const from = delivery.from;
    if (session === undefined || from === delivery.to) return;
    if (!session.remote.has(from) && !session.peers.has(from)) return;
    const data = parseSignalData(
      delivery.data,
      this.#maxFrameBytes,
      delivery.session,
    );
    if (data === null) return;
    this.host.send(target, frames.signal(delivery.from, data));
  }

  // Signal data for no joined member here: a peer this broker parked lately
  // (sent on to wherever it is now, through the bus), or one whose resume
  // here is under way (kept until the bus answers).
  #early(delivery: BusDelivery): void {
    if (this.#recentlyParked.get(delivery.to) === delivery.session) {
      this.#bus.send(delivery, this.#held).catch(() => {});
      return;
    }
    const resuming = this.#resuming.get(delivery.session);
    if (resuming === undefined) return;
    resuming.early.push(delivery);
    if (resuming.early.length > MAX_EARLY) resuming.early.shift();
  }

  // A join with a token: the bus moves the parked peer here, with what it
  // held; an unknown or expired token joins as new.
  #resume(member: M, name: string, token: string): void {
    // Joining: a second join is refused meanwhile.
    member.session = name;
    const resuming = this.#resuming.get(name) ?? { count: 0, early: [] };
    resuming.count++;
    this.#resuming.set(name, resuming);
    this.#bus.resume(name, token).then((moved) => {
      const early = this.#resumed(name, resuming);
      if (member.session !== name || member.id !== null) {
        // Its socket went away meanwhile.
        if (moved !== null) this.#busLeave(name, moved.peerId);
        return;
      }
      member.session = null;
      if (moved === null) return this.join(member, name);
      let session = this.byName.get(name);
      if (session === undefined) {
        session = this.createSession(name);
        this.byName.set(name, session);
      }
      member.id = moved.peerId;
      member.session = name;
      this.#reconcile(session, moved.snapshot);
      const later: HeldSignal[] = early.filter((d) => d.to === moved.peerId);
      this.readmit(member, session, { held: moved.held, later });
    }, (error) => {
      this.#resumed(name, resuming);
      this.#logger?.("warn", "Cannot resume through the signaling bus", {
        error: String((error as Error)?.message ?? error),
      });
      if (member.session === name && member.id === null) {
        member.session = null;
        this.host.drop(member, DOWN);
      }
    });
  }

  // One resume in `name` is answered: what came meanwhile.
  #resumed(
    name: string,
    resuming: { count: number; early: BusDelivery[] },
  ): BusDelivery[] {
    if (--resuming.count === 0) this.#resuming.delete(name);
    return resuming.early;
  }

  #onState(state: BusState, lost: boolean): void {
    this.#logger?.(state === "up" ? "info" : "warn", `Signaling bus ${state}`, {
      lost,
    });
    if (state !== "up") return;
    if (lost) {
      // This broker's peers are no longer on the bus: close them so their
      // clients join again, through this broker or another.
      this.#unsentLeaves.clear();
      for (const session of [...this.byName.values()]) {
        for (
          const member of [
            ...session.peers.values(),
            ...session.pending.values(),
          ]
        ) {
          this.host.drop(member, LOST);
        }
      }
      return;
    }
    for (const [id, name] of [...this.#unsentLeaves]) {
      this.#unsentLeaves.delete(id);
      this.#busLeave(name, id);
    }
    for (const session of this.byName.values()) this.#resync(session);
  }

  // After the bus came back, events may have been lost: compare the view
  // with a fresh snapshot and tell the members what changed.
  #resync(session: ClusterSession<M>): void {
    this.#bus.snapshot(session.name).then((snapshot) => {
      if (this.byName.get(session.name) === session) {
        this.#reconcile(session, snapshot);
      }
    }, () => {});
  }

  // Brings the view up to a snapshot newer than it: the first view of the
  // session, or one that missed changes (this broker held no member there
  // for a while, or the bus was down). Other brokers' members that came or
  // went are announced, then joiners of this broker in it are admitted, and
  // members of this broker the bus no longer has are let go. Events up to
  // the snapshot that arrive later are ignored by their number.
  #reconcile(session: ClusterSession<M>, snapshot: BusSnapshot): void {
    if (session.seq < 0) {
      this.#sync(session, snapshot);
      return;
    }
    if (snapshot.seq <= session.seq) return;
    session.seq = snapshot.seq;
    const me = this.#bus.node;
    for (const id of [...session.remote.keys()]) {
      if (snapshot.members.has(id)) continue;
      session.remote.delete(id);
      this.notify(session, frames.peer("peer-left", id));
    }
    const joiners: M[] = [];
    for (const [id, node] of snapshot.members) {
      if (node === me) {
        const joiner = session.pending.get(id);
        if (joiner !== undefined) joiners.push(joiner);
      } else if (!session.remote.has(id)) {
        session.remote.set(id, node);
        this.notify(session, frames.peer("peer-joined", id));
      }
    }
    for (const [id, member] of [...session.peers]) {
      if (!snapshot.members.has(id)) this.host.drop(member, LOST);
    }
    for (const joiner of joiners) this.admit(joiner, session);
  }

  #busLeave(name: string, id: string): void {
    this.#bus.leave(name, id).catch(() => {
      this.#unsentLeaves.set(id, name);
    });
  }
}
