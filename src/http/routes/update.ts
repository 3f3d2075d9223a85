/**
 * `PUT /:id`: a signed update of a stored pod (issue 21). The body is
 * received exactly as `POST /pods` receives one (limits, budget, timeouts,
 * verification, deny list), then stored by compare and swap.
 *
 * @module
 */

import { currentRecord, replacePod } from "../create_pod.ts";
import { jsonResponse } from "../problem.ts";
import {
  admitter,
  envelope,
  receivePod,
  type UploadContext,
} from "./upload.ts";

/**
 * Handles an update. An unknown or deleted id is refused before a byte of
 * the body is read. The broker routes `PUT` here only when its registry
 * has `updatePod` (else 405 with `Allow: GET, HEAD`).
 *
 * @param request The `PUT /:id` request.
 * @param id The pod's id.
 * @param context Registry, limits, budget and base URL.
 * @returns 200 with `{id,url,ownerPubkey,blobSize,version}`.
 * @throws {BrokerError} Every upload refusal, `pod_not_found`,
 * `pod_deleted`, `owner_mismatch` and `stale_update`.
 */
export async function handleUpdate(
  request: Request,
  id: string,
  context: UploadContext,
): Promise<Response> {
  await currentRecord(context.registry, id);
  const record = await receivePod(
    request,
    context,
    (blob, sha256) =>
      replacePod(context.registry, id, blob, {
        maxBlobBytes: context.maxBlobBytes,
        sha256,
        admit: admitter(context),
      }),
  );
  return jsonResponse({
    ...envelope(record, context),
    version: record.version,
  });
}
