/**
 * The `import` command: a webxdc app (`.xdc` or its folder) built into a
 * pod by `importXdc` (loaded with this module, only when a command builds a
 * webxdc app), written to a file or standard output. `publish APP.xdc` and
 * `dev APP.xdc` build the app through {@linkcode importApp} too, so the
 * three commands make the same page of one bundle and refuse the same
 * bundles with the same line.
 *
 * @module
 */

import type { Input } from "./input.ts";
import { onePositional, parse, readKey, stderr } from "./io.ts";
import { failureCode, writePod } from "./pod_output.ts";
import { UsageError } from "./usage_error.ts";
import {
  type ImportResult,
  importXdc,
  type ImportXdcOptions,
} from "../bundler/xdc_build.ts";
import { XdcError } from "../bundler/xdc.ts";
import { DEFAULT_MAX_BLOB_BYTES } from "../pod/limits.ts";
import { MAX_NAME_CHARACTERS } from "../pod/manifest.ts";
import { oneLine } from "../_util/text.ts";

/**
 * The `import` command (`--help` is answered by `runCli`).
 *
 * @param args The arguments after `import`.
 * @returns The exit code: 0 imported, 2 bad usage or a bundle that cannot
 * be imported (not a zip, no `index.html`, an entry outside the bundle,
 * too large, too many entries), 1 when esbuild cannot run here; each
 * failure is one line on standard error, starting `pod-broker: `.
 *
 * @example Import an app into a signed pod
 * ```ts ignore
 * import { runImport } from "./import.ts";
 *
 * const code = await runImport(["poll.xdc", "--key", "author.pem", "--out", "poll.pod.html"]);
 * ```
 */
export async function runImport(args: string[]): Promise<number> {
  try {
    const { values, positionals } = parse(args, {
      out: { type: "string" },
      key: { type: "string" },
      name: { type: "string" },
    }, true);
    const source = onePositional(positionals, "import", "APP.xdc|DIR");
    const options = await importOptions(values);
    const { html, warnings, name } = await importApp(source, options);
    for (const warning of warnings) {
      stderr(`pod-broker: warning: ${oneLine(warning)}\n`);
    }
    await writePod(html, values.out, {
      verb: "imported",
      signed: options.seed !== undefined,
      more: name === undefined ? "" : `, named '${oneLine(name)}'`,
    });
    return 0;
  } catch (error) {
    return failureCode(error, [XdcError]);
  }
}

/**
 * Builds a webxdc app into a pod as `import` does: bounded by a broker's
 * default blob limit, signed only when `options.seed` is given.
 *
 * @param source The `.xdc` file or the app's folder.
 * @param options The seed and name, if any.
 * @returns The page (a pod when signed), its warnings, and its name
 * (`options.name`, else the manifest's).
 * @throws {XdcError} When the bundle is refused (one line).
 */
export async function importApp(
  source: string,
  options: Omit<ImportXdcOptions, "maxBytes"> = {},
): Promise<ImportResult> {
  return await importXdc(source, {
    maxBytes: DEFAULT_MAX_BLOB_BYTES,
    ...options,
  });
}

/** A `.xdc` built for `publish`: the page, unsigned, and the manifest's name. */
export interface ImportedPage {
  /** The page, as a command's input. */
  input: Input;
  /** The manifest's name, if it has one. */
  name: string | undefined;
}

/**
 * `publish APP.xdc`: the app built as `import` builds it, unsigned, its
 * warnings said; or, when the bundle is refused (or esbuild cannot run),
 * the exit code, its one line said as `import` says it.
 *
 * @param path The `.xdc` file.
 * @returns The page and its name, or the exit code (2 refused, 1 esbuild).
 */
export async function importedPage(
  path: string,
): Promise<ImportedPage | number> {
  try {
    const { html, warnings, name } = await importApp(path);
    for (const warning of warnings) {
      stderr(`pod-broker: warning: ${oneLine(warning)}\n`);
    }
    return { input: { path, bytes: html }, name };
  } catch (error) {
    return failureCode(error, [XdcError]);
  }
}

/** The key, and the name checked (a manifest's name is cut to fit). */
async function importOptions(
  values: { key?: string; name?: string },
): Promise<Omit<ImportXdcOptions, "maxBytes">> {
  const options: Omit<ImportXdcOptions, "maxBytes"> = {};
  if (values.name !== undefined) {
    const length = [...values.name].length;
    if (length < 1 || length > MAX_NAME_CHARACTERS) {
      throw new UsageError(
        `Cannot use --name: it must have 1 to ${MAX_NAME_CHARACTERS} characters`,
      );
    }
    if (values.key === undefined) {
      throw new UsageError(
        "Cannot set the manifest's name: import signs only with --key FILE",
      );
    }
    options.name = values.name;
  }
  if (values.key !== undefined) options.seed = await readKey(values.key);
  return options;
}
