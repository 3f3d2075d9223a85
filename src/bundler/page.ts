/**
 * One page of a build, and the pages it frames or the app has beside it:
 * each reference of the page turned into edits (scripts bundled,
 * stylesheets, images, media and fonts inlined, a framed page of the app
 * built the same way into the frame's `srcdoc`), with every problem and
 * warning found. `mod.ts`'s `buildPod` builds the pod from it.
 *
 * @module
 */

import { stat } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import {
  type BuildProblem,
  type BundleInput,
  type BundleOptions,
  type BundleOutput,
  bundleScript,
  bundleStyle,
  withBundler,
} from "./bundle.ts";
import { type ClassicOptions, classicScripts } from "./classic.ts";
import type { Problem } from "./confine.ts";
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

/**
 * Other pages of the app, beside the page, and the classic scripts that
 * stand for theirs (`BuildPodOptions.pages`).
 */
export interface PagesOption {
  /** Their names (`page.html`). */
  names: readonly string[];
  /** Code for classic scripts they load, by path (`webxdc.js`). */
  scripts: Record<string, string>;
}

/** What a page's build needs besides its text: where it is, and how deep. */
export interface PageContext extends BundleOptions {
  /** The given classic scripts, and whether others are inlined as they are. */
  classic: ClassicOptions;
  /** How many frames hold the page (0 for the pod's own page). */
  depth: number;
}

/** A page built: its text, or every problem found, and its warnings. */
export interface PageBuild {
  /** The page's text, its edits applied. */
  built: string;
  /** What kept it from being built. */
  problems: BuildProblem[];
  /** What it was built without. */
  warnings: BuildProblem[];
}

/**
 * The app's other pages (`BuildPodOptions.pages`), each built into a
 * `<template data-pod-page>` holding its `<iframe srcdoc>`; the problems
 * of a page that cannot be built become warnings, and it is left out.
 *
 * @param pages The pages, if any.
 * @param context Where they are.
 * @returns The templates' markup and the warnings.
 */
export async function pageTemplates(
  pages: PagesOption | undefined,
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
 *
 * @param html The page's text.
 * @param page Its file name, for problems.
 * @param context Where it is, and how deep.
 * @param first Edits applied before the page's own.
 * @returns The text, problems and warnings.
 */
export async function buildPage(
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

/**
 * The system's code of a failed file operation (`ENOENT`), or the error.
 *
 * @param error What was thrown.
 * @returns The code.
 */
export function codeOf(error: unknown): string {
  return (error as { code?: string }).code ?? String(error);
}
