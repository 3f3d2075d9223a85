/**
 * `pod-broker import APP.xdc|DIR`: a webxdc app built into a pod. A `.xdc`
 * is read bounded (`xdc.ts`) and written into a private temporary folder;
 * a folder is used where it is. Then the page is built as `build` builds
 * it (every file it uses inlined, `/assets/...` resolved at the bundle's
 * root), with two differences that webxdc apps need: the page's own
 * `<script src="webxdc.js">` becomes the pod's webxdc runtime
 * (`src/client/webxdc.ts`, bundled into a classic script), with the app's
 * files that scripts may load by path (`xdc_assets.ts`), and classic
 * scripts are inlined as they are, not bundled. The pod's name is the
 * manifest's `name` unless one is given. A pod is one document (see
 * `xdc_pages.ts`): a page the app frames becomes the frame's `srcdoc`,
 * and the app's other pages (the `.html` beside its `index.html`) are
 * built into templates that the runtime shows when a link leads there
 * (`src/client/webxdc_pages.ts`), each with a `webxdc.js` that takes the
 * page's `window.webxdc`.
 *
 * @module
 */

import {
  lstat,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rm,
  writeFile,
} from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { bundleClassic, withBundler } from "./bundle.ts";
import { DEFAULT_CLIENT } from "./client_url.ts";
import { BuildError, buildPod, type BuildResult } from "./mod.ts";
import { pageLinks } from "./xdc_pages.ts";
import { appAssets, assetsStatement } from "./xdc_assets.ts";
import { MAX_NAME_CHARACTERS } from "../pod/manifest.ts";
import { manifestName, readXdc, XdcError, type XdcFiles } from "./xdc.ts";

/** The webxdc runtime, beside the browser client (`.ts`, or `.js` on npm). */
export const WEBXDC_RUNTIME: URL = new URL(
  DEFAULT_CLIENT.pathname.endsWith(".js") ? "webxdc.js" : "webxdc.ts",
  DEFAULT_CLIENT,
);

/** Options of {@linkcode importXdc}. */
export interface ImportXdcOptions {
  /** The most the bundle's files may hold together, inflated (a broker's blob limit). */
  maxBytes: number;
  /** The author's seed: the pod is signed when given. */
  seed?: Uint8Array;
  /** The pod's name; the manifest's `name` when absent. */
  name?: string;
}

/** What {@linkcode importXdc} made. */
export interface ImportResult extends BuildResult {
  /** The pod's name (given, or the manifest's), if any. */
  name: string | undefined;
}

/**
 * Builds a webxdc app (a `.xdc` file, or a folder holding its files) into
 * a pod.
 *
 * @param source The `.xdc` file or the folder, as given.
 * @param options The bound on its size, the seed and name.
 * @returns The pod's bytes, warnings and name.
 * @throws {XdcError} When it is not a zip, breaks a bound, has no
 * `index.html`, or its page cannot be built (one line).
 */
export async function importXdc(
  source: string,
  options: ImportXdcOptions,
): Promise<ImportResult> {
  const refuse = (why: string) =>
    new XdcError(`Cannot import '${source}': ${why}`);
  const kind = await lstat(source).catch(() => undefined);
  if (kind === undefined) throw refuse("no such file or folder");
  if (kind.isDirectory()) return await buildFolder(source, source, options);
  if (kind.size > options.maxBytes) {
    throw refuse(
      `it is too large: more than ${
        options.maxBytes.toLocaleString("en")
      } bytes`,
    );
  }
  const files = readXdc(source, await readFile(source), options.maxBytes);
  const folder = await mkdtemp(join(tmpdir(), "pod-broker-xdc-"));
  try {
    await writeFiles(folder, files);
    return await buildFolder(source, folder, options);
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}

/** Writes a bundle's files under `folder` (their paths were checked). */
async function writeFiles(folder: string, files: XdcFiles): Promise<void> {
  for (const [name, bytes] of files) {
    const path = join(folder, ...name.split("/"));
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, bytes, { flag: "wx" });
  }
}

/**
 * The `webxdc.js` of the app's other pages: each, shown in a frame of the
 * app's page, takes that page's `window.webxdc` (the key
 * `src/client/webxdc_pages.ts` defines: the client imports nothing, so
 * both name it).
 */
const PAGE_WEBXDC = 'parent[Symbol.for("pod-broker.webxdc.page")](window);';

/** The most other pages of an app that `import` builds. */
const MAX_PAGES = 64;

/** The app's other pages: the `.html` files beside its `index.html`. */
async function otherPages(source: string, folder: string): Promise<string[]> {
  const pages: string[] = [];
  const entries = await readdir(folder, { withFileTypes: true });
  for (const entry of entries.sort((a, b) => a.name < b.name ? -1 : 1)) {
    if (!entry.isFile() || !/\.html?$/i.test(entry.name)) continue;
    if (entry.name === "index.html") continue;
    if (pages.push(entry.name) > MAX_PAGES) {
      throw new XdcError(
        `Cannot import '${source}': it has more than ${MAX_PAGES} pages`,
      );
    }
  }
  return pages;
}

/** Builds the app in `folder` into a pod. */
async function buildFolder(
  source: string,
  folder: string,
  options: ImportXdcOptions,
): Promise<ImportResult> {
  const entry = join(folder, "index.html");
  const page = await lstat(entry).catch(() => undefined);
  if (!page?.isFile()) {
    throw new XdcError(`Cannot import '${source}': it has no index.html`);
  }
  const html = await readFile(entry, "utf8");
  const manifest = await readFile(join(folder, "manifest.toml"), "utf8")
    .catch(() => "");
  const fromManifest = manifestName(manifest);
  const name = options.name ??
    (fromManifest && [...fromManifest].slice(0, MAX_NAME_CHARACTERS).join(""));
  const assets = await appAssets(folder, options.maxBytes).catch((error) => {
    if (!(error instanceof XdcError)) throw error;
    throw new XdcError(`Cannot import '${source}': ${error.message}`);
  });
  const pages = await otherPages(source, folder);
  const runtime = assetsStatement(assets) +
    await withBundler(() => bundleClassic(WEBXDC_RUNTIME));
  try {
    const built = await buildPod(entry, {
      scripts: { "webxdc.js": runtime },
      classicAsIs: true,
      pages: { names: pages, scripts: { "webxdc.js": PAGE_WEBXDC } },
      ...(options.seed === undefined ? {} : {
        seed: options.seed,
        createdAt: true as const,
        ...(name === undefined ? {} : { name }),
      }),
    });
    return {
      ...built,
      warnings: [...pageLinks(html, new Set(pages)), ...built.warnings],
      name,
    };
  } catch (error) {
    if (!(error instanceof BuildError)) throw error;
    const problems = error.problems.map(({ file, line, message }) =>
      line > 0 ? `${file}:${line}: ${message}` : `${file}: ${message}`
    );
    throw new XdcError(
      `Cannot import '${source}': ${problems.join("; ")}`,
    );
  }
}
