/**
 * `GET`/`HEAD /:id` (the pod itself, with its security headers, ETag and
 * 304) and `GET /:id/meta` (the record as JSON).
 *
 * @module
 */

import { isPodId } from "../../_util/id.ts";
import type { Logger } from "../../_util/log.ts";
import { appendPodHeaders } from "../../serving/pod_headers.ts";
import { BrokerError } from "../problem.ts";
import type { ScriptHashCache } from "../../serving/script_hashes.ts";
import {
  POD_CACHE_MAX_ENTRY_BYTES,
  PodResponseCache,
} from "../../serving/pod_cache.ts";
import type { DenyList } from "../../operator/deny_list.ts";
import type { RouteRequest } from "../router.ts";
import type { PodHeaderOptions } from "../../config/types.ts";
import type { PodRecord, Registry } from "../../registries/types.ts";

/** What the pod routes need from the broker. */
export interface PodContext {
  /** Where pods are. */
  registry: Registry;
  /** Pod header overrides. */
  podHeaderOptions: PodHeaderOptions;
  /** The public base URL for this request, without a trailing slash. */
  baseUrl: string;
  /** The broker's WebSocket signaling URL. */
  signalUrl: string;
  /** Where a failed `bumpHits` is reported. */
  logger: Logger;
  /** Pods that match it answer 410 `pod_deleted`. */
  denyList?: DenyList | null;
  /** Bytes of pods kept as ready responses (0: none). */
  podCacheBytes: number;
  /** The cache of ready responses to use, when shared (pods' own origins). */
  responseCache?: PodResponseCache;
  /** With `podDomain`: a pod's own URL, `/meta`'s `podUrl`. */
  podUrl?: ((id: string) => string) | undefined;
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
  const { request, id } = input;
  const { registry } = context;
  // The hot path, without a promise: a plain GET of a pod whose 200 is
  // ready, from a registry that can answer at once.
  if (
    request.method === "GET" && registry.getRecordNow !== undefined &&
    isPodId(id)
  ) {
    const record = registry.getRecordNow(id);
    if (record !== null && request.headers.get("If-None-Match") === null) {
      refuseDenied(context, record);
      const ready = readyResponse(input, context, record);
      if (ready !== null) return ready;
    }
  }
  return servePod(input, context);
}

