/**
 * `GET`/`HEAD /` on the broker's host: a small static page that says what
 * this broker is, its version, where `/health` is, how to upload and where
 * the documentation is (it links only to its own paths); with `Accept: application/json`, the same facts as
 * JSON. It holds no user content (not even the `Host` it was asked by), so
 * it is built once per broker, and it carries a strict policy of its own:
 * no script, no load, one hashed stylesheet. A pod host's `/` is the pod,
 * not this page.
 *
 * @module
 */

import { VERSION } from "../../version.ts";
import { heldResponse } from "../../_util/held_body.ts";
import type { RouteRequest } from "../router.ts";

/**
 * Where the documentation is read: it ships with the source the broker runs
 * from, so the page names it rather than link to a site.
 */
export const DOCS =
  "README.md and docs/ in the pod-broker source: a clone of its repository, or the README.md of the npm package";

/** The facts the front page states, in HTML and as JSON. */
export interface FrontFacts {
  /** What answers here. */
  name: "pod-broker";
  /** One sentence on what it does. */
  description: string;
  /** The broker's version. */
  version: string;
  /** The liveness path. */
  health: string;
  /** How to upload a pod. */
  upload: {
    method: "POST";
    path: string;
    contentType: "text/html";
    maxBytes: number;
  };
  /** The WebSocket signaling path. */
  signaling: string;
  /** Where the documentation is: files of the source, not a link. */
  docs: string;
}

/** The front page's options: what differs from one broker to another. */
export interface FrontPageOptions {
  /** The upload limit, in bytes. */
  maxBlobBytes: number;
}

const STYLE =
  "body{font:16px/1.5 system-ui,sans-serif;max-width:40em;margin:2em auto;padding:0 1em}code{font-size:.95em}";

/**
 * The page's own policy: nothing may load or run but its one stylesheet,
 * allowed by hash.
 */
export const FRONT_PAGE_CSP: string = [
  "default-src 'none'",
  // The hash of STYLE, written out so that a start hashes nothing
  // (tests/unit/front_page_test.ts holds it to the page's stylesheet).
  "style-src 'sha256-Kw0z+nZaQ9KBy066BPiAYf9M36GVGJ+lvQI21qBVtAo='",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

const COMMON_HEADERS = {
  "Cache-Control": "no-cache",
  "Vary": "Accept",
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
  "X-Frame-Options": "DENY",
} as const;

/**
 * The facts of a broker's front page.
 *
 * @param options The upload limit.
 * @returns The facts, the same in both forms.
 */
export function frontFacts(options: FrontPageOptions): FrontFacts {
  return {
    name: "pod-broker",
    description:
      "This broker verifies and serves signed single-file web apps (pods) and relays WebRTC signaling between their visitors.",
    version: VERSION,
    health: "/health",
    upload: {
      method: "POST",
      path: "/pods",
      contentType: "text/html",
      maxBytes: options.maxBlobBytes,
    },
    signaling: "/signal",
    docs: DOCS,
  };
}

/**
 * Builds the handler of `GET`/`HEAD /`: both bodies are made once.
 *
 * @param options The upload limit.
 * @returns The handler; it sets `input.bodyBytes`.
 */
export function createFrontPage(
  options: FrontPageOptions,
): (input: RouteRequest) => Response {
  const facts = frontFacts(options);
  const html = new TextEncoder().encode(renderHtml(facts));
  const json = new TextEncoder().encode(JSON.stringify(facts));
  return (input) => {
    const wantsJson = prefersJson(input.request.headers.get("Accept"));
    const body = wantsJson ? json : html;
    const headers: Record<string, string> = {
      ...COMMON_HEADERS,
      "Content-Type": wantsJson
        ? "application/json"
        : "text/html; charset=utf-8",
      "Content-Length": String(body.length),
    };
    if (!wantsJson) headers["Content-Security-Policy"] = FRONT_PAGE_CSP;
    const head = input.request.method === "HEAD";
    input.bodyBytes = head ? 0 : body.length;
    return head
      ? new Response(null, { headers })
      : heldResponse(body, { headers });
  };
}

/** The most media ranges of `Accept` read; the rest are ignored. */
const MAX_MEDIA_RANGES = 32;

/**
 * Whether an `Accept` header prefers JSON to HTML: the quality of
 * `application/json` (or `application/*`) is above that of `text/html`
 * (or `text/*`, or `*\/*`). Without the header, HTML.
 *
 * @param accept The `Accept` header, or null.
 * @returns True for JSON.
 */
export function prefersJson(accept: string | null): boolean {
  if (accept === null) return false;
  let json = 0;
  let html = 0;
  let jsonExact = false;
  let htmlExact = false;
  for (const range of accept.split(",").slice(0, MAX_MEDIA_RANGES)) {
    const [type = "", ...params] = range.split(";");
    const media = type.trim().toLowerCase();
    const q = qualityOf(params);
    if (media === "application/json") [json, jsonExact] = [q, true];
    else if (media === "text/html") [html, htmlExact] = [q, true];
    else if (media === "application/*" && !jsonExact) json = Math.max(json, q);
    else if ((media === "text/*" || media === "*/*") && !htmlExact) {
      html = Math.max(html, q);
    }
  }
  return json > html;
}

function qualityOf(params: string[]): number {
  for (const param of params) {
    const [key, value] = param.split("=").map((part) => part.trim());
    if (key?.toLowerCase() === "q") {
      const q = Number(value);
      return Number.isFinite(q) && q >= 0 && q <= 1 ? q : 0;
    }
  }
  return 1;
}

function renderHtml(facts: FrontFacts): string {
  const mib = (facts.upload.maxBytes / 1024 / 1024).toFixed(1).replace(
    /\.0$/,
    "",
  );
  // Every value here is the broker's own (no request data): still escaped.
  const e = escapeHtml;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>pod-broker ${e(facts.version)}</title>
<style>${STYLE}</style>
</head>
<body>
<h1>pod-broker ${e(facts.version)}</h1>
<p>${e(facts.description)}</p>
<ul>
<li>Is it up? <a href="${e(facts.health)}"><code>${
    e(facts.health)
  }</code></a> answers JSON with <code>"status": "ok"</code>.</li>
<li>Upload a signed pod: <code>POST ${
    e(facts.upload.path)
  }</code> with <code>Content-Type: ${
    e(facts.upload.contentType)
  }</code>, at most ${mib} MiB; the answer names the pod's URL.</li>
<li>Signaling: a WebSocket at <code>${e(facts.signaling)}</code>.</li>
<li>Documentation: ${e(facts.docs)}.</li>
</ul>
</body>
</html>
`;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
