/**
 * "Find this pod, or say 404/410", once for every route that names a pod by
 * its id: `GET`/`HEAD /:id` and `/:id/meta`, `PUT /:id`, and the 302 to a
 * pod's own host.
 *
 * @module
 */

import { isPodId } from "../_util/id.ts";
import type { DenyList } from "../operator/deny_list.ts";
import type { PodRecord, Registry } from "../registries/types.ts";
import { BrokerError } from "./problem.ts";

/** What a route does with the pod, in its refusals' words. */
export type PodAction = "serve" | "update";

/**
 * The stored record of `id`, or the refusal: 404 `pod_not_found` for an id
 * that cannot be a pod's (the registry is not asked) or that no pod has, and
 * 410 `pod_deleted` for a pod the operator deleted or the deny list hides.
 *
 * @param registry Where pods are.
 * @param id The path's id.
 * @param action What the route does with it (see {@linkcode refuseHidden}).
 * @param denyList The deny list, or null.
 * @returns The record.
 * @throws {BrokerError} `pod_not_found` or `pod_deleted`.
 */
export async function findPod(
  registry: Registry,
  id: string,
  action: PodAction,
  denyList: DenyList | null = null,
): Promise<PodRecord> {
  checkPodId(id);
  const record = await registry.getRecord(id);
  if (record !== null) {
    refuseHidden(record, action, denyList);
    return record;
  }
  if (await registry.isDeleted?.(id)) throw podDeleted(id, action);
  throw podNotFound(id, action);
}

/**
 * Refuses an id that cannot be a pod's, before any registry is asked.
 *
 * @throws {BrokerError} `pod_not_found`.
 */
export function checkPodId(id: string): void {
  if (!isPodId(id)) throw podNotFound(id);
}

/**
 * Refuses a pod the deny list hides, with 410 `pod_deleted`: to be served,
 * any match hides it; to be updated, only its content's (its owner cannot
 * bring it back at the same URL with new bytes; a denied key is refused as
 * the new version's owner, 403 `owner_denied`).
 *
 * @throws {BrokerError} `pod_deleted`.
 */
export function refuseHidden(
  record: Readonly<PodRecord>,
  action: PodAction,
  denyList: DenyList | null,
): void {
  const code = denyList?.denies(record);
  if (code && (action === "serve" || code === "content_denied")) {
    throw podDeleted(record.id, action);
  }
}

/**
 * 404 `pod_not_found` for `id`.
 *
 * @param id The id asked for (cut to 64 characters in the message).
 * @param action What the route would have done with it.
 * @returns The error to throw.
 */
export function podNotFound(
  id: string,
  action: PodAction = "serve",
): BrokerError {
  return new BrokerError(
    "pod_not_found",
    action === "serve"
      ? `Cannot find a pod with id '${id.slice(0, 64)}'`
      : `Cannot update pod '${id.slice(0, 64)}': there is no such pod`,
  );
}

function podDeleted(id: string, action: PodAction): BrokerError {
  return new BrokerError(
    "pod_deleted",
    `Cannot ${action} pod '${id}': it was taken down by the operator`,
  );
}
