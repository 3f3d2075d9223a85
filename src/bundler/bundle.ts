/**
 * The bundler of `pod-broker build`, on esbuild: a page's scripts (ES
 * modules with their imports, TypeScript too) and stylesheets (with
 * `@import` and `url()`) become one minified text each, assets inside as
 * data: URLs and WebAssembly as bytes (`import bytes from "./x.wasm"` gives
 * a `Uint8Array` for `WebAssembly.instantiate`, which the pod policy's
 * `'wasm-unsafe-eval'` allows). A remote import, `@import` or `url()` is
 * refused with its file and line; `pod-broker/client` resolves to this
 * package's browser client.
 *
 * This is the only module of the project that imports esbuild; the CLI
 * loads `build/mod.ts` on demand, so serving never starts it.
 *
 * @module
 */

import { isAbsolute, relative } from "node:path";
import { fileURLToPath } from "node:url";
import type * as esbuild from "esbuild";
import { type Confinement, isBareSpecifier } from "./confine.ts";
import { classifyUrl } from "./html.ts";
import { MEDIA_TYPES } from "./inline.ts";

/** Something wrong (or worth a warning) in one of the page's files. */
export interface BuildProblem {
  /** The file, relative to the page's directory. */
  file: string;
  /** The 1-based line, or 0 when the problem is with the whole file. */
  line: number;
  /** What is wrong. */
  message: string;
}

/** Where the bundler reads from and how it names files. */
export interface BundleOptions {
  /**
   * The page's directory: file names in problems are relative to it, and
   * root-relative paths (`/img/a.png`) resolve in it, as on a web server.
   */
  root: string;
  /** The module `pod-broker/client` stands for (a `file:`, `http:` or `https:` URL). */
  client: URL;
  /** What the build may read: every file esbuild resolves is judged by it. */
  confinement: Confinement;
}

/** What to bundle: a file, or code from the page itself. */
export type BundleInput =
  | { path: string }
  | {
    /** The code. */
    code: string;
    /** The page's name, for problems. */
    sourcefile: string;
    /** The line of the page where the code starts. */
    line: number;
  };

/** A bundle, or why there is none. */
export interface BundleOutput {
  /** The JavaScript (`""` for a stylesheet). */
  code: string;
  /** The CSS (a script's imported stylesheets; `""` when none). */
  css: string;
  /** Errors: when any, the outputs are empty. */
  problems: BuildProblem[];
  /** Warnings. */
  warnings: BuildProblem[];
}

/** The specifiers that stand for the browser client. */
const CLIENT_SPECIFIER = /^(?:pod-broker|jsr:@pod\/broker)\/client$/;
const CLIENT_NAMESPACE = "pod-broker-client";
/** Loaders for files a script or stylesheet pulls in besides code and CSS. */
const ASSET_LOADERS: Record<string, esbuild.Loader> = {
  ...Object.fromEntries(
    Object.keys(MEDIA_TYPES).map((extension) => [extension, "dataurl"]),
  ),
  ".wasm": "binary",
  ".txt": "text",
};

/** esbuild cannot start here (its binary or a permission is missing). */
export class BundlerError extends Error {
  /**
   * @param message What is wrong.
   * @param options The cause.
   */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "BundlerError";
  }
}

let loaded: Promise<typeof esbuild> | undefined;
let running = 0;

/**
 * esbuild, loaded on first use: its module reads the environment and finds
 * its platform's binary as it loads, and a failure there (Deno without
 * `--allow-env` or `--allow-run`, an install without optional packages) is
 * told in one line rather than as a crash.
 */
async function loadEsbuild(): Promise<typeof esbuild> {
  loaded ??= import("esbuild").then(
    (module) => module,
    (error) => {
      loaded = undefined;
      throw new BundlerError(
        `Cannot start the bundler (esbuild): ${(error as Error).message}`,
        { cause: error },
      );
    },
  );
  return await loaded;
}

/**
 * Runs `task` with esbuild available, and stops esbuild's service process
 * when the last concurrent task ends, so nothing keeps the process alive.
 *
 * @param task The work that calls the bundler.
 * @returns What `task` returns.
 * @throws {BundlerError} When esbuild cannot start.
 */
