/**
 * Bodies kept beside the web objects that carry them, for an adapter that
 * moves bytes itself (`node:http`), where a web stream between the socket
 * and the broker costs more than the broker's own work on a small answer
 * or upload:
 * - the bytes of a response the broker builds from bytes it holds (JSON
 *   answers, problems, the front page, a pod's cached `200`), sent with one
 *   `end` instead of read from the `Response`'s stream;
 * - how a request's body is read, whole or as a stream, straight from the
 *   socket instead of through the `Request`.
 *
 * @module
 */

const held = new WeakMap<Response, Uint8Array>();

/**
 * A response whose body is `body`, kept beside it for
 * {@linkcode heldBody}.
 *
 * @param body The bytes, never changed afterwards.
 * @param init Its status and headers.
 * @returns The response.
 */
export function heldResponse(body: Uint8Array, init: ResponseInit): Response {
  const response = new Response(body as Uint8Array<ArrayBuffer>, init);
  held.set(response, body);
  return response;
}

/**
 * The body of `response` when it was built by {@linkcode heldResponse} and
 * not yet read; else undefined (the adapter reads its stream).
 *
 * @param response A response about to be sent.
 * @returns Its bytes, or undefined.
 */
export function heldBody(response: Response): Uint8Array | undefined {
  return response.bodyUsed ? undefined : held.get(response);
}

/**
 * A copy of `response` to send, which keeps its held body.
 *
 * @param response A response, held or not.
 * @returns Its `clone()`.
 */
export function cloneHeld(response: Response): Response {
  const copy = response.clone();
  const body = held.get(response);
  if (body !== undefined) held.set(copy, body);
  return copy;
}

/**
 * A request body that the adapter reads itself, for the one reader of
 * upload bodies (`receiveBody`): whole, for a small body with a known
 * length, or as a stream read as asked. Exactly one of them is called, at
 * most once.
 */
export interface HeldRequestBody {
  /** The whole body, in a buffer of its own. */
  whole(): Promise<Uint8Array>;
  /** The body as a stream that reads nothing until asked. */
  stream(): ReadableStream<Uint8Array>;
}

const requestBodies = new WeakMap<Request, HeldRequestBody>();

/**
 * Keeps `body` beside `request`, for {@linkcode heldRequestBody}.
 *
 * @param request A request whose own body is left unread.
 * @param body How its body is read.
 * @returns `request`.
 */
export function holdRequestBody(
  request: Request,
  body: HeldRequestBody,
): Request {
  requestBodies.set(request, body);
  return request;
}

/**
 * How the adapter reads the body of `request`, or undefined when it is
 * read from `request` itself.
 *
 * @param request A request with a body.
 * @returns Its held body, or undefined.
 */
export function heldRequestBody(
  request: Request,
): HeldRequestBody | undefined {
  return requestBodies.get(request);
}
