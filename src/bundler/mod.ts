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

import { stat } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { SLOT_LITERAL } from "../pod/format.ts";
import { signPod } from "../pod/sign.ts";
import {
  type BuildProblem,
  type BundleInput,
  type BundleOptions,
  type BundleOutput,
  bundleScript,
  bundleStyle,
  withBundler,
} from "./bundle.ts";
import { pageWarnings, REMOTE_HINT } from "./check.ts";
import { type ClassicOptions, classicScripts } from "./classic.ts";
import { clientUrl } from "./client_url.ts";
import { Confinement, OUTSIDE, OUTSIDE_HINT, type Problem } from "./confine.ts";
import { iconEdit } from "./icon.ts";
import * as declaration from "./permissions.ts";
import { classifyUrl, cleanUrl, type HtmlReference } from "./html.ts";
import {
  applyEdits,
  dataUrl,
  type Edit,
  escapeInlineScript,
  escapeInlineStyle,
  findCssUrls,
  formatAttribute,
  formatSrcset,
  mediaTypeOf,
  parseSrcset,
  replaceCssUrls,
  scriptElement,
  styleElement,
} from "./inline.ts";

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
  pages?: { names: readonly string[]; scripts: Record<string, string> };
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

/** What a page's build needs besides its text: where it is, and how deep. */
interface PageContext extends BundleOptions {
  /** The given classic scripts, and whether others are inlined as they are. */
  classic: ClassicOptions;
  /** How many frames hold the page (0 for the pod's own page). */
  depth: number;
}

/** A page built: its text, or every problem found, and its warnings. */
interface PageBuild {
  built: string;
  problems: BuildProblem[];
  warnings: BuildProblem[];
}

/**
 * The app's other pages (`BuildPodOptions.pages`), each built into a
 * `<template data-pod-page>` holding its `<iframe srcdoc>`; the problems
 * of a page that cannot be built become warnings, and it is left out.
 */
async function pageTemplates(
  pages: BuildPodOptions["pages"],
  context: PageContext,
): Promise<{ text: string; warnings: BuildProblem[] }> {
  let text = "";
  const warnings: BuildProblem[] = [];
  for (const name of pages?.names ?? []) {
    const read = await context.confinement.read(join(context.root, name));
    const built = "problem" in read
      ? {
        built: "",
        warnings: [],
        problems: [{ file: name, line: 0, message: read.problem }],
      }
      : await buildPage(new TextDecoder().decode(read.bytes), name, {
        ...context,
        classic: { ...context.classic, scripts: pages!.scripts },
        depth: 1,
      });
    warnings.push(...built.warnings);
    if (built.problems.length > 0) {
      warnings.push(...built.problems.map((problem) => ({
        ...problem,
        message: `${problem.message} (so the pod goes without ${name})`,
      })));
      continue;
    }
    text += `<template ${formatAttribute("data-pod-page", name)}><iframe ${
      formatAttribute("srcdoc", built.built)
    }></iframe></template>`;
  }
  return { text, warnings };
}

/** The most frames one inside another that the build makes into `srcdoc`. */
const MAX_FRAME_DEPTH = 3;

/**
 * Builds one page's text: its classic scripts, then every other reference
 * (a framed page of the app too, built the same way), with `first` edits
 * applied before them.
 */
async function buildPage(
  html: string,
  page: string,
  context: PageContext,
  first: Edit[] = [],
): Promise<PageBuild> {
  const builder = new PageBuilder(page, context);
  const classic = await classicScripts(
    html,
    page,
    context.confinement,
    context.classic,
  );
  const reports = [
    classic,
    ...await withBundler(() =>
      Promise.all(classic.rest.map((reference) => builder.edit(reference)))
    ),
  ];
  return {
    built: applyEdits(html, [
      ...first,
      ...reports.flatMap((report) => report.edits),
    ]),
    problems: reports.flatMap((report) => report.problems),
    warnings: reports.flatMap((report) => report.warnings),
  };
}

/** What one reference produced: its edits, problems and warnings. */
interface Report {
  edits: Edit[];
  problems: BuildProblem[];
  warnings: BuildProblem[];
}

/**
 * Turns each reference of one page into edits. References are handled
 * concurrently, each with its own report, so that problems come out in
 * document order whatever finishes first.
 */
class PageBuilder {
  #page: string;
  #options: PageContext;
  #files = new Map<string, Promise<{ bytes: Uint8Array } | Problem>>();

  constructor(page: string, options: PageContext) {
    this.#page = page;
    this.#options = options;
  }

  /** The edits standing for one reference, and its problems and warnings. */
  async edit(reference: HtmlReference): Promise<Report> {
    const report: Report = { edits: [], problems: [], warnings: [] };
    report.edits = await this.#edit(reference, report);
    return report;
  }

