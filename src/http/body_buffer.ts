/**
 * Where an upload's body goes as it arrives. Memory grows with the bytes
 * received, never with what the client announced: a resizable buffer that
 * grows as the bytes come (doubling, from a first size). Not a buffer of
 * the announced size from the start, though that is only address space
 * until written: V8 counts it as memory held at once, and 2,000 uploads
 * that announced 50 MB and sent a byte each kept it collecting garbage,
 * without end, on the thread that serves every request.
 *
 * Once a quarter of an announced length has arrived (the client is
 * sending it), the bytes move to one buffer of that length, which the rest
 * fills and which becomes the blob: at most a quarter of the blob is
 * copied, and the peak is about one and a quarter blobs, where copying the
 * whole body to a fixed buffer at its end held two. The pages of that
 * buffer that the body has not reached yet are address space only (the
 * system gives them zeroed on first write), so the upload budget charges
 * the bytes received, not the length: a body that sends a quarter of
 * itself and then trickles holds that quarter, and what V8 counts on its
 * word is at most four times what arrived.
 *
 * @module
 */

/** The resizable buffer's first size, for a body of unknown or large length. */
const FIRST_BYTES = 64 * 1024;

/** The part of an announced length received before it is allocated whole. */
const WHOLE_AFTER = 1 / 4;

/** One upload's growing body. */
export class BodyBuffer {
  #growing: ArrayBuffer;
  #whole: Uint8Array | null = null;
  #size = 0;
  readonly #capacity: number;
  readonly #announced: boolean;

  /**
   * @param capacity The most bytes the body may have.
   * @param announced Whether `capacity` is the body's own length (its
   * `Content-Length`), which it will fill.
   */
  constructor(capacity: number, announced: boolean) {
    this.#capacity = capacity;
    this.#announced = announced;
    this.#growing = new ArrayBuffer(0, { maxByteLength: capacity });
  }

  /**
   * Appends `chunk`, which fits (`size + chunk.length <= capacity`).
   *
   * @param chunk The bytes that arrived.
   */
  append(chunk: Uint8Array): void {
    const end = this.#size + chunk.length;
    if (
      this.#whole === null && this.#announced &&
      end >= this.#capacity * WHOLE_AFTER
    ) {
      this.#whole = new Uint8Array(this.#capacity);
      this.#whole.set(new Uint8Array(this.#growing, 0, this.#size));
      // Given back now, not at the next garbage collection.
      this.#growing = this.#growing.transfer(0);
    }
    if (this.#whole !== null) {
      this.#whole.set(chunk, this.#size);
    } else {
      if (end > this.#growing.byteLength) {
        this.#growing.resize(
          Math.min(
            this.#capacity,
            Math.max(end, 2 * this.#growing.byteLength, FIRST_BYTES),
          ),
        );
      }
      new Uint8Array(this.#growing, this.#size, chunk.length).set(chunk);
    }
    this.#size = end;
  }

  /** The bytes received so far (a view, valid until the next append). */
  received(): Uint8Array {
    return this.#whole?.subarray(0, this.#size) ??
      new Uint8Array(this.#growing, 0, this.#size);
  }

  /** The body, once it has all arrived, in a buffer of its own length. */
  take(): Uint8Array {
    if (this.#whole !== null) return this.#whole.subarray(0, this.#size);
    return new Uint8Array(this.#growing.transferToFixedLength(this.#size));
  }

  /** Gives the memory back now (the upload was refused). */
  drop(): void {
    this.#whole = null;
    this.#growing = this.#growing.transfer(0);
  }
}
