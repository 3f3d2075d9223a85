/**
 * Where a webxdc pod keeps its instances' logs and its author key: in
 * IndexedDB on a pod's own origin (database `pod-webxdc`: updates by
 * instance, author and sequence, with their arrival order; the key pair,
 * its private key not extractable), so that a reload replays the log
 * before any network. Where there is no storage (a pod on the broker's
 * host runs in an opaque origin), in memory: the log lives as long as
 * the page.
 *
 * @module
 */

import type { SignedUpdate } from "./webxdc_log.ts";
import { type Author, authorId, newAuthor } from "./webxdc_sign.ts";

/** A place for logs and the author key. */
export interface Store {
  /** Whether it survives a reload. */
  readonly persistent: boolean;
  /** The author key (made on first use). */
  author(): Promise<Author>;
  /** An instance's updates, in the order they arrived. */
  load(instance: string): Promise<SignedUpdate[]>;
  /** Adds an update to an instance's log. */
  save(instance: string, update: SignedUpdate): Promise<void>;
}

/** A store that keeps nothing: a page without storage. */
export class MemoryStore implements Store {
  /** Not persistent. */
  readonly persistent = false;
  #author?: Promise<Author>;

  /** A fresh author for the page's life. */
  author(): Promise<Author> {
    return this.#author ??= newAuthor();
  }

  /** Nothing was kept. */
  load(): Promise<SignedUpdate[]> {
    return Promise.resolve([]);
  }

  /** Keeps nothing. */
  save(): Promise<void> {
    return Promise.resolve();
  }
}

const DATABASE = "pod-webxdc";
const UPDATES = "updates";
const KEYS = "keys";

/** A stored update: the instance, the update, and when it arrived. */
interface Row extends SignedUpdate {
  i: string;
  at: number;
}

/** Logs and key in IndexedDB. */
export class IndexedStore implements Store {
  /** Persistent. */
  readonly persistent = true;
  #db: IDBDatabase;
  #clock = 0;

  private constructor(db: IDBDatabase) {
    this.#db = db;
  }

  /**
   * Opens the database; undefined when this page has no IndexedDB (an
   * opaque origin, a browser that refuses it).
   */
  static async open(): Promise<IndexedStore | undefined> {
    try {
      const db = await request(indexedDB.open(DATABASE, 1), (open) => {
        const db = open.result;
        const updates = db.createObjectStore(UPDATES, {
          keyPath: ["i", "a", "n"],
        });
        updates.createIndex("arrival", ["i", "at"]);
        db.createObjectStore(KEYS);
      });
      return new IndexedStore(db);
    } catch {
      return undefined;
    }
  }

  /** The key pair kept under `author`, made and kept on first use. */
  async author(): Promise<Author> {
    const kept = await request(
      this.#db.transaction(KEYS).objectStore(KEYS).get("author"),
    ) as CryptoKeyPair | undefined;
    if (kept) return { keys: kept, id: await authorId(kept) };
    const made = await newAuthor();
    try {
      await done(
        this.#db.transaction(KEYS, "readwrite"),
        (tx) => tx.objectStore(KEYS).add(made.keys, "author"),
      );
      return made;
    } catch {
      return await this.author(); // another tab made one first
    }
  }

  /** The instance's updates, by arrival. */
  async load(instance: string): Promise<SignedUpdate[]> {
    const range = IDBKeyRange.bound([instance, -Infinity], [
      instance,
      Infinity,
    ]);
    const rows = await request(
      this.#db.transaction(UPDATES).objectStore(UPDATES).index("arrival")
        .getAll(range),
    ) as Row[];
    for (const row of rows) this.#clock = Math.max(this.#clock, row.at);
    return rows.map(({ a, n, b, s }) => ({ a, n, b, s }));
  }

  /** Adds an update after those before it. */
  async save(instance: string, update: SignedUpdate): Promise<void> {
    this.#clock = Math.max(this.#clock + 1, Date.now() * 1000);
    const row: Row = { ...update, i: instance, at: this.#clock };
    await done(
      this.#db.transaction(UPDATES, "readwrite"),
      (tx) => tx.objectStore(UPDATES).put(row),
    );
  }
}

/** The store of this page: IndexedDB when it has it, else memory. */
export async function openStore(): Promise<Store> {
  return await IndexedStore.open() ?? new MemoryStore();
}

/** A request's result. */
function request<T>(
  req: IDBRequest<T>,
  upgrade?: (req: IDBOpenDBRequest) => void,
): Promise<T> {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
    if (upgrade) {
      const open = req as unknown as IDBOpenDBRequest;
      open.onupgradeneeded = () => upgrade(open);
    }
  });
}

/** Runs `work` in a transaction and waits for it to commit. */
function done(
  tx: IDBTransaction,
  work: (tx: IDBTransaction) => void,
): Promise<void> {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onerror = () => reject(tx.error);
    tx.onabort = () => reject(tx.error);
    work(tx);
  });
}
