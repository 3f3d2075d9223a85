/**
 * What `pod-broker dev` serves: the folder's page built as `build` builds
 * it, plus one module that only dev adds, which asks the broker for a newer
 * version with the client's own `checkForUpdate()` and reloads the tab when
 * there is one. That check uses nothing a published pod cannot use (the
 * pod's own `/`, or `/:id/meta` on the broker's host), so the reload works
 * under the very headers a broker sends. When the build fails, the page is
 * the error, with the same module, so the tab shows the error and then the
 * fixed page.
 *
 * A webxdc app (`APP.xdc`) is built as `import` builds it (`import.ts`),
 * named by its manifest; a bundle that cannot be read shows as the error
 * page as well, until it is packed again.
 *
 * @module
 */

import { dirname, resolve } from "node:path";
import { BuildError, buildPod } from "../bundler/mod.ts";
import { bundleScript, withBundler } from "../bundler/bundle.ts";
import { escapeInlineScript } from "../bundler/inline.ts";
import { clientUrl } from "../bundler/client_url.ts";
import { Confinement } from "../bundler/confine.ts";
import { signPod } from "../pod/sign.ts";
import { isXdcPath, XdcError } from "../bundler/xdc.ts";
import { importApp } from "./import.ts";

/** How often an open tab asks whether the pod was rebuilt (ms). */
export const DEV_POLL_MS = 400;

/** The dev-only module, before bundling with the client. */
const RELOAD_SOURCE = `import { checkForUpdate } from "pod-broker/client";
// Added by pod-broker dev, never by build: reload when the folder is rebuilt.
const poll = async () => {
  try {
    if (await checkForUpdate()) return location.reload();
  } catch {
    // The dev server is restarting, or gone: keep asking.
  }
  setTimeout(poll, ${DEV_POLL_MS});
};
setTimeout(poll, ${DEV_POLL_MS});
`;

/** One build of the folder, ready to sign. */
export interface DevBuild {
  /** The page, unsigned: the built page or the error page, with the reload module. */
  html: string;
  /** The build's warnings, or its problems when it failed. */
  lines: string[];
  /** Whether the build failed (`html` is then the error page). */
  failed: boolean;
  /** What made it fail, when it failed. */
  error?: Error;
  /** A webxdc app's name, from its manifest. */
  name?: string | undefined;
}

/**
 * Bundles the reload module once (with the client, as `build` would).
 *
 * @param entry The page (its folder is the bundle's root).
 * @returns The `<script type="module">` element to add to every page.
 */
export async function reloadScript(entry: string): Promise<string> {
  const root = dirname(resolve(entry));
  const client = clientUrl(undefined);
  const confinement = await Confinement.open(root, client);
  const bundle = await withBundler(() =>
    bundleScript(
      { code: RELOAD_SOURCE, sourcefile: "pod-broker-dev.js", line: 1 },
      true,
      { root, client, confinement },
    )
  );
  if (bundle.problems.length > 0) {
    throw new Error(
      `Cannot bundle the reload module: ${bundle.problems[0]!.message}`,
    );
  }
  return `<script type="module">${escapeInlineScript(bundle.code)}</script>`;
}

/**
 * Builds the page, adds the reload module; the error page when it fails.
 *
 * @param entry The page.
 * @param script The reload module's element ({@linkcode reloadScript}).
 * @returns The page and what to print.
 */
export async function buildForDev(
  entry: string,
  script: string,
): Promise<DevBuild> {
  try {
    const xdc = isXdcPath(entry);
    const { html, warnings, name } = xdc
      ? await importApp(entry)
      : { ...await buildPod(entry), name: undefined };
    return {
      html: new TextDecoder().decode(html) + script,
      lines: warnings,
      failed: false,
      ...(xdc ? { name } : {}),
    };
  } catch (error) {
    const lines = problemLines(error);
    return {
      html: errorPage((error as Error).message, lines) + script,
      lines,
      failed: true,
      error: error as Error,
    };
  }
}

/**
 * What a failed build says, a line per problem.
 *
 * @throws {unknown} `error`, when it is not a build's or a bundle's.
 */
function problemLines(error: unknown): string[] {
  if (error instanceof XdcError) return [error.message];
  if (!(error instanceof BuildError)) throw error;
  return error.problems.map(({ file, line, message }) =>
    line > 0 ? `${file}:${line}: ${message}` : `${file}: ${message}`
  );
}

/**
 * Signs a dev build, with a `createdAt` later than the last one's (an
 * update must be signed later than the version it replaces).
 *
 * @param html The page.
 * @param seed The author's seed.
 * @param options The name, and the last version's `createdAt`.
 * @returns The pod and its `createdAt`.
 */
export async function signForDev(
  html: string,
  seed: Uint8Array,
  options: { name?: string | undefined; after?: string | undefined },
): Promise<{ pod: Uint8Array; createdAt: string }> {
  const last = options.after ? Date.parse(options.after) : 0;
  const createdAt = new Date(Math.max(Date.now(), last + 1)).toISOString();
  const pod = await signPod(new TextEncoder().encode(html), seed, {
    createdAt,
    ...(options.name === undefined ? {} : { name: options.name }),
  });
  return { pod, createdAt };
}

/** `&`, `<`, `>` and `"` as character references. */
function escapeHtml(text: string): string {
  return text.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** The page shown while the folder does not build. */
function errorPage(message: string, lines: string[]): string {
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Build failed</title>
<link rel="icon" href="data:,">
<style>body{font:15px system-ui,sans-serif;margin:2em;color:#222}
pre{white-space:pre-wrap;background:#fee;border-left:4px solid #c00;padding:1em}</style>
</head>
<body>
<h1>The pod does not build</h1>
<p>pod-broker dev serves it again as soon as it builds: fix it and save.</p>
<pre id="pod-broker-dev-error">${escapeHtml(lines.join("\n") || message)}</pre>
</body>
</html>
`;
}
