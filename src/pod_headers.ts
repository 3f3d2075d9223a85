/**
 * The response headers of a served pod, in one table: the sandbox policy
 * (always sent), the content policy, Permissions-Policy and the rest.
 *
 * @module
 */

import type { PodHeaderOptions } from "./types.ts";

/** Sandbox tokens of the first Content-Security-Policy (no `allow-same-origin`). */
export const DEFAULT_SANDBOX =
  "allow-scripts allow-forms allow-modals allow-downloads";

/**
 * The default content policy. `connect-src` names the broker's signaling URL
 * explicitly, since older Safari does not let `'self'` match WebSocket schemes.
 *
 * @param signalUrl The broker's `ws://` or `wss://` signaling URL.
 * @returns The policy text.
 */
export function defaultContentPolicy(signalUrl: string): string {
  return [
    "default-src 'none'",
    "script-src 'unsafe-inline' 'wasm-unsafe-eval'",
    "style-src 'unsafe-inline'",
    "img-src data: blob:",
    "media-src data: blob:",
    "font-src data:",
    `connect-src 'self' ${signalUrl}`,
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
}

/** Powerful features a chat pod does not need, all denied. */
export const DEFAULT_PERMISSIONS_POLICY: string = [
  "accelerometer",
  "ambient-light-sensor",
  "autoplay",
  "battery",
  "bluetooth",
  "camera",
  "display-capture",
  "document-domain",
  "encrypted-media",
  "geolocation",
  "gyroscope",
  "hid",
  "idle-detection",
  "local-fonts",
  "magnetometer",
  "microphone",
  "midi",
  "payment",
  "picture-in-picture",
  "publickey-credentials-get",
  "screen-wake-lock",
  "serial",
  "usb",
  "xr-spatial-tracking",
].map((feature) => `${feature}=()`).join(", ");

/** Headers every pod response carries besides the two policies. */
export const STATIC_POD_HEADERS = {
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
  "Cross-Origin-Resource-Policy": "same-origin",
  "X-Frame-Options": "DENY",
  "X-Robots-Tag": "noindex, nofollow",
} as const;

/**
 * Checks sandbox tokens at start-up.
 *
 * @param sandbox Space-separated tokens.
 * @throws {TypeError} When a token would give pods the broker's origin.
 */
export function assertSafeSandbox(sandbox: string): void {
  if (/(^|\s)allow-same-origin(\s|$)/i.test(sandbox)) {
    throw new TypeError(
      "Cannot use option 'podHeaderOptions.sandbox': 'allow-same-origin' would give every pod " +
        "the broker's origin",
    );
  }
}

/**
 * Appends the pod headers to `headers`: two Content-Security-Policy headers
 * (a browser enforces both), Permissions-Policy and {@linkcode STATIC_POD_HEADERS}.
 *
 * @param headers Where to add them.
 * @param options Overrides from `podHeaderOptions`.
 * @param signalUrl The broker's signaling URL for the default content policy.
 */
export function appendPodHeaders(
  headers: Headers,
  options: PodHeaderOptions,
  signalUrl: string,
): void {
  const sandbox = options.sandbox ?? DEFAULT_SANDBOX;
  headers.append(
    "Content-Security-Policy",
    `sandbox ${sandbox}; object-src 'none'; base-uri 'none'`.replace(
      "sandbox ;",
      "sandbox;",
    ),
  );
  headers.append(
    "Content-Security-Policy",
    options.csp ?? defaultContentPolicy(signalUrl),
  );
  headers.set(
    "Permissions-Policy",
    options.permissionsPolicy ?? DEFAULT_PERMISSIONS_POLICY,
  );
  for (const [name, value] of Object.entries(STATIC_POD_HEADERS)) {
    headers.set(name, value);
  }
}
