/**
 * Receiving an upload's body, for `POST /pods` and `PUT /:id` alike: the
 * size limit (from Content-Length, then while the body streams in), the
 * media type, the upload budget, the progress deadline and the SHA-256
 * computed as the bytes arrive.
 *
 * @module
 */

import { createSha256 } from "../_util/hash.ts";
import type { HeldRequest } from "../_util/held_body.ts";
import { BrokerError } from "./problem.ts";
import type { UploadBudget, UploadReservation } from "./upload_budget.ts";
import { BodyBuffer } from "./body_buffer.ts";
import { ContentScan, type ScannedContent } from "../pod/content_scan.ts";
import {
  MIN_UPLOAD_BYTES_PER_SECOND,
  type PaceLimit,
  UPLOAD_DEADLINE_WINDOWS,
  UploadPace,
} from "./upload_pace.ts";

export { MIN_UPLOAD_BYTES_PER_SECOND };

/** What receiving a body needs: the limits and the budget. */
export interface BodyLimits {
  /** Upload limit in bytes. */
  maxBlobBytes: number;
  /** The broker-wide budget of upload bytes in flight. */
  budget: UploadBudget;
  /** Longest wait for the next body byte, and the minimum rate's window. */
  uploadTimeoutMs: number;
  /** The client's address, for the budget's per-address cap. */
  address?: string | undefined;
}

/** A received body: its bytes, their SHA-256, and its hold on the budget. */
export interface ReceivedBody {
  /** The body's bytes. */
  blob: Uint8Array;
  /** Their SHA-256, computed as they arrived. */
  sha256: Uint8Array;
  /**
   * For a body read in chunks, the signed content's digest found as they
   * arrived (see `ContentScan`); null otherwise.
   */
  content: ScannedContent | null;
  /** Gives the budget back; call once the pod is stored or refused. */
  release(): void;
}

/**
 * Receives a pod body, for `POST /pods` and `PUT /:id` alike: the size
 * limit (from Content-Length, then while the body streams in), the media
 * type, the upload budget (held until the caller releases it) and the
 * progress deadline.
 *
 * @param request The request with the pod as its body.
 * @param context Limits and budget.
 * @returns The bytes, their SHA-256 and the budget's release.
 * @throws {BrokerError} For every refusal.
 */
export async function receiveBody(
  request: HeldRequest,
  context: BodyLimits,
): Promise<ReceivedBody> {
  const { maxBlobBytes } = context;
  const length = request.headers.get("Content-Length");
  if (length !== null && Number(length) > maxBlobBytes) {
    throw tooLarge(`Content-Length ${length}`, maxBlobBytes);
  }
  const mediaType = request.headers.get("Content-Type")?.split(";")[0]?.trim()
    .toLowerCase();
  if (mediaType !== "text/html") {
    throw new BrokerError(
      "unsupported_media_type",
      `Cannot accept '${
        mediaType ?? "no content type"
      }': a pod is sent as text/html`,
    );
  }
  const known = length !== null && /^\d+$/.test(length);
  const announced = known ? Number(length) : maxBlobBytes;
  const whole = known && announced <= WHOLE_BODY_BYTES;
  // The hold starts empty: a request head, or a body's announced length,
  // holds nothing of the budget. It grows with the bytes that arrive: a
  // small body's once it has arrived whole, a larger one's chunk by chunk
  // (see readBody).
  if (context.budget.isAddressFull(context.address)) {
    throw busy("from your address");
  }
  const reservation = context.budget.reserve(0, context.address);
  if (reservation === null) throw busy();
  try {
    const { blob, sha256, content } = whole
      ? {
        ...await readSmallBody(request, context.uploadTimeoutMs, reservation),
        content: null,
      }
      : await readBody(
        request.heldBody?.stream() ?? request.body,
        announced,
        known,
        context,
        reservation,
        request.heldBody !== undefined,
      );
    return { blob, sha256, content, release: () => reservation.release() };
  } catch (error) {
    reservation.release();
    throw error;
  }
}

/**
 * Bodies announced at this size or less are read whole (`arrayBuffer()`,
 * the runtime's fastest path, or the `node:http` adapter's own read, which
 * gathers the chunks as they come and allocates once at the end); larger
 * or chunked ones chunk by chunk. While such a body arrives, the runtime
 * holds what was sent and no more; the budget takes it once it is whole.
 */
const WHOLE_BODY_BYTES = 64 * 1024;

/**
 * Reads a small body with a known length whole, failing with
 * `upload_timeout` when it has not all arrived after `ms` (for a body this
 * small, the same as a pause of `ms`), and with `busy` when, whole, it no
 * longer fits the budget. HTTP framing ends the body at its
 * `Content-Length`, which is within the limit.
 */