export async function withBundler<T>(task: () => Promise<T>): Promise<T> {
  const bundler = await loadEsbuild();
  running++;
  try {
    return await task();
  } finally {
    if (--running === 0) await bundler.stop();
  }
}

/**
 * Bundles one script of the page. A module (`type="module"`) is bundled
 * and minified as an ES module. A classic script keeps its top-level names
 * (inline event handlers and other scripts may use them as globals): it is
 * bundled without tree shaking and without renaming.
 *
 * @param input The script's file, or the code of an inline module.
 * @param module Whether it is an ES module.
 * @param options Where to read from.
 * @returns The code, the CSS it imports, and any problems.
 */
export async function bundleScript(
  input: BundleInput,
  module: boolean,
  options: BundleOptions,
): Promise<BundleOutput> {
  return await run(input, "js", {
    ...(module ? { minify: true } : {
      treeShaking: false,
      minifySyntax: true,
      minifyWhitespace: true,
    }),
  }, options);
}

/**
 * Bundles one stylesheet of the page, `@import`s and `url()`s inlined.
 *
 * @param input The stylesheet's file, or the text of a `<style>` element.
 * @param options Where to read from.
 * @returns The CSS and any problems.
 */
export async function bundleStyle(
  input: BundleInput,
  options: BundleOptions,
): Promise<BundleOutput> {
  return await run(input, "css", { minify: true }, options);
}

async function run(
  input: BundleInput,
  loader: "js" | "css",
  minify: esbuild.BuildOptions,
  options: BundleOptions,
): Promise<BundleOutput> {
  const fallbackFile = "path" in input
    ? relative(options.root, input.path)
    : input.sourcefile;
  const bundler = await loadEsbuild();
  try {
    const result = await bundler.build({
      ...("path" in input ? { entryPoints: [input.path] } : {
        stdin: {
          // Blank lines first, so that lines in messages are the page's.
          contents: "\n".repeat(Math.max(0, input.line - 1)) + input.code,
          sourcefile: input.sourcefile,
          resolveDir: options.root,
          loader,
        },
      }),
      ...minify,
      absWorkingDir: options.root,
      bundle: true,
      write: false,
      outdir: "out",
      format: "esm",
      platform: "browser",
      target: "es2022",
      charset: "utf8",
      loader: ASSET_LOADERS,
      plugins: [podPlugin(options)],
      logLevel: "silent",
    });
    const output = (extension: string) =>
      result.outputFiles.filter((file) => file.path.endsWith(extension))
        .map((file) => file.text).join("");
    return {
      code: loader === "js" ? output(".js") : "",
      css: output(".css"),
      problems: [],
      warnings: result.warnings.map((m) => problemOf(m, fallbackFile)),
    };
  } catch (error) {
    if (!isBuildFailure(error)) {
      // Not a problem of the page's: esbuild's process could not run.
      throw new BundlerError(
        `Cannot run the bundler (esbuild, a program of its own): ${
          (error as Error).message
        }`,
        { cause: error },
      );
    }
    return {
      code: "",
      css: "",
      problems: error.errors.map((m) => problemOf(m, fallbackFile)),
      warnings: error.warnings.map((m) => problemOf(m, fallbackFile)),
    };
  }
}

/** Marks the plugin's own `build.resolve` calls, so it does not judge them twice. */
const RESOLVING = Symbol("pod-resolving");

/**
 * Refuses remote references, finds the client, roots `/` paths, and keeps
 * every file read inside the trees {@linkcode Confinement} allows.
 */
