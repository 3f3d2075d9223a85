/**
 * `pod-broker build ENTRY.html [--out FILE] [--key FILE] [--name NAME]`:
 * turns a source folder (a page, its scripts, stylesheets, images, fonts,
 * media and WebAssembly) into one self-contained HTML file, the only shape
 * a pod can have under its policy (`default-src 'none'`, inline scripts
 * and styles, `data:` images, media and fonts). Signed with `--key`.
 *
 * - Local `<script src>`: bundled and minified with esbuild (ES modules and
 *   their imports, TypeScript too), inlined as `<script type="module">`
 *   (classic scripts stay classic). Inline `<script type="module">` is
 *   bundled too, so it may import files and `pod-broker/client`.
 * - `<link rel=stylesheet>` and `<style>`: bundled with their `@import`s;
 *   `url()`s become data: URLs.
 * - Images, icons, media, `srcset`, `poster`, `style="...url()"`: data: URLs.
 *   A page without an icon link gets an empty one (`icon.ts`), so that no
 *   browser asks the pod's host for `/favicon.ico`.
 * - WebAssembly: `import bytes from "./x.wasm"` is the module's bytes, for
 *   `WebAssembly.instantiate(bytes)`.
 * - A remote reference (`http:`, `https:`, `//`) in the page, a stylesheet
 *   or a script is an error; every one is reported, with its file and line.
 * - Nothing is read from outside the page's folder, links resolved, but
 *   packages from `node_modules` (each kept in its own tree), and no key
 *   file is ever inlined (`confine.ts`).
 *
 * The CLI's `build` command (`src/cli/build.ts`) is loaded only for `build`
 * (a dynamic import), so serving never loads the bundler.
 *
 * @module
 */

import { basename, dirname, resolve } from "node:path";
import { SLOT_LITERAL } from "../pod/format.ts";
import { signPod } from "../pod/sign.ts";
import { type BuildProblem, withBundler } from "./bundle.ts";
import { pageWarnings, REMOTE_HINT } from "./check.ts";
import type { ClassicOptions } from "./classic.ts";
import { clientUrl } from "./client_url.ts";
import { Confinement, OUTSIDE, OUTSIDE_HINT } from "./confine.ts";
import { iconEdit } from "./icon.ts";
import * as declaration from "./permissions.ts";
import {
  buildPage,
  codeOf,
  type PageContext,
  type PagesOption,
  pageTemplates,
} from "./page.ts";

export { type BuildProblem, BundlerError } from "./bundle.ts";

/** Options of {@linkcode buildPod}. */
export interface BuildPodOptions extends ClassicOptions {
  /** The author's 32-byte Ed25519 seed: when given, the output is signed. */
  seed?: Uint8Array;
  /** The manifest's display name (1 to 200 characters; needs `seed`). */
  name?: string;
  /** The manifest's `createdAt` (`true` for now; needs `seed`). */
  createdAt?: string | true;
  /** Features to declare first in the head (the page must declare none). */
  permissions?: readonly declaration.PodPermission[];
  /**
   * Other pages of the app, beside the page (`page.html`), each built as
   * the page is but with `scripts` of its own, into a
   * `<template data-pod-page="page.html">` holding it as an `<iframe
   * srcdoc>`, at the end of the page: for a runtime that shows them (the
   * webxdc runtime does). A page that cannot be built is left out, with a
   * warning.
   */
  pages?: PagesOption;
  /**
   * The module that `pod-broker/client` (and `jsr:@pod/broker/client`)
   * stands for: a path or a `file:`/`http(s):` URL.
   * @default this package's browser client (`src/client/mod.ts`)
   */
  client?: string | URL;
}

/** What {@linkcode buildPod} made. */
export interface BuildResult {
  /** The self-contained page, UTF-8 (a signed pod when a seed was given). */
  html: Uint8Array;
  /** Warnings, each `file:line: text` (a dropped preload hint, say). */
  warnings: string[];
}

/** A page that cannot be built; `problems` lists every reason found. */
export class BuildError extends Error {
  /** Each problem, with its file (relative to the page's folder) and line. */
  readonly problems: readonly BuildProblem[];

