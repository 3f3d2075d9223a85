/**
 * `GET`/`HEAD /:id` (the pod itself, with its security headers, ETag and
 * 304) and `GET /:id/meta` (the record as JSON).
 *
 * @module
 */

import { isPodId } from "../../_util/id.ts";
import { findPod, podNotFound, refuseHidden } from "../find_pod.ts";
import type { Logger } from "../../_util/log.ts";
import {
  PodHeaders,
  SCRIPT_POLICIES,
  type ScriptPolicy,
} from "../../serving/pod_headers.ts";
import {
  DECLARATION_SCAN_BYTES,
  type PodPermission,
} from "../../serving/permissions.ts";
import type { PodPermissionCache } from "../../serving/permission_cache.ts";
import { BrokerError, jsonResponse } from "../problem.ts";
import type {
  ScriptHashCache,
  ScriptHashes,
} from "../../serving/script_hashes.ts";
import {
  POD_CACHE_MAX_ENTRY_BYTES,
  PodResponseCache,
  type ReadyParts,
} from "../../serving/pod_cache.ts";
import type { DenyList } from "../../operator/deny_list.ts";
import { pacedBody } from "../../serving/send_deadline.ts";
import type { ReadyRequest, RouteRequest } from "../router.ts";
import type { HeaderSource } from "../request_url.ts";
import type { PodHeaderOptions } from "../../config/types.ts";
import type { PodRecord, Registry } from "../../registries/types.ts";

/** What the pod routes need from the broker: one per broker. */
export interface PodContext {
  /** Where pods are. */
  registry: Registry;
  /** The pod headers, built once per signaling URL. */
  headers: PodHeaders;
  /** Ready responses of hot pods, by id and bytes. */
  responses: PodResponseCache;
  /**
   * The script hash cache (`scriptPolicy: "hashes"`), made on first use:
   * the HTML parser is not loaded unless it is needed.
   */
  scriptHashes: () => Promise<ScriptHashCache>;
  /** Where a failed `bumpHits` is reported. */
  logger: Logger;
  /** A pod over the cache's size is dropped when unread for this long. */
  sendTimeoutMs: number;
  /** Pods that match it answer 410 `pod_deleted`. */
  denyList: DenyList | null;
  /** With `podDomain`: a pod's own URL for a base URL, `/meta`'s `podUrl`. */
  podUrl?: ((baseUrl: string, id: string) => string) | undefined;
  /** The script policy pods are served under, `/meta`'s `scriptPolicy`. */
  scriptPolicy: ScriptPolicy;
  /** Called with each hit the registry is told of (the metrics' count). */
  onHit?: (() => void) | undefined;
  /**
   * With `podDomain`: what each pod version is granted on its own origin
   * (`/meta`'s `permissions`; a pod host's Permissions-Policy).
   */
  permissions?: PodPermissionCache | undefined;
  /** Whether Permissions-Policy grants them (a pod host; never the broker's). */
  grantsInHeaders?: boolean | undefined;
}

/** What {@linkcode createPodContext} needs, from the resolved options. */
export interface PodContextOptions {
  /** Where pods are. */
  registry: Registry;
  /** Pod header overrides. */
  podHeaderOptions: PodHeaderOptions;
  /** Log sink. */
  logger: Logger;
  /** The deny list, or null. */
  denyList: DenyList | null;
  /** Bytes of pods kept as ready responses (0: none). */
  podCacheBytes: number;
  /** The send deadline of a pod over the cache's size. */
  sendTimeoutMs: number;
  /** With `podDomain`: a pod's own URL for a base URL, `/meta`'s `podUrl`. */
  podUrl?: ((baseUrl: string, id: string) => string) | undefined;
  /** Called with each hit the registry is told of (the metrics' count). */
  onHit?: (() => void) | undefined;
  /** With `podDomain`: the grants of each pod version. */
  permissions?: PodPermissionCache | undefined;
  /** Whether Permissions-Policy grants them (a pod host only). */
  grantsInHeaders?: boolean | undefined;
}

