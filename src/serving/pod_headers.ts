/**
 * The response headers of a served pod, in one table: the sandbox policy
 * (always sent), the content policy, Permissions-Policy and the rest. With
 * the strict script policy (`scriptPolicy: "hashes"`) the content policy's
 * `script-src` lists a `'sha256-…'` source for each inline script of the pod
 * (see `script_hashes.ts`) instead of `'unsafe-inline'`, or `'none'` when the
 * hashes would be too long. Content-Type and Cache-Control are set here too:
 * this file decides every header of a served pod but its ETag and length.
 *
 * @module
 */

import { Lru } from "../_util/lru.ts";
import { type PodPermission, withGrants } from "./permissions.ts";
import type { ScriptHashes } from "./script_hashes.ts";

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

/**
 * Which pods served at their own origin (the `podDomain` option) run at
 * that origin, with its storage: `"all"`, or `"granted"`, only a pod
 * granted a powerful feature (declared and allowed, see `permissions.ts`);
 * any other runs at an opaque origin (see {@linkcode sandboxOf}).
 */
export type PodStorage = "all" | "granted";

/** The values of {@linkcode PodStorage}, the default first. */
export const POD_STORAGES: readonly PodStorage[] = ["all", "granted"];

/** Response headers for served pods (DESIGN section 3). */
export interface PodHeaderOptions {
  /** Replaces the content policy (the second Content-Security-Policy). */
  csp?: string;
  /** Replaces the Permissions-Policy header. */
  permissionsPolicy?: string;
  /**
   * Sandbox tokens of the first Content-Security-Policy.
   * `allow-same-origin` is refused.
   * @default {"allow-scripts allow-forms allow-modals allow-downloads allow-popups allow-popups-to-escape-sandbox"}
   */
  sandbox?: string;
  /**
   * How inline scripts are allowed: `"unsafe-inline"`, or `"hashes"` (the
   * content policy lists the SHA-256 of each inline script of the pod).
   * @default {"unsafe-inline"}
   */
  scriptPolicy?: ScriptPolicy;
  /**
   * On a pod's own origin: which pods run at that origin, with storage:
   * `"all"`, or `"granted"`, only those granted a powerful feature (the
   * others run at an opaque origin, where no document they make gets the
   * camera or the microphone).
   * @default {"all"}
   */
  storage?: "all" | "granted";
}

/**
 * Sandbox tokens of the first Content-Security-Policy (no
 * `allow-same-origin`). A link with `target="_blank"` and `window.open()`
 * open a window outside the sandbox (`allow-popups`,
 * `allow-popups-to-escape-sandbox`), as on any page: a pod can navigate
 * itself anyway, so a popup reaches nothing new. Forms fire their `submit`
 * event (`allow-forms`), and `form-action 'none'` keeps them from sending
 * anything anywhere.
 */
export const DEFAULT_SANDBOX =
  "allow-scripts allow-forms allow-modals allow-downloads allow-popups allow-popups-to-escape-sandbox";

/**
 * The sandbox tokens a pod is served with: the options' tokens (on a pod's
 * own origin they hold `allow-same-origin`, see `pod_origin.ts`), without
 * `allow-same-origin` for a pod on its own origin granted nothing when
 * `storage` is `"granted"`. Permissions-Policy binds only the document it
 * came with: a popup the pod opens (`about:blank`, or a `blob:` of its own
 * HTML) or its own tab navigated to a `blob:` it made is a document at the
 * pod's origin without it, and Firefox reads no such header at all. An
 * opaque origin holds in every document the pod makes, in Chromium and
 * Firefox: none gets the camera or the microphone
 * (`tests/e2e/made_documents_test.ts`). This only ever takes a token away.
 *
 * @param options The pod header options (on a pod host, widened).
 * @param grants The features granted to the pod's own origin, or null on
 * the broker's host.
 * @returns The tokens, space-separated.
 *
 * @example A pod granted nothing, under `storage: "granted"`
 * ```ts
 * import assert from "node:assert/strict";
 * import { sandboxOf } from "./pod_headers.ts";
 *
 * const options = { sandbox: "allow-scripts allow-same-origin", storage: "granted" as const };
 * assert.equal(sandboxOf(options, []), "allow-scripts");
 * assert.equal(sandboxOf(options, ["camera"]), "allow-scripts allow-same-origin");
 * ```
 */
export function sandboxOf(
  options: PodHeaderOptions,
  grants: readonly PodPermission[] | null,
): string {
  const sandbox = options.sandbox ?? DEFAULT_SANDBOX;
  if (options.storage !== "granted" || grants === null || grants.length > 0) {
    return sandbox;
  }
  return sandbox.split(/[\t\n\f\r ]+/)
    .filter((token) =>
      token !== "" && token.toLowerCase() !== "allow-same-origin"
    )
    .join(" ");
}

