/**
 * The response headers of a served pod, in one table: the sandbox policy
 * (always sent), the content policy, Permissions-Policy and the rest. With
 * the strict script policy (`scriptPolicy: "hashes"`) the content policy's
 * `script-src` lists a `'sha256-…'` source for each inline script of the pod
 * (see `script_hashes.ts`) instead of `'unsafe-inline'`.
 *
 * @module
 */

/**
 * How a pod's inline scripts are allowed: `"unsafe-inline"` (any inline
 * script, the default) or `"hashes"` (only the scripts the pod was uploaded
 * with, by their SHA-256; a script injected at run time does not run).
 */
export type ScriptPolicy = "unsafe-inline" | "hashes";

/** The values of {@linkcode ScriptPolicy}, the default first. */
export const SCRIPT_POLICIES: readonly ScriptPolicy[] = [
  "unsafe-inline",
  "hashes",
];

/** Response headers for served pods (DESIGN section 3). */
export interface PodHeaderOptions {
  /** Replaces the content policy (the second Content-Security-Policy). */
  csp?: string;
  /** Replaces the Permissions-Policy header. */
  permissionsPolicy?: string;
  /**
   * Sandbox tokens of the first Content-Security-Policy.
   * `allow-same-origin` is refused.
   * @default {"allow-scripts allow-forms allow-modals allow-downloads"}
   */
  sandbox?: string;
  /**
   * How inline scripts are allowed: `"unsafe-inline"`, or `"hashes"` (the
   * content policy lists the SHA-256 of each inline script of the pod).
   * @default {"unsafe-inline"}
   */
  scriptPolicy?: ScriptPolicy;
}

/** {@linkcode PodHeaderOptions} with the script policy. */
export type PodHeaderOptionsWithScripts = PodHeaderOptions & {
  /**
   * How inline scripts are allowed.
   * @default {"unsafe-inline"}
   */
  scriptPolicy?: ScriptPolicy;
};

/** Sandbox tokens of the first Content-Security-Policy (no `allow-same-origin`). */
export const DEFAULT_SANDBOX =
  "allow-scripts allow-forms allow-modals allow-downloads";

/**
 * The default content policy. `connect-src` names the broker's signaling URL
 * explicitly, since older Safari does not let `'self'` match WebSocket schemes.
 *
 * @param signalUrl The broker's `ws://` or `wss://` signaling URL.
 * @param scriptHashes With the strict script policy: the `'sha256-…'`
 * sources of the pod's inline scripts, listed instead of `'unsafe-inline'`.
 * @returns The policy text.
 *
 * @example The strict script policy
 * ```ts
 * import assert from "node:assert/strict";
 * import { defaultContentPolicy } from "./pod_headers.ts";
 *
 * const policy = defaultContentPolicy("wss://b.example/signal", ["'sha256-AAAA'"]);
 * assert.match(policy, /script-src 'sha256-AAAA' 'wasm-unsafe-eval';/);
 * ```
 */
export function defaultContentPolicy(
  signalUrl: string,
  scriptHashes?: readonly string[],
): string {
  const scripts = scriptHashes ?? ["'unsafe-inline'"];
  return [
    "default-src 'none'",
    ["script-src", ...scripts, "'wasm-unsafe-eval'"].join(" "),
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
 * A content policy with its `script-src` made strict: `'unsafe-inline'`
 * dropped and `scriptHashes` added. A policy without `script-src` is
 * returned as it is (its `default-src` governs scripts).
 *
 * @param policy A content policy, such as the `csp` option.
 * @param scriptHashes The `'sha256-…'` sources of the pod's inline scripts.
 * @returns The policy with the hashes.
 *
 * @example Make an operator's policy strict
 * ```ts
 * import assert from "node:assert/strict";
 * import { withScriptHashes } from "./pod_headers.ts";
 *
 * assert.equal(
 *   withScriptHashes("default-src 'none'; script-src 'unsafe-inline' https://cdn.example", ["'sha256-AAAA'"]),
 *   "default-src 'none'; script-src https://cdn.example 'sha256-AAAA'",
 * );
 * ```
 */
export function withScriptHashes(
  policy: string,
  scriptHashes: readonly string[],
): string {
  return policy.split(";").map((directive) => {
    const [name, ...sources] = directive.trim().split(/[\t\n\f\r ]+/);
    if (name?.toLowerCase() !== "script-src") return directive;
    const kept = sources.filter((source) =>
      source.toLowerCase() !== "'unsafe-inline'"
    );
    const lead = directive.match(/^\s*/)![0];
    return `${lead}${[name, ...kept, ...scriptHashes].join(" ")}`;
  }).join(";");
}

/**
 * Appends the pod headers to `headers`: two Content-Security-Policy headers
 * (a browser enforces both), Permissions-Policy and {@linkcode STATIC_POD_HEADERS}.
 *
 * @param headers Where to add them.
 * @param options Overrides from `podHeaderOptions`.
 * @param signalUrl The broker's signaling URL for the default content policy.
 * @param scriptHashes With `scriptPolicy: "hashes"`: the pod's inline
 * script hashes (`ScriptHashCache.hashesOf`); omitted, no inline script may
 * run. Ignored with the default policy.
 *
 * @example The headers of a pod under the strict script policy
 * ```ts
 * import assert from "node:assert/strict";
 * import { appendPodHeaders } from "./pod_headers.ts";
 * import { computeScriptHashes } from "./script_hashes.ts";
 *
 * const pod = new TextEncoder().encode("<script>start()</script>");
 * const headers = new Headers();
 * appendPodHeaders(headers, { scriptPolicy: "hashes" }, "wss://b.example/signal", computeScriptHashes(pod));
 * const content = headers.get("Content-Security-Policy")!.split(", ")[1]!;
 * assert.match(content, /script-src 'sha256-[^']+' 'wasm-unsafe-eval'/);
 * assert.doesNotMatch(content, /unsafe-inline' 'wasm/);
 * ```
 */
export function appendPodHeaders(
  headers: Headers,
  options: PodHeaderOptionsWithScripts,
  signalUrl: string,
  scriptHashes?: readonly string[],
): void {
  const hashes = options.scriptPolicy === "hashes"
    ? scriptHashes ?? []
    : undefined;
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
    options.csp === undefined
      ? defaultContentPolicy(signalUrl, hashes)
      : hashes === undefined
      ? options.csp
      : withScriptHashes(options.csp, hashes),
  );
  headers.set(
    "Permissions-Policy",
    options.permissionsPolicy ?? DEFAULT_PERMISSIONS_POLICY,
  );
  for (const [name, value] of Object.entries(STATIC_POD_HEADERS)) {
    headers.set(name, value);
  }
}
