/**
 * `PUT /:id`: a signed update of a stored pod (issue 21). The body is
 * received exactly as `POST /pods` receives one (limits, budget, timeouts,
 * verification, deny list), then stored by compare and swap.
 *
 * @module
 */

import { currentRecord, replacePod } from "../create_pod.ts";
import { BrokerError, jsonResponse } from "../problem.ts";
import {
  admitter,
  envelope,
  receivePod,
  type UploadContext,
} from "./upload.ts";

/**
 * Handles an update. An unknown or deleted id, and a pod the deny list
 * hides by its content, are refused before a byte of the body is read. The
 * broker routes `PUT` here only when its registry has `updatePod` (else 405
 * with `Allow: GET, HEAD`).
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
  const current = await currentRecord(context.registry, id);
  // A pod the deny list hides by its content stays taken down: its owner
  // cannot bring it back at the same URL with new bytes. (A denied key is
  // refused as the new version's owner: 403 owner_denied.)
  if (context.denyList?.denies(current) === "content_denied") {
    throw new BrokerError(
      "pod_deleted",
      `Cannot update pod '${id}': it was taken down by the operator`,
    );
  }
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
