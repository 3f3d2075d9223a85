/**
 * `POST /pods`: media type, the size limit (from Content-Length, then while
 * the body streams in), `createPod`, and `201 Created`.
 *
 * @module
 */

import { createPod } from "../create_pod.ts";
import { BrokerError } from "../problem.ts";
import type { Registry } from "../types.ts";

/** What the upload route needs from the broker. */
export interface UploadContext {
  /** Where pods go. */
  registry: Registry;
  /** Upload limit in bytes. */
  maxBlobBytes: number;
  /** The public base URL for this request, without a trailing slash. */
  baseUrl: string;
}

/**
 * Handles an upload.
 *
 * @param request The `POST /pods` request.
 * @param context Registry, limit and base URL.
 * @returns 201 with `Location` and `{id,url,ownerPubkey,blobSize}`.
 * @throws {BrokerError} For every refusal.
 */
export async function handleUpload(
  request: Request,
  context: UploadContext,
): Promise<Response> {
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
  const expected = length !== null && /^\d+$/.test(length)
    ? Number(length)
    : null;
  const blob = await readBody(request.body, maxBlobBytes, expected);
  const record = await createPod(context.registry, blob, { maxBlobBytes });
  const url = `${context.baseUrl}/${record.id}`;
  const body = {
    id: record.id,
    url,
    ownerPubkey: record.ownerPubkey,
    blobSize: record.blobSize,
  };
  return Response.json(body, { status: 201, headers: { Location: url } });
}

/**
 * Reads a body of at most `max` bytes, cutting it off at `max + 1`. With a
 * known length the bytes go straight into one buffer of that size.
 */
async function readBody(
  body: ReadableStream<Uint8Array> | null,
  max: number,
  expected: number | null,
): Promise<Uint8Array> {
  if (body === null) return new Uint8Array(0);
  const reader = body.getReader();
  const buffer = new Uint8Array(expected ?? 0);
  const chunks: Uint8Array[] = [];
  let size = 0;
  let buffered = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (size + value.length > max) {
        await reader.cancel();
        throw tooLarge("The body", max);
      }
      if (chunks.length === 0 && size + value.length <= buffer.length) {
        buffer.set(value, size);
        buffered += value.length;
      } else {
        chunks.push(value);
      }
      size += value.length;
    }
  } finally {
    reader.releaseLock();
  }
  if (chunks.length === 0) return buffer.subarray(0, size);
  // Unknown length (chunked), or more bytes than announced: join once.
  const joined = new Uint8Array(size);
  let offset = buffered;
  joined.set(buffer.subarray(0, buffered));
  for (const chunk of chunks) {
    joined.set(chunk, offset);
    offset += chunk.length;
  }
  return joined;
}

function tooLarge(what: string, max: number): BrokerError {
  return new BrokerError(
    "blob_too_large",
    `Cannot accept the pod: ${what} exceeds the limit of ${max} bytes`,
  );
}
