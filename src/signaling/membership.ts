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
import { frames, type SignalData } from "./messages.ts";

/** A socket of this broker as the membership sees it. */
export interface Member {
  /** Its peer id from its join on, or null before. */
  id: string | null;
  /** The session it is in or joining, or null. */
  session: string | null;
  /** Whether its join was granted (`joined` sent). */
  admitted: boolean;
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
   * Adds `member` to `session`. The answer comes through the host, at once
   * or later: `admitted`, `full`, or `drop`.
   */
  join(member: M, session: string): void;
  /** Takes `member` out of its session; the others are told. Idempotent. */
  leave(member: M): void;
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

  /**
   * Makes an empty membership.
   *
   * @param host The hub.
   * @param maxPeers Peers in one session.
   */
  constructor(host: MembershipHost<M>, maxPeers: number) {
    this.host = host;
    this.maxPeers = maxPeers;
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
  join(member: M, name: string): void {
    const held = this.byName.get(name)?.peers.size ?? 0;
    if (held >= this.maxPeers) {
      this.host.full(member, name);
      return;
    }
    this.admit(member, this.enter(member, name));
  }

  /** Takes `member` out of its session; the others are told. */
  leave(member: M): void {
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
    this.left(session, id);
    if (session.peers.size === 0) this.dropIfEmpty(session);
    else this.notify(session, frames.peer("peer-left", id));
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
    while (this.members.has(id)) id = randomAlphanumeric(PEER_ID_LENGTH);
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
    this.host.admitted(member, others);
  }

  /** Sends `text` to every joined member of this broker in `session`. */
  protected notify(session: S, text: string): void {
    for (const other of session.peers.values()) this.host.send(other, text);
  }

  /** Forgets `session` once no member of this broker is in it. */
  protected dropIfEmpty(session: S): boolean {
    if (session.peers.size > 0 || session.pending.size > 0) return false;
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

  /** Hook: a joined member of this broker left `session`. */
  protected left(_session: S, _id: string): void {}

  /** Hook: relays to a member another broker holds; none here. */
  protected forward(
    _session: S,
    _from: string,
    _to: string,
    _data: SignalData,
  ): boolean {
    return false;
  }
}
