/**
 * The send deadline of a large response body: the bytes go out in slices,
 * each read only when the connection has taken the one before, and a body
 * whose connection takes nothing for the deadline fails (after the grace
 * of `stall_grace.ts`: a stalled event loop is not the client's doing). So
 * a client that stops reading holds what the connection's buffers hold,
 * never a copy of the whole pod. On `node:http` the failed body drops the connection; on
 * `Deno.serve`, which has no send timeout, the connection lives until its
 * client goes, and what it still reads ends short of the pod.
 *
 * @module
 */

import type { Logger } from "../_util/log.ts";
import { expireUnlessProgress } from "../_util/stall_grace.ts";

/** How a paced body fails when its client stopped reading. */
export class SendTimeoutError extends Error {
  /** @param message What happened. */
  constructor(message = "The client stopped reading its response") {
    super(message);
    this.name = "SendTimeoutError";
  }
}

/** Bytes of one slice of a paced body. */
export const SEND_SLICE_BYTES: number = 64 * 1024;

/**
 * `body` as a stream that yields at most {@linkcode SEND_SLICE_BYTES} a
 * read, and fails with a {@linkcode SendTimeoutError} when its reader asks
 * for nothing for `timeoutMs`.
 *
 * @param body The bytes, or a stream of them (a registry's).
 * @param timeoutMs The send deadline.
 * @param logger Told, at debug level, of a body cut off.
 * @returns The paced body.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { pacedBody } from "./send_deadline.ts";
 *
 * const body = pacedBody(new Uint8Array(100_000), 1_000, () => {});
 * const sizes: number[] = [];
 * for await (const chunk of body) sizes.push(chunk.length);
 * assert.deepEqual(sizes, [65_536, 34_464]);
 * ```
 */
export function pacedBody(
  body: Uint8Array | ReadableStream<Uint8Array>,
  timeoutMs: number,
  logger: Logger,
): ReadableStream<Uint8Array> {
  const next = body instanceof Uint8Array ? slicesOf(body) : readsOf(body);
  let timer: ReturnType<typeof setTimeout> | undefined;
  let expire = () => {};
  let pulls = 0;
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(
      () => expireUnlessProgress(() => pulls, expire),
      timeoutMs,
    );
  };
  return new ReadableStream<Uint8Array>({
    start(controller) {
      expire = () => {
        logger("debug", "Cut off a response its client stopped reading");
        controller.error(new SendTimeoutError());
        void next.cancel();
      };
      arm();
    },
    async pull(controller) {
      pulls++;
      arm();
      const chunk = await next.read();
      if (chunk === null) {
        clearTimeout(timer);
        controller.close();
      } else {
        controller.enqueue(chunk);
      }
    },
    cancel() {
      clearTimeout(timer);
      return next.cancel();
    },
  }, new CountQueuingStrategy({ highWaterMark: 0 }));
}

/** A source of slices: the next one (null at the end), and giving up. */
interface Slices {
  read(): Promise<Uint8Array | null> | Uint8Array | null;
  cancel(): Promise<void>;
}

/** Views of `bytes`, {@linkcode SEND_SLICE_BYTES} at a time (no copies). */
function slicesOf(bytes: Uint8Array): Slices {
  let at = 0;
  return {
    read() {
      if (at >= bytes.length) return null;
      const slice = bytes.subarray(at, at + SEND_SLICE_BYTES);
      at += slice.length;
      return slice;
    },
    cancel: () => Promise.resolve(),
  };
}

/** The chunks of `stream`, each cut to {@linkcode SEND_SLICE_BYTES}. */
function readsOf(stream: ReadableStream<Uint8Array>): Slices {
  const reader = stream.getReader();
  let rest: Slices | null = null;
  return {
    async read() {
      for (;;) {
        const slice = await rest?.read();
        if (slice) return slice;
        const { done, value } = await reader.read();
        if (done) return null;
        rest = slicesOf(value);
      }
    },
    cancel: () => reader.cancel().catch(() => {}),
  };
}
