/**
 * Who is in which session: the {@linkcode Membership} the hub talks to, and
 * {@linkcode LocalMembership}, the sessions of one broker. With a bus,
 * `ClusterMembership` (cluster.ts) extends it, as socket.io's
 * `ClusterAdapter` extends its in-memory adapter: the bookkeeping and the
 * admission of a joiner are written here once, and the cluster layer only
 * decides when a join is granted and adds the members other brokers hold.
 *
 * @module
 */

import { PEER_ID_LENGTH, randomAlphanumeric } from "../_util/id.ts";
import { type Held, MAX_HELD_BYTES } from "./bus/held.ts";
import { ParkedPeers } from "./bus/parked.ts";
import { frames, parseSignalData, type SignalData } from "./messages.ts";

/** The length of a resume token (see held.ts). */
const TOKEN_LENGTH = 32;

/** A socket of this broker as the membership sees it. */
export interface Member {
  /** Its peer id from its join on, or null before. */
  id: string | null;
  /** The session it is in or joining, or null. */
  session: string | null;
  /** Whether its join was granted (`joined` sent). */
  admitted: boolean;
  /** Its resume token from its admission on (a fresh one each time). */
  resume: string | null;
}

/** What a membership asks of the hub that owns the sockets. */
export interface MembershipHost<M extends Member> {
  /** Sends one frame to a member of this broker. */
  send(member: M, text: string): void;
  /** `member` is in the session: send it `joined` with the `others`. */
  admitted(member: M, others: string[]): void;
  /** `member` cannot join `session`: it is full; `member` is not joined. */
  full(member: M, session: string): void;
  /**
   * `member` must go (the bus is down, or lost this broker's peers): close
   * its socket with 1013 (try again later) and `reason`.
   */
  drop(member: M, reason: string): void;
}

/** The sessions, as the hub uses them: one join path, bus or not. */
export interface Membership<M extends Member> {
  /** Sessions with at least one member of this broker, joined or joining. */
  readonly sessions: number;
  /** Members of this broker, joined or joining. */
  readonly peers: number;
  /**
   * Adds `member` to `session`, or with `token` puts it back in the place
   * it left (its id, held signals) when the token is of a peer parked in
   * `session`. The answer comes through the host, at once or later:
   * `admitted`, `full`, or `drop`.
   */
  join(member: M, session: string, token?: string): void;
  /**
   * Takes `member` out of its session; the others are told. With `park`,
   * a joined member keeps its place for 30 s (`RESUME_MS`) instead: the
   * others are told nothing, signals to it are held, and its token resumes
   * it. Idempotent.
   */
  leave(member: M, park?: boolean): void;
  /** Forgets what outlives the sockets (parked peers): the broker stops. */
  shutdown(): void;
  /**
   * Relays signal data from joined `from` to `to`.
   *
   * @returns False when `to` is not another member of `from`'s session.
   */
  signal(from: M, to: string, data: SignalData): boolean;
}

/** A session as this broker sees it. */
export interface Session<M extends Member> {
  /** Its name. */
  readonly name: string;
  /** Joined members of this broker, by id. */
  readonly peers: Map<string, M>;
  /** Joined members other brokers hold: id to broker (empty without a bus). */
  readonly remote: Map<string, string>;
  /** Members of this broker whose join waits (empty without a bus). */
  readonly pending: Map<string, M>;
}

/** What a resumed member is handed: what was held, checked again here. */
export interface Handover {
  /** The held signals and the senders of dropped ones. */
  held: Held;
  /** Signals that came meanwhile, to deliver after the held ones. */
  later?: Held["signals"];
}

/**
 * The sessions of one broker, with no bus: a join is granted or refused at
 * once.
 */
export class LocalMembership<
  M extends Member,
  S extends Session<M> = Session<M>,
