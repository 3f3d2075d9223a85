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
 * copied, where copying the whole body to a fixed buffer at its end held
 * two blobs. The pages of that buffer that the body has not reached yet
 * are address space only (the system gives them zeroed on first write), so
 * the upload budget charges the bytes received, not the length: a body
 * that sends a quarter of itself and then trickles holds that quarter, and
 * what V8 counts on its word is at most four times what arrived.
 *
 * A reader that can write in place (a byte stream's, see `readBody`) reads
 * the rest straight into that buffer ({@linkcode BodyBuffer.rest}), so no
 * chunk of it is allocated, and none is left for the garbage collector:
 * chunks waiting for it took as much memory again as the blob.
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

  /**
   * Where the next bytes may be read in place: the part of the buffer of
   * the announced length that the body has not reached, once that buffer
   * is allocated and until it is full; else null. A read that writes into
   * it moves it to a new `ArrayBuffer` (a BYOB read does), whose chunk goes
   * to {@linkcode BodyBuffer.filled}, whether the read brought bytes or
   * not.
   */
  rest(): Uint8Array | null {
    if (this.#whole === null || this.#size === this.#capacity) return null;
    return this.#whole.subarray(this.#size);
  }

  /**
   * Takes the buffer back from a read into {@linkcode BodyBuffer.rest} and
   * counts the bytes it wrote there: `chunk` is the read's result, a view
   * of the same memory (its bytes right after those received before).
   *
   * @param chunk What the read returned.
   */
  filled(chunk: Uint8Array): void {
    this.#whole = new Uint8Array(
      chunk.buffer as ArrayBuffer,
      0,
      this.#capacity,
    );
    this.#size += chunk.length;
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
    // Not when a read that was given the buffer still has it (it was cut
    // off): the buffer goes with the read.
    const whole = this.#whole?.buffer as ArrayBuffer | undefined;
    if (whole !== undefined && !whole.detached) whole.transfer(0);
    this.#whole = null;
    this.#growing = this.#growing.transfer(0);
  }
}