  /**
   * @param entry The page, as given.
   * @param problems What is wrong, in the order found.
   */
  constructor(entry: string, problems: readonly BuildProblem[]) {
    const has = (text: string) =>
      problems.some((problem) => problem.message.includes(text));
    const hints = [
      ...has("remote reference") ? [REMOTE_HINT] : [],
      ...has(OUTSIDE) ? [OUTSIDE_HINT] : [],
    ];
    super(
      `Cannot build '${entry}': ${problems.map(describe).join("; ")}${
        hints.map((hint) => ` (${hint})`).join("")
      }`,
    );
    this.name = "BuildError";
    this.problems = problems;
  }
}

/**
 * Builds a page into one self-contained HTML file.
 *
 * @param entry The page's path (its folder is the root for `/` paths).
 * @param options A seed to sign with, the manifest's name, the client.
 * @returns The page's bytes and any warnings.
 * @throws {BuildError} When the page or one of its files cannot be read or
 * bundled, or references something remote; lists every problem found.
 * @throws {TypeError} When `name` or `createdAt` is given without `seed`.
 *
 * @example Build and sign a page
 * ```ts ignore
 * import { buildPod } from "./mod.ts";
 * import { decodePrivateKeyPem } from "../pod/keys.ts";
 *
 * const seed = decodePrivateKeyPem(await Deno.readTextFile("author.pem"));
 * const { html } = await buildPod("app/index.html", { seed, name: "Chat" });
 * await Deno.writeFile("chat.pod.html", html);
 * ```
 */
export async function buildPod(
  entry: string,
  options: BuildPodOptions = {},
): Promise<BuildResult> {
  if (
    options.seed === undefined &&
    (options.name !== undefined || options.createdAt !== undefined)
  ) {
    throw new TypeError(
      "Cannot build a pod: a name or createdAt needs a seed to sign with",
    );
  }
  const path = resolve(entry);
  const root = dirname(path);
  const page = basename(path);
  const client = clientUrl(options.client);
  const confinement = await Confinement.open(root, client).catch((error) => {
    throw new BuildError(entry, [
      { file: page, line: 0, message: `cannot read it (${codeOf(error)})` },
    ]);
  });
  const read = await confinement.read(path);
  if ("problem" in read) {
    const message = read.code === undefined
      ? read.problem
      : `cannot read it (${read.code})`;
    throw new BuildError(entry, [{ file: page, line: 0, message }]);
  }
  const html = new TextDecoder().decode(read.bytes);
  const declared = options.permissions &&
    declaration.declarationEdit(html, options.permissions);
  if (declared === null) throw new BuildError(entry, [declaration.twice(page)]);
  const icon = iconEdit(html);
  const context: PageContext = {
    root,
    client,
    confinement,
    classic: options,
    depth: 0,
  };
  // One bundler for the page and its other pages.
  const [pages, { built, problems, warnings }] = await withBundler(async () => {
    const pages = await pageTemplates(options.pages, context);
    return [
      pages,
      await buildPage(html, page, context, [
        ...(declared ? [declared] : []), // before all: first in the head
        // Then the icon: it may share its offset with an edit that starts there.
        ...(icon ? [icon] : []),
        ...(pages.text
          ? [{ start: html.length, end: html.length, text: pages.text }]
          : []),
      ]),
    ] as const;
  });
  if (problems.length > 0) throw new BuildError(entry, problems);
  warnings.push(...pages.warnings);
  if (built.includes(SLOT_LITERAL)) {
    throw new BuildError(entry, [{
      file: page,
      line: 0,
      message:
        "the built page contains the manifest slot literal, which only signing may add",
    }]);
  }
  let bytes: Uint8Array = new TextEncoder().encode(built);
  if (options.seed !== undefined) {
    bytes = await signPod(bytes, options.seed, {
      ...(options.name === undefined ? {} : { name: options.name }),
      ...(options.createdAt === undefined
        ? {}
        : { createdAt: options.createdAt }),
    });
  }
  // Remote references were refused above; the size is only a warning (a
  // broker may raise its limit).
  const notes = [
    ...warnings.map(describe),
    ...pageWarnings(page, bytes, false),
    ...declaration.declarationWarnings(page, bytes),
  ];
  return { html: bytes, warnings: notes };
}

/** `index.html:12: text`, or `index.html: text` for the whole file. */
function describe({ file, line, message }: BuildProblem): string {
  return line > 0 ? `${file}:${line}: ${message}` : `${file}: ${message}`;
}