/**
 * The default content policy. `connect-src` names the broker's own origin,
 * in its HTTP and WebSocket schemes, beside `'self'`: inside a sandboxed
 * document WebKit matches `'self'` to nothing, and older Safari never lets
 * it match a WebSocket scheme. So a pod reaches the broker it came from
 * (signaling, its `/meta`) in every browser, and nothing else on the
 * network. `data:` and `blob:` are local: a pod may read its own data that
 * way, as messengers let webxdc apps do.
 *
 * @param signalUrl The broker's `ws://` or `wss://` signaling URL.
 * @param scriptHashes With the strict script policy: the `'sha256-…'`
 * sources of the pod's inline scripts, listed instead of `'unsafe-inline'`
 * (`"too-long"`: `script-src 'none'`).
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
  scriptHashes?: ScriptHashes,
): string {
  const scripts = scriptHashes === "too-long"
    ? ["'none'"]
    : [...scriptHashes ?? ["'unsafe-inline'"], "'wasm-unsafe-eval'"];
  return [
    "default-src 'none'",
    ["script-src", ...scripts].join(" "),
    "style-src 'unsafe-inline'",
    "img-src data: blob:",
    "media-src data: blob:",
    "font-src data:",
    `connect-src 'self' ${brokerOrigins(signalUrl)} data: blob:`,
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
}

/** `http(s)://HOST ws(s)://HOST` of the signaling URL `ws(s)://HOST/signal`. */
function brokerOrigins(signalUrl: string): string {
  const ws = new URL(signalUrl).origin;
  return `${ws.replace(/^ws/, "http")} ${ws}`;
}

/**
 * Powerful features, all denied unless a pod on its own origin is granted
 * one (see `permissions.ts`). Only features browsers know are listed:
 * Chromium logs an error for each one it does not recognize. The clipboard's
 * write and full screen are left to the browser's default (the document's
 * own origin, on a click), as they always were: they never prompt, and a
 * pod on a broker's host, which cannot be granted anything, keeps them.
 */
export const DEFAULT_PERMISSIONS_POLICY: string = [
  "accelerometer",
  "autoplay",
  "camera",
  "clipboard-read",
  "display-capture",
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
  "Content-Type": "text/html; charset=utf-8",
  "Cache-Control": "public, max-age=300",
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

/** Directives that govern inline script elements. */
const SCRIPT_DIRECTIVES = ["script-src", "script-src-elem"];

/**
 * A content policy with its `script-src` (and `script-src-elem`) made
 * strict: `'unsafe-inline'` dropped and `scriptHashes` added, or every
 * source replaced by `'none'` when the hashes are `"too-long"`. A policy
 * without these directives is returned as it is: {@linkcode
 * scriptPolicyConflict} refuses it at start-up.
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
  scriptHashes: ScriptHashes,
): string {
  return policy.split(";").map((directive) => {
    const [name, ...sources] = directive.trim().split(/[\t\n\f\r ]+/);
    if (!SCRIPT_DIRECTIVES.includes(name!.toLowerCase())) return directive;
    const kept = scriptHashes === "too-long" ? ["'none'"] : [
      ...sources.filter((source) => source.toLowerCase() !== "'unsafe-inline'"),
      ...scriptHashes,
    ];
    const lead = directive.match(/^\s*/)![0];
    return `${lead}${[name, ...kept].join(" ")}`;
  }).join(";");
}

/**
 * Why the strict script policy would not hold with these options, or null
 * when it would (or is off). With an operator's `csp`, the hashes go into
 * its `script-src`: a policy without one, or one whose `script-src-elem` or
 * `script-src-attr` allows `'unsafe-inline'`, would let any inline script
 * run (or none), so the broker refuses to start with it.
 *
 * @param options The pod header options.
 * @returns The reason, worded to follow "option 'podHeaderOptions.csp'".
 *
 * @example A policy without script-src
 * ```ts
 * import assert from "node:assert/strict";
 * import { scriptPolicyConflict } from "./pod_headers.ts";
 *
 * assert.equal(scriptPolicyConflict({ scriptPolicy: "hashes", csp: "script-src 'self'" }), null);
 * assert.match(scriptPolicyConflict({ scriptPolicy: "hashes", csp: "default-src 'self'" })!, /no script-src/);
 * ```
 */
export function scriptPolicyConflict(options: PodHeaderOptions): string | null {
  if (options.scriptPolicy !== "hashes" || options.csp === undefined) {
    return null;
  }
  const directives = new Map<string, string[]>();
  for (const directive of options.csp.split(/[;,]/)) {
    const [name, ...sources] = directive.trim().toLowerCase().split(
      /[\t\n\f\r ]+/,
    );
    if (name) directives.set(name, [...directives.get(name) ?? [], ...sources]);
  }
  if (!directives.has("script-src")) {
    return "has no script-src, so the script policy 'hashes' cannot list the pods' script hashes: add one (such as script-src 'self')";
  }
  for (const name of ["script-src-elem", "script-src-attr"]) {
    if (directives.get(name)?.includes("'unsafe-inline'")) {
      return `has ${name} 'unsafe-inline', which lets any inline script run under the script policy 'hashes': remove it`;
    }
  }
  return null;
}

