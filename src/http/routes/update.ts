/**
 * `PUT /:id`: a signed update of a stored pod. The body is received exactly
 * as `POST /pods` receives one (limits, budget, timeouts, verification,
 * deny list), then stored by compare and swap when the owner's
 * `Pod-Update-Signature` binds it to this pod and its stored version.
 *
 * @module
 */

import { replacePod } from "../create_pod.ts";
import { findPod } from "../find_pod.ts";
import { BrokerError, jsonResponse } from "../problem.ts";
import {
  isSha256Digest,
  UPDATE_REPLACES_HEADER,
  UPDATE_SIGNATURE_HEADER,
} from "../../pod/update.ts";
import { envelope, type UploadContext } from "./upload.ts";
import { receiveBody } from "../upload_body.ts";
import type { PodRecord } from "../../registries/types.ts";

/** An Ed25519 signature in base64url without padding: 86 characters. */
const SIGNATURE_SHAPE = /^[A-Za-z0-9_-]{85}[AQgw]$/;

/**
 * Handles an update. An unknown or deleted id, a pod the deny list hides by
 * its content, and a missing or malformed `Pod-Update-Signature` (or
 * `Pod-Update-Replaces`) are refused before a byte of the body is read; the
 * deny list is asked again once the body has arrived (`replacePod`), so a
 * reload meanwhile holds.
 * The signature is checked for the version `Pod-Update-Replaces` names,
 * else the one stored when the request came; when that is not (or no
 * longer) the stored version, the update is 409 `stale_update`. The
 * broker routes `PUT` here only when its registry has `updatePod` (else 405
 * with `Allow: GET, HEAD`).
 *
 * @param request The `PUT /:id` request.
 * @param id The pod's id.
 * @param context Registry, limits, budget and base URL.
 * @returns 200 with `{id,url,ownerPubkey,blobSize,version}`.
 * @throws {BrokerError} Every upload refusal, `pod_not_found`,
 * `pod_deleted`, `update_unauthorized`, `owner_mismatch` and
 * `stale_update`.
 */
export async function handleUpdate(
  request: Request,
  id: string,
  context: UploadContext,
): Promise<Response> {
  // A pod the deny list hides by its content stays taken down (410).
  const current = await findPod(
    context.registry,
    id,
    "update",
    context.denyList,
  );
  const { signature, replaces } = updateHeaders(request, id);
  const { blob, sha256, release } = await receiveBody(request, context);
  let record: PodRecord;
  try {
    record = await replacePod(context.registry, id, blob, {
      maxBlobBytes: context.maxBlobBytes,
      sha256,
      denyList: context.denyList ?? null,
      signature,
      current,
      ...(replaces === null ? {} : { replaces }),
    });
  } finally {
    release();
  }
  return jsonResponse({
    ...envelope(record, context),
    version: record.version,
  });
}

/**
 * The update's signature and the version it names (null: not named).
 *
 * @throws {BrokerError} `update_unauthorized` when the signature is
 * missing or either header is malformed.
 */
function updateHeaders(
  request: Request,
  id: string,
): { signature: string; replaces: string | null } {
  const signature = request.headers.get(UPDATE_SIGNATURE_HEADER);
  const replaces = request.headers.get(UPDATE_REPLACES_HEADER);
  let wrong: string | null = null;
  if (signature === null) wrong = `no ${UPDATE_SIGNATURE_HEADER} header`;
  else if (!SIGNATURE_SHAPE.test(signature)) {
    wrong = `a malformed ${UPDATE_SIGNATURE_HEADER} header`;
  } else if (replaces !== null && !isSha256Digest(replaces)) {
    wrong =
      `a malformed ${UPDATE_REPLACES_HEADER} header (the sha256 of /meta)`;
  }
  if (wrong !== null) {
    throw new BrokerError(
      "update_unauthorized",
      `Cannot update pod '${id}': ${wrong}; an update carries the owner's signature of the update statement (pod-broker publish --update signs it)`,
    );
  }
  return { signature: signature!, replaces };
}