async function readSmallBody(
  request: HeldRequest,
  ms: number,
  reservation: UploadReservation,
): Promise<{ blob: Uint8Array; sha256: Uint8Array }> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const reading = request.heldBody?.whole() ??
    request.arrayBuffer().then((bytes) => new Uint8Array(bytes));
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() =>
      reject(
        new BrokerError(
          "upload_timeout",
          `Cannot accept the pod: it had not all arrived after ${ms} ms`,
        ),
      ), ms);
  });
  try {
    const blob = await Promise.race([reading, timeout]);
    if (!reservation.grow(blob.length)) throw busy();
    return {
      blob,
      sha256: new Uint8Array(createSha256().update(blob).digest()),
    };
  } catch (error) {
    // The read left behind settles when the connection goes.
    reading.catch(() => {});
    throw aborted(error);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Reads a body of at most `maxBlobBytes`, cutting it off at one byte more,
 * and failing with `upload_timeout` when it falls behind its
 * {@linkcode UploadPace} (no byte for `uploadTimeoutMs`, less than
 * {@linkcode MIN_UPLOAD_BYTES_PER_SECOND} over any such window, or not
 * whole after {@linkcode UPLOAD_DEADLINE_WINDOWS} of them), and with `busy`
 * when the bytes received no longer fit the budget. Memory grows with the
 * bytes received, never with what the client announced (see
 * {@linkcode BodyBuffer}); the budget holds what was received. The SHA-256
 * of the blob is computed as the chunks arrive, while the network is the
 * bottleneck, instead of in a second pass; so is the digest the manifest
 * signs (every byte but the payload, {@linkcode ContentScan}).
 *
 * Each byte is allocated once: see {@linkcode ChunkReader}; with
 * `ownChunks` (the `node:http` adapter's stream, whose chunks nothing else
 * holds), each chunk's memory is given back as soon as it is copied, not
 * at the next garbage collection, which came late enough that the chunks
 * of a 50 MiB upload took about half a blob more.
 */
async function readBody(
  body: ReadableStream<Uint8Array> | null,
  announced: number,
  exact: boolean,
  context: BodyLimits,
  reservation: UploadReservation,
  ownChunks: boolean,
): Promise<
  { blob: Uint8Array; sha256: Uint8Array; content: ScannedContent | null }
> {
  const hash = createSha256();
  if (body === null) {
    return {
      blob: new Uint8Array(0),
      sha256: new Uint8Array(hash.digest()),
      content: null,
    };
  }
  const max = context.maxBlobBytes;
  const ms = context.uploadTimeoutMs;
  // HTTP framing ends a body with a length there; a chunked one may go on
  // to the limit.
  const capacity = Math.min(announced, max);
  const buffer = new BodyBuffer(capacity, exact);
  const scan = new ContentScan();
  const reader = new ChunkReader(body);
  const pace = new UploadPace(ms, performance.now());
  let size = 0;
  try {
    for (;;) {
      const { waitMs, limit } = pace.next(performance.now(), ms);
      const into = reader.inPlace ? buffer.rest() : null;
      const { done, value } = await readWithin(
        reader,
        into,
        waitMs,
        () => paceError(limit, context),
      );
      // A read in place moved the buffer: take it back first.
      if (into !== null && value !== undefined) buffer.filled(value);
      if (done) break;
      pace.add(value.length, performance.now());
      const end = size + value.length;
      if (end > capacity) {
        await reader.cancel();
        throw tooLarge("The body", max);
      }
      if (!reservation.grow(end)) {
        // Given back at once, before the cancel settles: other uploads
        // reading their next chunks meanwhile must see the room.
        reservation.release();
        await reader.cancel();
        throw busy();
      }
      if (into === null) buffer.append(value);
      hash.update(value);
      if (ownChunks) giveBack(value);
      scan.update(buffer.received(), end);
      size = end;
    }
  } catch (error) {
    // The memory goes back now, not at the next garbage collection: a burst
    // of refusals would otherwise hold their bytes beyond the budget.
    buffer.drop();
    throw aborted(error);
  } finally {
    reader.releaseLock();
  }
  return {
    blob: buffer.take(),
    sha256: new Uint8Array(hash.digest()),
    content: scan.result(),
  };
}

/**
 * Frees `chunk`'s memory now, when it is all of its `ArrayBuffer` (a chunk
 * that shares one, such as a slice of a pool, is left alone).
 */
function giveBack(chunk: Uint8Array): void {
  const memory = chunk.buffer;
  if (
    memory instanceof ArrayBuffer && !memory.resizable &&
    chunk.byteOffset === 0 && chunk.byteLength === memory.byteLength
  ) {
    try {
      memory.transfer(0);
    } catch {
      // Not detachable: the garbage collector frees it.
    }
  }
}

/** A read's result (a BYOB read's done may carry a view, see `read`). */
type ChunkRead =
  | { done: false; value: Uint8Array }
  | { done: true; value?: Uint8Array | undefined };

/** Each read's size into a byte stream before the body has one buffer. */
const SCRATCH_BYTES = 64 * 1024;

/**
 * The most one read writes in place. Not the whole rest of the body: a
 * read into a larger view took about as much memory again beside it while
 * it lasted (Deno 2.9: the 50 MiB upload's peak rose from 1.3 to 2.1
 * blobs); 64 KiB left more behind (1.4) and was slower.
 */
const IN_PLACE_BYTES = 256 * 1024;

/**
 * Reads a body's chunks. From a byte stream (`Deno.serve`'s), with a BYOB
 * reader: in place, into the part of the body's buffer not yet reached,
 * once it has one of its announced length, and else into one scratch
 * buffer that every read reuses; so no read allocates a chunk, where the
 * stream's own reads allocated 64 KiB each, which waited for the garbage
 * collector (as much memory again as a 50 MiB blob). From any other
 * stream, its own chunks.
 */
class ChunkReader {
  /** Whether reads write into the memory they are given (a byte stream). */
  readonly inPlace: boolean;
  readonly #byob: ReadableStreamBYOBReader | null = null;
  readonly #plain: ReadableStreamDefaultReader<Uint8Array> | null = null;
  #scratch: Uint8Array | null = null;

  /** @param body The body, not locked. */
  constructor(body: ReadableStream<Uint8Array>) {
    try {
      this.#byob = body.getReader({ mode: "byob" });
    } catch {
      // Not a byte stream.
      this.#plain = body.getReader();
    }
    this.inPlace = this.#byob !== null;
  }

  /**
   * The next chunk. Given `into`, a byte stream writes it there, and its
   * result (done or not) is a view of the memory `into` had, moved to a
   * new `ArrayBuffer`; when the stream was cancelled meanwhile there is no
   * value.
   *
   * @param into Where the chunk may be written, or null.
   * @returns The read's result.
   */
  async read(
    into: Uint8Array | null,
  ): Promise<ChunkRead> {
    if (this.#byob === null) return await this.#plain!.read();
    if (into !== null) {
      return await this.#byob.read(into.subarray(0, IN_PLACE_BYTES));
    }
    const result = await this.#byob.read(
      this.#scratch ?? new Uint8Array(SCRATCH_BYTES),
    );
    const moved = result.value?.buffer as ArrayBuffer | undefined;
    this.#scratch = moved === undefined ? null : new Uint8Array(moved);
    return result;
  }

  /** Cancels the body (settling a pending read); never fails. */
  async cancel(): Promise<void> {
    await (this.#byob ?? this.#plain)!.cancel().catch(() => {});
  }

  /** Releases the body. */
  releaseLock(): void {
    (this.#byob ?? this.#plain)!.releaseLock();
  }
}

/**
 * The next chunk (see {@linkcode ChunkReader.read}), or the error of
 * `timedOut()` (and the body cancelled) when none comes within `waitMs`.
 */
async function readWithin(
  reader: ChunkReader,
  into: Uint8Array | null,
  waitMs: number,
  timedOut: () => BrokerError,
): Promise<ChunkRead> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let expired = false;
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(() => {
      expired = true;
      resolve();
    }, Math.max(0, waitMs));
  });
  try {
    const result = await Promise.race([reader.read(into), timeout]);
    // Checked after the race: cancelling settles the pending read too.
    if (expired || result === undefined) {
      await reader.cancel();
      throw timedOut();
    }
    return result;
  } finally {
    clearTimeout(timer);
  }
}