/**
 * The pod routes' state for one broker: its header lists, ready responses
 * and script hashes live as long as the broker, whatever the request's
 * base URL.
 *
 * @param options From the resolved options.
 * @returns The context to pass to {@linkcode handlePod} and
 * {@linkcode handleMeta}.
 */
export function createPodContext(options: PodContextOptions): PodContext {
  const { registry, logger, denyList } = options;
  let scriptHashes: Promise<ScriptHashCache> | undefined;
  return {
    registry,
    headers: new PodHeaders(options.podHeaderOptions),
    responses: new PodResponseCache(options.podCacheBytes),
    scriptHashes: () =>
      scriptHashes ??= import("../../serving/script_hashes.ts").then((
        module,
      ) => new module.ScriptHashCache({ logger })),
    logger,
    sendTimeoutMs: options.sendTimeoutMs,
    denyList,
    podUrl: options.podUrl,
    scriptPolicy: options.podHeaderOptions.scriptPolicy ?? SCRIPT_POLICIES[0]!,
    onHit: options.onHit,
    permissions: options.permissions,
    grantsInHeaders: options.grantsInHeaders,
  };
}

/**
 * Serves a pod: 200 with the stored bytes (streamed when the registry can),
 * 304 when `If-None-Match` matches; HEAD has GET's headers and no body.
 * Sets `input.bodyBytes`.
 *
 * @param input The GET or HEAD request and the path segment.
 * @param context Registry, headers and logger.
 * @returns The pod response.
 * @throws {BrokerError} `pod_not_found`, or `pod_deleted` for a pod taken
 * down.
 */
export function handlePod(
  input: RouteRequest,
  context: PodContext,
): Response | Promise<Response> {
  const { request } = input;
  // The hot path, without a promise: a plain GET or HEAD of a pod whose
  // 200 is ready, from a registry that can answer at once.
  const record = hotRecord(context, request.method, request.headers, input.id);
  if (record !== null) {
    refuseHidden(record, "serve", context.denyList);
    const ready = readyResponse(input, context, record);
    if (ready !== null) return ready;
  }
  return servePod(input, context);
}

/**
 * Whether a request may be answered with a pod's ready `200`: a `GET` or
 * `HEAD` without `If-None-Match` (a conditional one may be a `304`).
 */
function wantsReady(
  method: string,
  headers: HeaderSource["headers"],
): boolean {
  return (method === "GET" || method === "HEAD") &&
    headers.get("If-None-Match") === null;
}

/**
 * The pod's record when the request wants its ready `200` and the registry
 * can answer at once, denied or not; else null (the long way).
 */
function hotRecord(
  context: PodContext,
  method: string,
  headers: HeaderSource["headers"],
  id: string,
): PodRecord | null {
  const { registry } = context;
  if (
    !wantsReady(method, headers) || registry.getRecordNow === undefined ||
    !isPodId(id)
  ) {
    return null;
  }
  return registry.getRecordNow(id);
}

/**
 * How many times a GET reads the pod again when an update landed between
 * reading its record and its bytes.
 */
const MAX_VERSION_READS = 3;

async function servePod(
  input: RouteRequest,
  context: PodContext,
): Promise<Response> {
  for (let read = 0; read < MAX_VERSION_READS; read++) {
    const response = await serveVersion(input, context);
    if (response !== null) return response;
  }
  throw new BrokerError("busy", "The pod is being updated: try again");
}

/**
 * Answers with the version of the pod its record names, or null when the
 * bytes read belong to another version (an update landed in between): the
 * headers, `ETag`, `Content-Length`, script hashes and the ready-response
 * cache only ever see one version's bytes.
 */