  async #edit(reference: HtmlReference, report: Report): Promise<Edit[]> {
    const { kind, start, end, line, value, tag, attribute = "" } = reference;
    const replace = (text: string): Edit[] => [{ start, end, text }];
    switch (kind) {
      case "drop":
        this.#warn(
          report,
          line,
          tag === "script"
            ? "dropped a manifest slot (signing adds a fresh one)"
            : `dropped <${tag} rel="${reference.attributes.rel}" ${attribute}="${value}"> (a pod loads no file)`,
        );
        return replace("");
      case "frame":
        return await this.#frame(reference, report);
      case "unsupported": {
        if (this.#remote(report, value, line)) return [];
        const problem = `<${tag} ${attribute}> cannot be inlined ('${value}')`;
        // A form posting to a file is harmless, just useless: a warning.
        if (attribute === "action" || attribute === "formaction") {
          this.#warn(
            report,
            line,
            `${problem}; the pod policy blocks form submission`,
          );
        } else this.#fail(report, line, problem);
        return [];
      }
      case "url": {
        const url = await this.#inlineUrl(report, value, line);
        return url === value ? [] : replace(formatAttribute(attribute, url));
      }
      case "srcset": {
        const candidates = await Promise.all(
          parseSrcset(value).map(async (candidate) => ({
            ...candidate,
            url: await this.#inlineUrl(report, candidate.url, line),
          })),
        );
        return replace(formatAttribute(attribute, formatSrcset(candidates)));
      }
      case "style-attribute": {
        const urls = new Map<string, string>();
        for (const { url, lineOffset } of findCssUrls(value)) {
          urls.set(url, await this.#inlineUrl(report, url, line + lineOffset));
        }
        return replace(formatAttribute(
          attribute,
          replaceCssUrls(value, (url) => urls.get(url) ?? url),
        ));
      }
      case "script":
        return await this.#script(reference, report);
      case "inline-script": {
        const bundle = this.#check(
          report,
          await bundleScript(this.#inline(reference), true, this.#options),
        );
        if (!bundle) return [];
        return [
          // CSS the module imports goes in a <style> before its script.
          ...(bundle.css
            ? [{
              start: reference.elementStart,
              end: reference.elementStart,
              text: styleElement(bundle.css, {}),
            }]
            : []),
          ...replace(escapeInlineScript(bundle.code)),
        ];
      }
      case "stylesheet": {
        const file = await this.#localFile(report, value, line, "stylesheet");
        if (file === undefined) return [];
        const bundle = this.#check(
          report,
          await bundleStyle({ path: file }, this.#options),
        );
        return bundle
          ? replace(styleElement(bundle.css, reference.attributes))
          : [];
      }
      case "style": {
        const bundle = this.#check(
          report,
          await bundleStyle(this.#inline(reference), this.#options),
        );
        return bundle ? replace(escapeInlineStyle(bundle.css)) : [];
      }
    }
  }

  async #script(reference: HtmlReference, report: Report): Promise<Edit[]> {
    const { attributes, line, value } = reference;
    const module = attributes.type?.trim().toLowerCase() === "module";
    const file = await this.#localFile(report, value, line, "script");
    if (file === undefined) return [];
    if (!module && ("defer" in attributes || "async" in attributes)) {
      this.#warn(
        report,
        line,
        `'${value}' is inlined as a classic script, which runs at once: defer and async have no effect (use type="module" to run it after parsing)`,
      );
    }
    const bundle = this.#check(
      report,
      await bundleScript({ path: file }, module, this.#options),
    );
    if (!bundle) return [];
    const style = bundle.css ? styleElement(bundle.css, {}) : "";
    return [{
      start: reference.start,
      end: reference.end,
      text: style + scriptElement(bundle.code, attributes),
    }];
  }

  /**
   * A frame of another page of the app: that page, built the same way,
   * becomes the frame's `srcdoc` (under the pod's policy, as the page is).
   */
  async #frame(reference: HtmlReference, report: Report): Promise<Edit[]> {
    const { attributes, line, value, tag } = reference;
    if ("srcdoc" in attributes) {
      this.#warn(
        report,
        line,
        `dropped <${tag} src="${value}"> (its srcdoc is what shows)`,
      );
      return [{ start: reference.start, end: reference.end, text: "" }];
    }
    const { path } = this.#resolve(value);
    const name = basename(path);
    const problem = dirname(path) !== this.#options.root
      ? `frames '${value}', which is not in the page's folder (a framed page is built only from beside the page)`
      : !/\.html?$/i.test(name)
      ? `frames '${value}', which is not an HTML page (only a page can be built into a frame)`
      : this.#options.depth >= MAX_FRAME_DEPTH
      ? `frames '${value}' inside ${MAX_FRAME_DEPTH} other frames (the most the build nests)`
      : undefined;
    if (problem !== undefined) {
      this.#fail(report, line, problem);
      return [];
    }
    const read = await this.#read(path);
    if ("problem" in read) {
      this.#refuse(report, line, value, read);
      return [];
    }
    const framed = await buildPage(
      new TextDecoder().decode(read.bytes),
      name,
      { ...this.#options, depth: this.#options.depth + 1 },
    );
    report.problems.push(...framed.problems);
    report.warnings.push(...framed.warnings);
    return [{
      start: reference.start,
      end: reference.end,
      text: formatAttribute("srcdoc", framed.built),
    }];
  }

  #inline(reference: HtmlReference): BundleInput {
    return {
      code: reference.value,
      sourcefile: this.#page,
      line: reference.line,
    };
  }

  /** The path of a local file the page names; undefined (and a problem) if none. */
  async #localFile(
    report: Report,
    value: string,
    line: number,
    what: string,
  ): Promise<string | undefined> {
    if (this.#remote(report, value, line)) return undefined;
    if (classifyUrl(value) !== "local") {
      this.#fail(
        report,
        line,
        `a ${what} must be a local file, not '${value}'`,
      );
      return undefined;
    }
    const { path } = this.#resolve(value);
    try {
      if (!(await stat(path)).isFile()) {
        this.#fail(report, line, `cannot read '${value}' (not a file)`);
        return undefined;
      }
    } catch (error) {
      this.#fail(report, line, `cannot read '${value}' (${codeOf(error)})`);
      return undefined;
    }
    const { confinement } = this.#options;
    const placed = await confinement.place(path, confinement.root, false);
    if (!("problem" in placed)) return path;
    this.#refuse(report, line, value, placed);
    return undefined;
  }

  /** A data: URL for a local file; the value itself for anything else. */
  async #inlineUrl(
    report: Report,
    value: string,
    line: number,
  ): Promise<string> {
    if (this.#remote(report, value, line)) return value;
    const kind = classifyUrl(value);
    if (kind === "embedded") return value;
    if (kind === "scheme") {
      this.#fail(report, line, `cannot inline '${value}' (unsupported scheme)`);
      return value;
    }
    const { path, hash } = this.#resolve(value);
    const mediaType = mediaTypeOf(path);
    if (mediaType === undefined) {
      this.#fail(report, line, `cannot inline '${value}' (unknown file type)`);
      return value;
    }
    let read = this.#files.get(path);
    if (!read) {
      read = this.#read(path);
      this.#files.set(path, read);
    }
    const bytes = await read;
    if ("problem" in bytes) {
      this.#refuse(report, line, value, bytes);
      return value;
    }
    return dataUrl(bytes.bytes, mediaType) + hash;
  }

  /** A file the page names: inside the page's folder, and no key. */
  async #read(path: string): Promise<{ bytes: Uint8Array } | Problem> {
    const { confinement } = this.#options;
    const placed = await confinement.place(path, confinement.root, false);
    return "problem" in placed ? placed : await confinement.read(placed.real);
  }

  /** Reports a file the page names that cannot be inlined. */
  #refuse(report: Report, line: number, value: string, why: Problem): void {
    this.#fail(
      report,
      line,
      why.code === undefined
        ? `'${value}' ${why.problem}`
        : `cannot read '${value}' (${why.code})`,
    );
  }

  /** A local URL as a path: relative to the page, `/` at the page's folder. */
  #resolve(value: string): { path: string; hash: string } {
    const url = cleanUrl(value);
    const base = pathToFileURL(`${this.#options.root}/`);
    const resolved = new URL(url.startsWith("/") ? `.${url}` : url, base);
    return { path: fileURLToPath(resolved), hash: resolved.hash };
  }

  /** Reports a remote URL; returns whether it was one. */
  #remote(report: Report, value: string, line: number): boolean {
    if (classifyUrl(value) !== "remote") return false;
    this.#fail(report, line, `remote reference '${cleanUrl(value)}'`);
    return true;
  }

  /** The bundle when it has no problems; its problems recorded otherwise. */
  #check(report: Report, bundle: BundleOutput): BundleOutput | undefined {
    report.warnings.push(...bundle.warnings);
    report.problems.push(...bundle.problems);
    return bundle.problems.length === 0 ? bundle : undefined;
  }

  #fail(report: Report, line: number, message: string): void {
    report.problems.push({ file: this.#page, line, message });
  }

  #warn(report: Report, line: number, message: string): void {
    report.warnings.push({ file: this.#page, line, message });
  }
}

/** `index.html:12: text`, or `index.html: text` for the whole file. */
function describe({ file, line, message }: BuildProblem): string {
  return line > 0 ? `${file}:${line}: ${message}` : `${file}: ${message}`;
}

function codeOf(error: unknown): string {
  return (error as { code?: string }).code ?? String(error);
}