async function servePod(
  input: RouteRequest,
  context: PodContext,
): Promise<Response> {
  const { request, id } = input;
  const record = await findRecord(context, id);
  const ifNoneMatch = request.headers.get("If-None-Match");
  const get = request.method === "GET";
  if (ifNoneMatch === null && get) {
    const ready = readyResponse(input, context, record);
    if (ready !== null) return ready;
  }
  const etag = `"${record.sha256}"`;
  // One list, validated once by the Response (a Headers object and then
  // set() calls would validate every value twice).
  const headers: [string, string][] = [
    ...await podHeadersFor(record, context),
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
  const body = registry.getBlobStream && !small
    ? await registry.getBlobStream(id)
    : await registry.getBlob(id);
  if (body === null) throw notFound(id);
  countHit(context, id);
  input.bodyBytes = record.blobSize;
  const response = new Response(
    body as Uint8Array<ArrayBuffer> | ReadableStream<Uint8Array<ArrayBuffer>>,
    { status: 200, headers },
  );
  return body instanceof Uint8Array
    ? cacheOf(context).put(id, record.sha256, response, body.length)
    : response;
}

/** A copy of the pod's ready `200`, its hit counted, or null. */
function readyResponse(
  input: RouteRequest,
  context: PodContext,
  record: Readonly<PodRecord>,
): Response | null {
  const cached = cacheOf(context).get(record.id, record.sha256);
  if (cached === null) return null;
  countHit(context, record.id);
  input.bodyBytes = record.blobSize;
  return cached;
}

/** Counts a hit; a registry that fails to count never fails the response. */
function countHit({ registry, logger }: PodContext, id: string): void {
  const report = (error: unknown) =>
    logger("warn", "Cannot count a hit", { id, error });
  try {
    registry.bumpHits(id).catch(report);
  } catch (error) {
    report(error);
  }
}

/** Ready responses, one cache per header context (base URL and options). */
const CACHES = new WeakMap<PodContext, PodResponseCache>();

function cacheOf(context: PodContext): PodResponseCache {
  if (context.responseCache !== undefined) return context.responseCache;
  let cache = CACHES.get(context);
  if (cache === undefined) {
    cache = new PodResponseCache(context.podCacheBytes);
    CACHES.set(context, cache);
  }
  return cache;
}

/**
 * Serves a pod's record as JSON, with its URL.
 *
 * @param id The path segment.
 * @param context Registry and base URL.
 * @returns 200 with the record.
 * @throws {BrokerError} `pod_not_found`, or `pod_deleted` for a pod taken
 * down.
 */
export async function handleMeta(
  id: string,
  context: PodContext,
): Promise<Response> {
  const record = await findRecord(context, id);
  return Response.json({
    id: record.id,
    url: `${context.baseUrl}/${record.id}`,
    ownerPubkey: record.ownerPubkey,
    blobSize: record.blobSize,
    sha256: record.sha256,
    contentSha256: record.contentSha256,
    name: record.name,
    createdAt: record.createdAt,
    uploadedAt: record.uploadedAt,
    hits: record.hits,
    ...(context.podUrl && { podUrl: context.podUrl(record.id) }),
  }, { headers: { "Cache-Control": "no-cache" } });
}

async function findRecord(
  context: PodContext,
  id: string,
): Promise<PodRecord> {
  const { registry } = context;
  // A malformed id never reaches the registry.
  if (!isPodId(id)) throw notFound(id);
  const record = await registry.getRecord(id);
  if (record !== null) {
    refuseDenied(context, record);
    return record;
  }
  if (await registry.isDeleted?.(id)) throw takenDown(id);
  throw notFound(id);
}

/** Throws `pod_deleted` when the deny list matches the pod. */
function refuseDenied(
  { denyList }: PodContext,
  record: Readonly<PodRecord>,
): void {
  if (denyList?.denies(record)) throw takenDown(record.id);
}

function takenDown(id: string): BrokerError {
  return new BrokerError(
    "pod_deleted",
    `Cannot serve pod '${id}': it was taken down by the operator`,
  );
}

/** The headers every pod gets in one context, built once per context. */
const POD_HEADERS = new WeakMap<PodContext, [string, string][]>();

function podHeadersOf(context: PodContext): [string, string][] {
  let pairs = POD_HEADERS.get(context);
  if (pairs === undefined) {
    const headers = new Headers({
      "Content-Type": "text/html; charset=utf-8",
      "Cache-Control": "public, max-age=300",
    });
    appendPodHeaders(headers, context.podHeaderOptions, context.signalUrl);
    pairs = [...headers];
    POD_HEADERS.set(context, pairs);
  }
  return pairs;
}

/**
 * Script hashes by blob digest, shared by every broker of the process (the
 * key names the bytes, so sharing is safe). Loaded on first use: the HTML
 * parser is not part of serving unless `scriptPolicy` is `"hashes"`.
 */
let scriptHashes: Promise<ScriptHashCache> | undefined;
function scriptHashCache(): Promise<ScriptHashCache> {
  scriptHashes ??= import("../../serving/script_hashes.ts").then((module) =>
    new module.ScriptHashCache()
  );
  return scriptHashes;
}

/** The pod headers of one pod: with `scriptPolicy: "hashes"`, its own. */
async function podHeadersFor(
  record: PodRecord,
  context: PodContext,
): Promise<[string, string][]> {
  if (context.podHeaderOptions.scriptPolicy !== "hashes") {
    return podHeadersOf(context);
  }
  const hashes = await (await scriptHashCache()).hashesOf(
    record.sha256,
    () => context.registry.getBlob(record.id),
  );
  if (hashes === null) throw notFound(record.id);
  const headers = new Headers({
    "Content-Type": "text/html; charset=utf-8",
    "Cache-Control": "public, max-age=300",
  });
  appendPodHeaders(
    headers,
    context.podHeaderOptions,
    context.signalUrl,
    hashes,
  );
  return [...headers];
}

function matchesEtag(ifNoneMatch: string | null, etag: string): boolean {
  if (ifNoneMatch === null) return false;
  return ifNoneMatch.split(",").some((tag) => {
    const trimmed = tag.trim();
    return trimmed === "*" || trimmed.replace(/^W\//, "") === etag;
  });
}

function notFound(id: string): BrokerError {
  return new BrokerError(
    "pod_not_found",
    `Cannot find a pod with id '${id.slice(0, 64)}'`,
  );
}