async function serveVersion(
  input: RouteRequest,
  context: PodContext,
): Promise<Response | null> {
  const { request, id } = input;
  const record = await findPod(context.registry, id, "serve", context.denyList);
  if (wantsReady(request.method, request.headers)) {
    const ready = readyResponse(input, context, record);
    if (ready !== null) return ready;
  }
  const ifNoneMatch = request.headers.get("If-None-Match");
  const get = request.method === "GET";
  const hashes = await scriptHashesOf(record, context);
  if (hashes === null) return null;
  const grants = context.grantsInHeaders
    ? await grantsOf(record, context)
    : undefined;
  if (grants === null) return null;
  const etag = `"${record.sha256}"`;
  // One list, validated once by the Response (a Headers object and then
  // set() calls would validate every value twice).
  const headers: [string, string][] = [
    ...context.headers.of(input.baseUrl, hashes, grants ?? null),
    ["ETag", etag],
  ];
  if (matchesEtag(ifNoneMatch, etag)) {
    input.bodyBytes = 0;
    return new Response(null, { status: 304, headers });
  }
  headers.push(["Content-Length", String(record.blobSize)]);
  if (!get) {
    input.bodyBytes = 0;
    return new Response(null, { status: 200, headers });
  }
  const { registry } = context;
  // Small pods are read whole (and kept ready); large ones are streamed.
  const small = record.blobSize <= POD_CACHE_MAX_ENTRY_BYTES;
  let body: Uint8Array | ReadableStream<Uint8Array> | null;
  if (registry.getBlobStream && !small) {
    body = await registry.getBlobStream(id);
    if (body === null) throw podNotFound(id);
    if (!await stillCurrent(record, context)) {
      await body.cancel();
      return null;
    }
  } else {
    body = await blobOf(record, context);
    if (body === null) return null;
  }
  countHit(context, id);
  input.bodyBytes = record.blobSize;
  // A small pod goes out whole (and is kept ready); a large one paced,
  // under the send deadline.
  if (small && body instanceof Uint8Array) {
    return context.responses.put(
      id,
      record.sha256,
      input.baseUrl,
      headers,
      body as Uint8Array<ArrayBuffer>,
    );
  }
  return new Response(
    pacedBody(body, context.sendTimeoutMs, context.logger) as ReadableStream<
      Uint8Array<ArrayBuffer>
    >,
    { status: 200, headers },
  );
}

/**
 * The bytes of the version `record` names, or null when the registry now
 * holds another version (an update landed since the record was read).
 *
 * @throws {BrokerError} `pod_not_found` when the pod is gone.
 */
async function blobOf(
  record: PodRecord,
  context: PodContext,
): Promise<Uint8Array | null> {
  const bytes = await context.registry.getBlob(record.id);
  if (bytes === null) throw podNotFound(record.id);
  return await stillCurrent(record, context) ? bytes : null;
}

/**
 * Whether `record` still names the pod's current version, read after its
 * bytes were: bytes read between two reads of the record that name one
 * version are that version's (versions only move forward: an update must
 * be signed later, so no version comes back).
 */
async function stillCurrent(
  record: PodRecord,
  context: PodContext,
): Promise<boolean> {
  return (await context.registry.getRecord(record.id))?.sha256 ===
    record.sha256;
}

/** A copy of the pod's ready `200`, its hit counted, or null. */
function readyResponse(
  input: RouteRequest,
  context: PodContext,
  record: Readonly<PodRecord>,
): Response | null {
  const cached = context.responses.get(
    record.id,
    record.sha256,
    input.baseUrl,
  );
  if (cached === null) return null;
  // A HEAD is not a hit.
  if (input.request.method === "GET") countHit(context, record.id);
  input.bodyBytes = record.blobSize;
  return cached;
}

/**
 * The parts of a pod's ready `200` (the answer {@linkcode handlePod} gives
 * the same request), a `GET`'s hit counted; or null when the request may
 * not have it, that answer is not ready, the pod is denied, or the
 * registry cannot answer at once: then {@linkcode handlePod} answers.
 *
 * @param context The pod routes' state.
 * @param request The request's method, headers, id and base URL (the
 * cache keys on it).
 * @returns The header list and bytes, or null.
 */