/** The `upload_timeout` of the pace rule that ended a body's wait. */
function paceError(limit: PaceLimit, context: BodyLimits): BrokerError {
  const why = limit === "pause"
    ? `no byte of it arrived for ${context.uploadTimeoutMs} ms`
    : limit === "slow"
    ? `it arrived slower than ${MIN_UPLOAD_BYTES_PER_SECOND} bytes a second over ${context.uploadTimeoutMs} ms`
    : `it had not all arrived after ${
      UPLOAD_DEADLINE_WINDOWS * context.uploadTimeoutMs
    } ms`;
  return new BrokerError("upload_timeout", `Cannot accept the pod: ${why}`);
}

function busy(from = ""): BrokerError {
  return new BrokerError(
    "busy",
    `Cannot accept the pod now: too many uploads in flight${
      from && ` ${from}`
    }, try again shortly`,
  );
}

/**
 * A failed read of the body (the client went away, or reset the
 * connection) as `upload_aborted`; the broker's own refusals pass through.
 */
function aborted(error: unknown): unknown {
  if (error instanceof BrokerError) return error;
  return new BrokerError(
    "upload_aborted",
    "Cannot accept the pod: the connection ended before its body did",
    { cause: error },
  );
}

function tooLarge(what: string, max: number): BrokerError {
  return new BrokerError(
    "blob_too_large",
    `Cannot accept the pod: ${what} exceeds the limit of ${max} bytes`,
  );
}