/**
 * The headers of a served pod (all but its ETag and Content-Length): two
 * Content-Security-Policy headers (a browser enforces both),
 * Permissions-Policy and {@linkcode STATIC_POD_HEADERS}.
 *
 * @param options Overrides from `podHeaderOptions`.
 * @param signalUrl The broker's signaling URL for the default content policy.
 * @param scriptHashes With `scriptPolicy: "hashes"`: the pod's inline
 * script hashes (`ScriptHashCache.hashesOf`); omitted, no inline script may
 * run. Ignored with the default policy.
 * @param grants The features Permissions-Policy grants the pod's own
 * origin, on a pod host; null (the default) on the broker's host (see
 * `permissions.ts`).
 * @returns The headers as name and value pairs.
 *
 * @example The headers of a pod under the strict script policy
 * ```ts
 * import assert from "node:assert/strict";
 * import { podHeaderList } from "./pod_headers.ts";
 * import { computeScriptHashes } from "./script_hashes.ts";
 *
 * const pod = new TextEncoder().encode("<script>start()</script>");
 * const headers = new Headers(
 *   podHeaderList({ scriptPolicy: "hashes" }, "wss://b.example/signal", computeScriptHashes(pod)),
 * );
 * const content = headers.get("Content-Security-Policy")!.split(", ")[1]!;
 * assert.match(content, /script-src 'sha256-[^']+' 'wasm-unsafe-eval'/);
 * assert.doesNotMatch(content, /unsafe-inline' 'wasm/);
 * ```
 */
export function podHeaderList(
  options: PodHeaderOptions,
  signalUrl: string,
  scriptHashes?: ScriptHashes,
  grants: readonly PodPermission[] | null = null,
): [string, string][] {
  const hashes = options.scriptPolicy === "hashes"
    ? scriptHashes ?? []
    : undefined;
  const sandbox = sandboxOf(options, grants);
  return [
    ...Object.entries(STATIC_POD_HEADERS),
    [
      "Content-Security-Policy",
      `sandbox ${sandbox}; object-src 'none'; base-uri 'none'`.replace(
        "sandbox ;",
        "sandbox;",
      ),
    ],
    [
      "Content-Security-Policy",
      options.csp === undefined
        ? defaultContentPolicy(signalUrl, hashes)
        : hashes === undefined
        ? options.csp
        : withScriptHashes(options.csp, hashes),
    ],
    [
      "Permissions-Policy",
      withGrants(
        options.permissionsPolicy ?? DEFAULT_PERMISSIONS_POLICY,
        grants,
      ),
    ],
  ];
}

/** Base URLs (Host names) whose header list a {@linkcode PodHeaders} keeps. */
const HEADER_LISTS_KEPT = 64;

/**
 * A broker's pod headers: the list for each signaling URL (and grants) is
 * built once (the last {@linkcode HEADER_LISTS_KEPT} are kept), and a pod
 * with its own script hashes gets a list of its own.
 */
export class PodHeaders {
  readonly #options: PodHeaderOptions;
  readonly #lists = new Lru<string, readonly [string, string][]>({
    maxEntries: HEADER_LISTS_KEPT,
  });

  /**
   * @param options Overrides from `podHeaderOptions`.
   */
  constructor(options: PodHeaderOptions) {
    this.#options = options;
  }

  /** Whether pods get their own script hashes (`scriptPolicy: "hashes"`). */
  get hashesScripts(): boolean {
    return this.#options.scriptPolicy === "hashes";
  }

  /**
   * The pod headers under `baseUrl`, with `scriptHashes` when pods get
   * their own. The list is shared: copy it before adding to it.
   *
   * @param baseUrl The public base URL of the request.
   * @param scriptHashes The pod's script hashes (`scriptPolicy: "hashes"`).
   * @param grants The features granted to the pod's own origin, on a pod
   * host; null on the broker's host.
   * @returns The headers as name and value pairs.
   */
  of(
    baseUrl: string,
    scriptHashes?: ScriptHashes,
    grants: readonly PodPermission[] | null = null,
  ): readonly [string, string][] {
    const signalUrl = signalUrlOf(baseUrl);
    if (this.hashesScripts) {
      return podHeaderList(this.#options, signalUrl, scriptHashes, grants);
    }
    const key = `${baseUrl} ${grants?.join(" ") ?? "-"}`;
    let list = this.#lists.get(key);
    if (list === undefined) {
      list = podHeaderList(this.#options, signalUrl, undefined, grants);
      this.#lists.set(key, list);
    }
    return list;
  }
}

/**
 * The broker's signaling URL under a base URL.
 *
 * @param baseUrl `http(s)://host[:port][/path]`, without a trailing slash.
 * @returns The `ws(s)://` URL of `/signal`.
 */
export function signalUrlOf(baseUrl: string): string {
  return `${baseUrl.replace(/^http/, "ws")}/signal`;
}