function podPlugin(options: BundleOptions): esbuild.Plugin {
  return {
    name: "pod",
    setup(build) {
      // A client published on a registry (`deno run jsr:...`) is fetched,
      // with its relative imports.
      build.onResolve(
        { filter: /.*/, namespace: CLIENT_NAMESPACE },
        (args) => ({
          path: new URL(args.path, args.importer).href,
          namespace: CLIENT_NAMESPACE,
        }),
      );
      build.onResolve({ filter: /.*/ }, async (args) => {
        if (args.pluginData === RESOLVING) return undefined;
        if (classifyUrl(args.path) === "remote") {
          return { errors: [{ text: `remote reference '${args.path}'` }] };
        }
        if (CLIENT_SPECIFIER.test(args.path)) {
          return options.client.protocol === "file:"
            ? { path: fileURLToPath(options.client) }
            : { path: options.client.href, namespace: CLIENT_NAMESPACE };
        }
        return await confinedResolve(build, args, options);
      });
      build.onLoad(
        { filter: /.*/, namespace: CLIENT_NAMESPACE },
        async (args) => {
          const response = await fetch(args.path);
          if (!response.ok) {
            await response.body?.cancel();
            return {
              errors: [{
                text:
                  `Cannot load the client: '${args.path}' answered ${response.status}`,
              }],
            };
          }
          return {
            contents: await response.text(),
            loader: args.path.endsWith(".ts") ? "ts" : "js",
          };
        },
      );
      // esbuild reads the file itself after this check (it knows each
      // file's loader); the check reads it first, for key material.
      build.onLoad({ filter: /.*/, namespace: "file" }, async (args) => {
        const read = await options.confinement.read(args.path);
        if (!("problem" in read)) return undefined;
        const file = relative(options.root, args.path);
        return { errors: [{ text: `'${file}' ${read.problem}` }] };
      });
    },
  };
}

/**
 * esbuild's own resolution of an import, then the confinement's verdict on
 * the file it found: `/x` means the page's folder, as on a web server.
 */
async function confinedResolve(
  build: esbuild.PluginBuild,
  args: esbuild.OnResolveArgs,
  options: BundleOptions,
): Promise<esbuild.OnResolveResult> {
  const { confinement } = options;
  const rooted = args.path.startsWith("/") && args.kind !== "entry-point";
  const result = await build.resolve(rooted ? `.${args.path}` : args.path, {
    kind: args.kind,
    importer: args.importer,
    namespace: args.namespace,
    resolveDir: rooted ? options.root : args.resolveDir,
    with: args.with,
    pluginData: RESOLVING,
  });
  if (
    result.errors.length > 0 || result.external || result.namespace !== "file"
  ) {
    return result;
  }
  const from = isAbsolute(args.importer)
    ? confinement.treeOf(args.importer)
    : confinement.root; // the entry point, or code of the page itself
  const placed = from === undefined
    ? { problem: "is imported from outside the page's folder" }
    : await confinement.place(
      result.path,
      from,
      !rooted && isBareSpecifier(args.path),
    );
  if ("problem" in placed) {
    return { errors: [{ text: `'${args.path}' ${placed.problem}` }] };
  }
  return {
    path: result.path,
    namespace: "file",
    sideEffects: result.sideEffects,
    suffix: result.suffix,
    pluginData: result.pluginData,
  };
}

function problemOf(message: esbuild.Message, file: string): BuildProblem {
  const location = message.location;
  return {
    file: location?.file || file,
    line: location?.line ?? 0,
    message: message.text,
  };
}

function isBuildFailure(error: unknown): error is esbuild.BuildFailure {
  return error instanceof Error && Array.isArray(
    (error as Partial<esbuild.BuildFailure>).errors,
  );
}

/**
 * Bundles a browser module of this package (the webxdc runtime, say) into
 * one classic script: minified and wrapped in a function, so that none of
 * its names becomes a global of the page it is inlined into.
 *
 * @param entry The module, a `file:` URL.
 * @returns The script's code.
 * @throws {BundlerError} When esbuild cannot run, or the module (this
 * package's own code) does not bundle.
 */
export async function bundleClassic(entry: URL): Promise<string> {
  const bundler = await loadEsbuild();
  try {
    const result = await bundler.build({
      entryPoints: [fileURLToPath(entry)],
      bundle: true,
      write: false,
      minify: true,
      format: "iife",
      platform: "browser",
      target: "es2022",
      charset: "utf8",
      logLevel: "silent",
    });
    return result.outputFiles.map((file) => file.text).join("");
  } catch (error) {
    throw new BundlerError(
      `Cannot bundle '${entry.href}': ${(error as Error).message}`,
      { cause: error },
    );
  }
}
