/**
 * The `build` command: parses its arguments, runs `buildPod` (loaded with
 * this module, only for `build`), writes the file and prints warnings.
 *
 * @module
 */

import { access } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { fileProblem } from "./input.ts";
import { onePositional, parse, readKey, stderr } from "./io.ts";
import { displayPath, findPodFolder, isInside } from "./pod_folder.ts";
import { folderKey } from "./trusted_folders.ts";
import { failureCode, writePod } from "./pod_output.ts";
import { UsageError } from "./usage_error.ts";
import { BuildError, buildPod, type BuildPodOptions } from "../bundler/mod.ts";
import { parsePermissionList } from "../bundler/permissions.ts";
import { POD_PERMISSIONS } from "../serving/permissions.ts";
import { MAX_NAME_CHARACTERS } from "../pod/manifest.ts";
import { oneLine } from "../_util/text.ts";

/**
 * The `build` command: builds, writes the file (to standard output without
 * `--out`) and prints warnings to standard error (`--help` is answered by
 * `runCli`).
 *
 * @param args The arguments after `build`.
 * @returns The exit code: 0 built, 2 bad usage or a page that cannot be
 * built, 1 when esbuild cannot run here (each with one line on standard
 * error, starting `pod-broker: `).
 *
 * @example Build a page into a file
 * ```ts ignore
 * import { runBuild } from "./build.ts";
 *
 * const code = await runBuild(["app/index.html", "--out", "app.pod.html"]);
 * ```
 */
export async function runBuild(args: string[]): Promise<number> {
  try {
    const { values, positionals } = parse(args, {
      out: { type: "string" },
      key: { type: "string" },
      name: { type: "string" },
      "created-at": { type: "boolean" },
      permissions: { type: "string" },
    }, true);
    const entry = onePositional(positionals, "build", "ENTRY.html");
    await access(entry).catch((error) => {
      throw new UsageError(`Cannot build '${entry}': ${fileProblem(error)}`);
    });
    const folder = dirname(resolve(entry));
    // Without --key, the key (and name) the pod folder's deno.json names,
    // if the user vouched for that folder (init or trust).
    const settings = values.key === undefined
      ? await findPodFolder(folder)
      : undefined;
    const fromFolder = await folderKey(settings);
    const key = values.key ?? fromFolder;
    if (key === undefined) {
      if (values.name !== undefined || values["created-at"]) {
        throw new UsageError(
          "Cannot set the manifest's name or time: build signs only with --key FILE",
        );
      }
    }
    const nameLength = [...values.name ?? "x"].length;
    if (nameLength < 1 || nameLength > MAX_NAME_CHARACTERS) {
      throw new UsageError(
        `Cannot use --name: it must have 1 to ${MAX_NAME_CHARACTERS} characters`,
      );
    }
    const options: BuildPodOptions = {};
    if (key !== undefined) options.seed = await readKey(key);
    const name = values.name ?? settings?.name;
    if (key !== undefined && name !== undefined) options.name = name;
    // Every signing writes the time (--created-at is still accepted).
    if (options.seed !== undefined) options.createdAt = true;
    const dropped: string[] = [];
    if (values.permissions !== undefined) {
      const { known, unknown } = parsePermissionList(values.permissions);
      options.permissions = known;
      if (unknown.length > 0) {
        dropped.push(
          `--permissions: unknown permission ${
            unknown.map((token) => `'${token}'`).join(", ")
          } dropped (known: ${POD_PERMISSIONS.join(", ")})`,
        );
      }
    }
    const { html, warnings } = await buildPod(entry, options);
    if (key !== undefined && await isInside(key, folder)) {
      warnings.unshift(
        `the key '${key}' is inside the pod's folder: move it out (build never inlines it, but a copy or a commit of the folder would publish it)`,
      );
    }
    for (const warning of [...dropped, ...warnings]) {
      stderr(`pod-broker: warning: ${oneLine(warning)}\n`);
    }
    await writePod(html, values.out, {
      verb: "built",
      signed: options.seed !== undefined,
      more: fromFolder ? ` with ${displayPath(fromFolder)}` : "",
    });
    return 0;
  } catch (error) {
    return failureCode(error, [BuildError]);
  }
}