export function readyPodParts(
  context: PodContext,
  { method, headers, id, baseUrl }: ReadyRequest,
): ReadyParts | null {
  const record = hotRecord(context, method, headers, id);
  if (record === null || context.denyList?.denies(record)) return null;
  const parts = context.responses.parts(record.id, record.sha256, baseUrl);
  if (parts !== null && method === "GET") countHit(context, record.id);
  return parts;
}

/**
 * Counts a hit, in the registry and in the metrics (one place for both, on
 * the broker host and on pod hosts alike); a registry that fails to count
 * never fails the response.
 */
function countHit({ registry, logger, onHit }: PodContext, id: string): void {
  onHit?.();
  const report = (error: unknown) =>
    logger("warn", "Cannot count a hit", { id, error });
  try {
    registry.bumpHits(id).catch(report);
  } catch (error) {
    report(error);
  }
}

/**
 * Serves a pod's record as JSON, with its URL.
 *
 * @param input The request, its base URL and the path segment.
 * @param context Registry and deny list.
 * @returns 200 with the record.
 * @throws {BrokerError} `pod_not_found`, or `pod_deleted` for a pod taken
 * down.
 */
export async function handleMeta(
  { id, baseUrl }: RouteRequest,
  context: PodContext,
): Promise<Response> {
  const record = await findPod(context.registry, id, "serve", context.denyList);
  return jsonResponse({
    id: record.id,
    url: `${baseUrl}/${record.id}`,
    ownerPubkey: record.ownerPubkey,
    blobSize: record.blobSize,
    sha256: record.sha256,
    contentSha256: record.contentSha256,
    name: record.name,
    createdAt: record.createdAt,
    uploadedAt: record.uploadedAt,
    hits: record.hits,
    version: record.version ?? 1,
    updatedAt: record.updatedAt ?? record.uploadedAt,
    ...(context.podUrl && { podUrl: context.podUrl(baseUrl, record.id) }),
    scriptPolicy: context.scriptPolicy,
    permissions: await grantsOf(record, context) ?? [],
  }, { "Cache-Control": "no-cache" });
}

/**
 * What the version `record` names is granted on its own origin, read once
 * per version ([] without a pod domain), or null when the registry holds
 * another version now.
 */
async function grantsOf(
  record: PodRecord,
  context: PodContext,
): Promise<readonly PodPermission[] | null> {
  if (context.permissions === undefined) return [];
  return await context.permissions.grantsOf(
    record,
    () => headOf(record, context),
  );
}

/**
 * The first bytes of the version `record` names, enough for its
 * declaration (a large pod's stream is read that far and cancelled), or
 * null when the registry holds another version now.
 */
async function headOf(
  record: PodRecord,
  context: PodContext,
): Promise<Uint8Array | null> {
  const { registry } = context;
  if (!registry.getBlobStream || record.blobSize <= POD_CACHE_MAX_ENTRY_BYTES) {
    return await blobOf(record, context);
  }
  const stream = await registry.getBlobStream(record.id);
  if (stream === null) throw podNotFound(record.id);
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < DECLARATION_SCAN_BYTES) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.length;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  if (!await stillCurrent(record, context)) return null;
  const head = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    head.set(chunk, at);
    at += chunk.length;
  }
  return head;
}

/**
 * With `scriptPolicy: "hashes"`: the pod's script hashes, computed once per
 * pod by the broker's cache. Otherwise undefined.
 */
/**
 * The script hashes of the version `record` names (undefined when the
 * policy needs none), or null when the registry holds another version now.
 */
async function scriptHashesOf(
  record: PodRecord,
  context: PodContext,
): Promise<ScriptHashes | undefined | null> {
  if (!context.headers.hashesScripts) return undefined;
  return await (await context.scriptHashes()).hashesOf(
    record,
    () => blobOf(record, context),
  );
}

function matchesEtag(ifNoneMatch: string | null, etag: string): boolean {
  if (ifNoneMatch === null) return false;
  return ifNoneMatch.split(",").some((tag) => {
    const trimmed = tag.trim();
    return trimmed === "*" || trimmed.replace(/^W\//, "") === etag;
  });
}