> implements Membership<M> {
  /** The hub. */
  protected readonly host: MembershipHost<M>;
  /** The largest session. */
  protected readonly maxPeers: number;
  /** Sessions with a member of this broker, joined or joining. */
  protected readonly byName: Map<string, S> = new Map();
  /** Members of this broker, joined or joining, by id. */
  protected readonly members: Map<string, M> = new Map();
  /** The largest signal data a held signal may carry. */
  protected maxDataBytes: number = MAX_HELD_BYTES;
  #parked: ParkedPeers;

  /**
   * Makes an empty membership.
   *
   * @param host The hub.
   * @param maxPeers Peers in one session.
   * @param maxHeldBytes Bytes held for all its parked peers together.
   */
  constructor(
    host: MembershipHost<M>,
    maxPeers: number,
    maxHeldBytes?: number,
  ) {
    this.host = host;
    this.maxPeers = maxPeers;
    // Its window is over: it leaves, and the others are told.
    this.#parked = new ParkedPeers(
      (id, name) => this.#expired(id, name),
      maxHeldBytes,
    );
  }

  /** Sessions with at least one member of this broker. */
  get sessions(): number {
    return this.byName.size;
  }

  /** Members of this broker, joined or joining. */
  get peers(): number {
    return this.members.size;
  }

  /** Grants the join at once unless the session is full. */
  join(member: M, name: string, token?: string): void {
    if (token !== undefined && this.#resume(member, name, token)) return;
    const session = this.byName.get(name);
    const held = (session?.peers.size ?? 0) + (session?.remote.size ?? 0);
    if (held >= this.maxPeers) {
      this.host.full(member, name);
      return;
    }
    this.admit(member, this.enter(member, name));
  }

  /** Takes `member` out of its session; the others are told, unless parked. */
  leave(member: M, park = false): void {
    const id = member.id;
    const session = member.session === null
      ? undefined
      : this.byName.get(member.session);
    member.session = null;
    if (id === null || session === undefined) return;
    this.members.delete(id);
    if (!member.admitted) {
      session.pending.delete(id);
      this.dropIfEmpty(session);
      return;
    }
    member.admitted = false;
    session.peers.delete(id);
    if (park && member.resume !== null) {
      this.park(session, id, member.resume);
      return;
    }
    this.left(session, id);
    if (session.peers.size === 0) this.dropIfEmpty(session);
    else this.notify(session, frames.peer("peer-left", id));
  }

  /** Forgets the parked peers, and their timers. */
  shutdown(): void {
    this.#parked.clear();
  }

  /** Sends to a member of this broker, or (with a bus) of another. */
  signal(from: M, to: string, data: SignalData): boolean {
    const session = this.byName.get(from.session!);
    if (session === undefined || to === from.id) return false;
    const target = session.peers.get(to);
    if (target !== undefined) {
      this.host.send(target, frames.signal(from.id!, data));
      return true;
    }
    return this.forward(session, from.id!, to, data);
  }

  /**
   * Gives `member` a fresh id in session `name` (made if new), not yet
   * admitted.
   */
  protected enter(member: M, name: string): S {
    let session = this.byName.get(name);
    if (session === undefined) {
      session = this.createSession(name);
      this.byName.set(name, session);
    }
    let id = randomAlphanumeric(PEER_ID_LENGTH);
    while (this.members.has(id) || this.#parked.has(id)) {
      id = randomAlphanumeric(PEER_ID_LENGTH);
    }
    member.id = id;
    member.session = name;
    member.admitted = false;
    this.members.set(id, member);
    return session;
  }

  /**
   * The one admission: the others are told, then the joiner gets `joined`
   * with every member before it (this broker's and the others').
   */
  protected admit(member: M, session: S): void {
    const id = member.id!;
    session.pending.delete(id);
    const others = [...session.peers.keys(), ...session.remote.keys()];
    this.notify(session, frames.peer("peer-joined", id));
    session.peers.set(id, member);
    member.admitted = true;
    member.resume = randomAlphanumeric(TOKEN_LENGTH);
    this.host.admitted(member, others);
  }

  /**
   * Admits a member that resumed its place: nobody is told, and it gets
   * `joined`, then the signals held for it (from members only, checked
   * again), then `restart-ice` naming the members whose signals were
   * dropped, if any.
   */
  protected readmit(member: M, session: S, handover: Handover): void {
    const id = member.id!;
    session.remote.delete(id);
    session.peers.set(id, member);
    this.members.set(id, member);
    member.admitted = true;
    member.resume = randomAlphanumeric(TOKEN_LENGTH);
    const isMember = (from: string) =>
      from !== id && (session.peers.has(from) || session.remote.has(from));
    const others = [...session.peers.keys(), ...session.remote.keys()]
      .filter((other) => other !== id);
    this.host.admitted(member, others);
    const { held, later = [] } = handover;
    for (const signal of [...held.signals, ...later]) {
      if (!isMember(signal.from)) continue;
      const data = parseSignalData(
        signal.data,
        this.maxDataBytes,
        session.name,
      );
      if (data !== null) {
        this.host.send(member, frames.signal(signal.from, data));
      }
    }
    const dropped = held.dropped.filter(isMember);
    if (dropped.length > 0) this.host.send(member, frames.restartIce(dropped));
  }

  /**
   * Hook: keeps joined `id` of `session` parked under `token`. Without a bus
   * its place is kept here: it stays in `remote` with no broker ("").
   */
  protected park(session: S, id: string, token: string): void {
    this.members.delete(id);
    session.remote.set(id, "");
    this.#parked.park(id, session.name, token);
  }

  // A join with a token of a peer parked here in `name`: its place back.
  #resume(member: M, name: string, token: string): boolean {
    const session = this.byName.get(name);
    const resumed = session && this.#parked.resume(name, token);
    if (!resumed) return false;
    member.id = resumed.peerId;
    member.session = name;
    this.readmit(member, session!, { held: resumed.held });
    return true;
  }

  #expired(id: string, name: string): void {
    const session = this.byName.get(name);
    if (session === undefined || !session.remote.delete(id)) return;
    if (!this.dropIfEmpty(session)) {
      this.notify(session, frames.peer("peer-left", id));
    }
  }

  /** Sends `text` to every joined member of this broker in `session`. */
  protected notify(session: S, text: string): void {
    for (const other of session.peers.values()) this.host.send(other, text);
  }

  /** Forgets `session` once no member of this broker is in it. */
  protected dropIfEmpty(session: S): boolean {
    if (session.peers.size > 0 || session.pending.size > 0) return false;
    if (this.keeps(session)) return false;
    if (this.byName.get(session.name) !== session) return false;
    this.byName.delete(session.name);
    return true;
  }

  /** A new, empty session. */
  protected createSession(name: string): S {
    return {
      name,
      peers: new Map(),
      remote: new Map(),
      pending: new Map(),
    } as Session<M> as S;
  }

  /**
   * Hook: whether `session` is kept with no member of this broker: without
   * a bus, while a parked member is in it.
   */
  protected keeps(session: S): boolean {
    return session.remote.size > 0;
  }

  /** Hook: a joined member of this broker left `session`. */
  protected left(_session: S, _id: string): void {}

  /** Hook: relays to a member another broker holds, or holds it for a parked one. */
  protected forward(
    session: S,
    from: string,
    to: string,
    data: SignalData,
  ): boolean {
    return this.#parked.hold(session.name, to, from, JSON.stringify(data));
  }
}
