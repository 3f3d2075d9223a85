/**
 * The log of one webxdc app instance: every update known to this page, in
 * the order it arrived here, each with its `serial` (1, 2, 3... gap-free,
 * never twice for one update). An update's global id is its author (the
 * base64url Ed25519 public key) and that author's sequence number; the log
 * keeps one update per id, the first it got.
 *
 * Bounded: an update's body at most {@linkcode MAX_UPDATE_BYTES}, the log
 * at most {@linkcode MAX_LOG_BYTES} and {@linkcode MAX_LOG_UPDATES}; past
 * them nothing is dropped, new updates are refused.
 *
 * @module
 */

/** `sendUpdateMaxSize`: the most bytes an update's JSON may have. */
export const MAX_UPDATE_BYTES = 128_000;
/** The most bytes of update bodies an instance's log holds. */
export const MAX_LOG_BYTES: number = 16 * 1024 * 1024;
/** The most updates an instance's log holds. */
export const MAX_LOG_UPDATES = 10_000;
/** An author: a base64url Ed25519 public key. */
export const AUTHOR: RegExp = /^[A-Za-z0-9_-]{43}$/;

/** An update as it travels and is stored: signed by its author. */
export interface SignedUpdate {
  /** The author (base64url public key). */
  a: string;
  /** The author's sequence number, from 1. */
  n: number;
  /** The update's JSON text (`payload`, `info`, `summary`...). */
  b: string;
  /** The author's Ed25519 signature, base64url; `""` while being signed. */
  s: string;
}

/** How {@linkcode UpdateLog.add} took an update. */
export type Added = "added" | "duplicate" | "full";

/** Per author, the highest sequence number held with none missing below. */
export type Summary = Record<string, number>;

const encoder = new TextEncoder();

/** The UTF-8 length of a text. */
export function byteLength(text: string): number {
  return encoder.encode(text).length;
}

/** The global id of an update. */
export function idOf(update: { a: string; n: number }): string {
  return `${update.a}/${update.n}`;
}

/** One instance's updates in arrival order; see the module's documentation. */
export class UpdateLog {
  #entries: SignedUpdate[] = [];
  #ids = new Map<string, SignedUpdate>();
  #bytes = 0;
  /** Per author, the sequence numbers held above the contiguous run. */
  #above = new Map<string, Set<number>>();
  #contiguous = new Map<string, number>();

  /** The serial of the last update (0 when empty). */
  get maxSerial(): number {
    return this.#entries.length;
  }

  /**
   * Why one more update of `bytes` cannot be added, or undefined.
   *
   * @param bytes The update body's length in bytes.
   */
  fullFor(bytes: number): string | undefined {
    if (this.#entries.length >= MAX_LOG_UPDATES) {
      return `the instance holds ${MAX_LOG_UPDATES} updates, its limit`;
    }
    if (this.#bytes + bytes > MAX_LOG_BYTES) {
      return `the instance holds ${MAX_LOG_BYTES} bytes of updates, its limit`;
    }
    return undefined;
  }

  /**
   * Adds an update at the next serial, unless the log has it or is full.
   *
   * @param update The update (checked by the caller: well formed, signed).
   * @returns Whether it was added.
   */
  add(update: SignedUpdate): Added {
    const id = idOf(update);
    if (this.#ids.has(id)) return "duplicate";
    const bytes = byteLength(update.b);
    if (this.fullFor(bytes) !== undefined) return "full";
    this.#ids.set(id, update);
    this.#entries.push(update);
    this.#bytes += bytes;
    this.#count(update.a, update.n);
    return "added";
  }

  /** Whether the log has the update with this id. */
  has(update: { a: string; n: number }): boolean {
    return this.#ids.has(idOf(update));
  }

  /**
   * The update at a serial.
   *
   * @param serial From 1 to {@linkcode maxSerial}.
   */
  at(serial: number): SignedUpdate | undefined {
    return this.#entries[serial - 1];
  }

  /** The next sequence number for an author: one past the highest held. */
  nextSequence(author: string): number {
    const above = this.#above.get(author);
    const top = above && above.size > 0 ? Math.max(...above) : 0;
    return Math.max(top, this.#contiguous.get(author) ?? 0) + 1;
  }

  /**
   * The highest sequence of an author held with none missing below it
   * (this page's own updates being signed counted).
   *
   * @param author The author.
   */
  heldUpTo(author: string): number {
    return this.#contiguous.get(author) ?? 0;
  }

  /**
   * Per author, the highest sequence held with none missing below it, and
   * signed: a summary claims only what {@linkcode missingFor} can send (this
   * page's own updates being signed are the top of its author's run).
   */
  summary(): Summary {
    const summary: Summary = {};
    for (const [author, top] of this.#contiguous) {
      let n = top;
      while (n > 0 && this.#ids.get(idOf({ a: author, n }))?.s === "") n--;
      if (n > 0) summary[author] = n;
    }
    return summary;
  }

  /**
   * Signed updates a peer with `summary` lacks, oldest first, at most
   * `maxBytes` of bodies (at least one) or `maxCount` of them.
   *
   * @returns The updates, and whether more are left.
   */
  missingFor(
    summary: Summary,
    maxBytes: number,
    maxCount: number,
  ): { updates: SignedUpdate[]; more: boolean } {
    const updates: SignedUpdate[] = [];
    let bytes = 0;
    for (const update of this.#entries) {
      if (update.s === "" || update.n <= (summary[update.a] ?? 0)) continue;
      const size = byteLength(update.b);
      if (
        updates.length >= maxCount ||
        (updates.length > 0 && bytes + size > maxBytes)
      ) return { updates, more: true };
      updates.push(update);
      bytes += size;
    }
    return { updates, more: false };
  }

  #count(author: string, n: number): void {
    let top = this.#contiguous.get(author) ?? 0;
    let above = this.#above.get(author);
    if (!above) this.#above.set(author, above = new Set());
    above.add(n);
    while (above.delete(top + 1)) top++;
    this.#contiguous.set(author, top);
  }
}
