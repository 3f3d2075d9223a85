/**
 * Classic scripts a build inlines without the bundler, for pages made for
 * a runtime of their own (webxdc apps, which `pod-broker import` builds):
 * a `<script src>` that stands for code given by the caller (the app's
 * `webxdc.js`, which its messenger provides), and, when asked, every other
 * classic `<script src>` inlined as it is. Such scripts were written to be
 * loaded as they are: bundling one would resolve its dead branches too (a
 * Node-only `require('path')`), which the browser never runs.
 *
 * @module
 */

import { relative, sep } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { BuildProblem } from "./bundle.ts";
import type { Confinement, Problem } from "./confine.ts";
import {
  classifyUrl,
  cleanUrl,
  findReferences,
  type HtmlReference,
} from "./html.ts";
import { type Edit, scriptElement } from "./inline.ts";

/** Options of a build about classic scripts (part of `BuildPodOptions`). */
export interface ClassicOptions {
  /**
   * Code standing for classic scripts the page loads, by their path in the
   * page's folder (`webxdc.js`): such a `<script src>` becomes this code,
   * inlined as it is, whether the file exists or not.
   */
  scripts?: Readonly<Record<string, string>>;
  /**
   * Inline the page's other classic scripts as they are, not bundled; one
   * whose file is missing is dropped, with a warning, as the page would run
   * without it where it is served as it is.
   * @default false
   */
  classicAsIs?: boolean;
}

/** What {@linkcode classicScripts} did, and the references left to build. */
export interface ClassicResult {
  /** The inline scripts standing for the references it took. */
  edits: Edit[];
  /** Files it could not read. */
  problems: BuildProblem[];
  /** Scripts dropped for want of their file (with `classicAsIs`). */
  warnings: BuildProblem[];
  /** The page's other references, left to the build. */
  rest: HtmlReference[];
}

/**
 * Inlines the classic scripts `options` covers; leaves the other
 * references to the build.
 *
 * @param html The page.
 * @param page The page's file name, for problems.
 * @param confinement What the build may read (its root is the page's folder).
 * @param options The given scripts, and whether to inline the rest as is.
 * @returns The edits, problems and references left.
 */
export async function classicScripts(
  html: string,
  page: string,
  confinement: Confinement,
  options: ClassicOptions,
): Promise<ClassicResult> {
  const result: ClassicResult = {
    edits: [],
    problems: [],
    warnings: [],
    rest: [],
  };
  for (const reference of findReferences(html)) {
    const code = isClassicFile(reference)
      ? await codeFor(reference, confinement, options)
      : undefined;
    const { value, line } = reference;
    if (code === undefined) result.rest.push(reference);
    else if (typeof code === "string") {
      const text = scriptElement(code, reference.attributes);
      result.edits.push({ start: reference.start, end: reference.end, text });
    } else if (options.classicAsIs && code.code === "ENOENT") {
      // Where the app is served as it is, a missing script answers 404
      // and the page runs on: so it does here, without that script.
      result.edits.push({
        start: reference.start,
        end: reference.end,
        text: "",
      });
      result.warnings.push({
        file: page,
        line,
        message: `dropped <script src="${value}">: the app has no such file`,
      });
    } else {
      const message = code.code === undefined
        ? `'${value}' ${code.problem}`
        : `cannot read '${value}' (${code.code})`;
      result.problems.push({ file: page, line, message });
    }
  }
  return result;
}

/** Whether a reference is a classic `<script src>` of a local file. */
function isClassicFile(reference: HtmlReference): boolean {
  return reference.kind === "script" &&
    reference.attributes.type?.trim().toLowerCase() !== "module" &&
    classifyUrl(reference.value) === "local";
}

/** The code for one classic script, why it cannot be read, or undefined to leave it. */
async function codeFor(
  reference: HtmlReference,
  confinement: Confinement,
  options: ClassicOptions,
): Promise<string | Problem | undefined> {
  const path = resolveLocal(confinement.root, reference.value);
  const name = relative(confinement.root, path).split(sep).join("/");
  const given = options.scripts ?? {};
  if (Object.hasOwn(given, name)) return given[name];
  if (!options.classicAsIs) return undefined;
  const placed = await confinement.place(path, confinement.root, false);
  if ("problem" in placed) return placed;
  const read = await confinement.read(placed.real);
  return "problem" in read ? read : new TextDecoder().decode(read.bytes);
}

/** A local URL as a path: relative to the page, `/` at the page's folder. */
function resolveLocal(root: string, value: string): string {
  const url = cleanUrl(value);
  const base = pathToFileURL(`${root}/`);
  return fileURLToPath(new URL(url.startsWith("/") ? `.${url}` : url, base));
}
