/**
 * `POST /pods`: the body received (src/http/upload_body.ts), the pod
 * stored (`storePod`, which owns its refusals), and `201 Created`.
 * `PUT /:id` receives its body the same way.
 *
 * @module
 */

import { storePod } from "../create_pod.ts";
import { jsonResponse } from "../problem.ts";
import type { DenyList } from "../../operator/deny_list.ts";
import type { PodRecord, Registry } from "../../registries/types.ts";
import { type BodyLimits, receiveBody } from "../upload_body.ts";

export { MIN_UPLOAD_BYTES_PER_SECOND } from "../upload_body.ts";

/** What the upload route needs from the broker. */
export interface UploadContext extends BodyLimits {
  /** Where pods go. */
  registry: Registry;
  /** The public base URL for this request, without a trailing slash. */
  baseUrl: string;
  /** Owner keys and content digests refused with 403. */
  denyList?: DenyList | null;
  /** With `podDomain`: a pod's own URL, the envelope's `podUrl`. */
  podUrl?: ((id: string) => string) | undefined;
}

/**
 * Handles an upload. Refusals that need no body (size announced over the
 * limit, media type, budget) come before a byte of it is read.
 *
 * @param request The `POST /pods` request.
 * @param context Registry, limits, budget and base URL.
 * @returns 201 with `Location` and `{id,url,ownerPubkey,blobSize}`.
 * @throws {BrokerError} For every refusal.
 */
export async function handleUpload(
  request: Request,
  context: UploadContext,
): Promise<Response> {
  const { blob, sha256, content, release } = await receiveBody(
    request,
    context,
  );
  let record: PodRecord;
  try {
    record = await storePod(context.registry, blob, {
      maxBlobBytes: context.maxBlobBytes,
      sha256,
      content,
      denyList: context.denyList ?? null,
    });
  } finally {
    release();
  }
  const body = envelope(record, context);
  return jsonResponse(body, { Location: body.url }, 201);
}

/** The answer's body: `{id, url, ownerPubkey, blobSize}`, and `podUrl`. */
export function envelope(
  record: PodRecord,
  context: Pick<UploadContext, "baseUrl" | "podUrl">,
): {
  id: string;
  url: string;
  ownerPubkey: string;
  blobSize: number;
  podUrl?: string;
} {
  return {
    id: record.id,
    url: `${context.baseUrl}/${record.id}`,
    ownerPubkey: record.ownerPubkey,
    blobSize: record.blobSize,
    ...(context.podUrl && { podUrl: context.podUrl(record.id) }),
  };
}
