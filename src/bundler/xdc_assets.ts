/**
 * The files of a webxdc app that its scripts may load by a path built at
 * run time (`"img/" + piece + ".svg"`), which no build can see: `import`
 * keeps the bundle's images, media, fonts, WebAssembly and data files
 * (JSON, text, CSV, XML) in the pod, and the webxdc runtime answers those
 * paths with them (`src/client/webxdc_assets.ts`). Pages, scripts and
 * stylesheets are not kept: the build inlines the ones the page uses, and
 * a pod runs no other. The folder is read bounded: no link followed, no
 * hidden file or `node_modules`, at most 4,096 files and 4,096 folders, and
 * `maxBytes` in all; a file that holds a private key refuses the import,
 * as `build` refuses one.
 *
 * @module
 */

import { lstat, readdir, readFile } from "node:fs/promises";
import { extname, join } from "node:path";
import { encodeBase64 } from "../_util/encoding.ts";
import { keyProblem, keyRefusal } from "./confine.ts";
import { mediaTypeOf } from "./inline.ts";
import { XDC_MAX_ENTRIES, XdcError } from "./xdc.ts";

/**
 * The files kept: path in the bundle (`img/a.svg`) to media type and
 * base64, as the runtime reads them.
 */
export type Assets = Record<string, readonly [string, string]>;

/**
 * The `Symbol.for` key under which the runtime finds the files (the
 * browser client imports nothing, so `src/client/webxdc_assets.ts` names
 * it too; the browser journeys fail when the two differ).
 */
export const ASSETS_KEY: string = "pod-broker.webxdc.assets";

/** Media types of the data files kept beside those a page may inline. */
const DATA_TYPES: Readonly<Record<string, string>> = {
  ".json": "application/json",
  ".txt": "text/plain",
  ".csv": "text/csv",
  ".xml": "application/xml",
};

/**
 * The app's files that scripts may load by path, by their path in the
 * bundle.
 *
 * @param folder The app's folder.
 * @param maxBytes The most the kept files may hold together.
 * @returns Path (`img/a.svg`) to media type and base64.
 * @throws {XdcError} Past 4,096 files or folders, or `maxBytes`, or for
 * a key (one line).
 */
export async function appAssets(
  folder: string,
  maxBytes: number,
): Promise<Assets> {
  const assets: Record<string, readonly [string, string]> = {};
  const seen = { files: 0, folders: 0 };
  let bytes = 0;
  const visit = async (path: string, name: string): Promise<void> => {
    const kind = await lstat(path);
    const counted = kind.isDirectory() ? "folders" : "files";
    if (++seen[counted] > XDC_MAX_ENTRIES) {
      throw new XdcError(`it has more than ${XDC_MAX_ENTRIES} ${counted}`);
    }
    if (kind.isDirectory()) {
      for (const entry of (await readdir(path)).sort()) {
        if (entry.startsWith(".") || entry === "node_modules") continue;
        await visit(join(path, entry), name ? `${name}/${entry}` : entry);
      }
      return;
    }
    const type = kind.isFile() ? typeOf(name) : undefined;
    if (type === undefined) return;
    bytes += kind.size;
    if (bytes > maxBytes) {
      throw new XdcError(
        `its files hold more than ${maxBytes.toLocaleString("en")} bytes`,
      );
    }
    const content = await readFile(path);
    const key = keyProblem(name, content);
    if (key !== undefined) throw new XdcError(`'${name}' ${keyRefusal(key)}`);
    assets[name] = [type, encodeBase64(content)];
  };
  await visit(folder, "");
  return assets;
}

/**
 * The statement that hands `assets` to the webxdc runtime, to run before
 * it: nothing when there are none.
 *
 * @param assets What {@linkcode appAssets} found.
 * @returns JavaScript source.
 */
export function assetsStatement(assets: Assets): string {
  if (Object.keys(assets).length === 0) return "";
  return `globalThis[Symbol.for(${JSON.stringify(ASSETS_KEY)})] = ${
    JSON.stringify(assets)
  };\n`;
}

function typeOf(name: string): string | undefined {
  const extension = extname(name).toLowerCase();
  return mediaTypeOf(name) ??
    (Object.hasOwn(DATA_TYPES, extension) ? DATA_TYPES[extension] : undefined);
}
