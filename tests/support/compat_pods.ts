// Builds a pod that uses real npm packages (yjs, y-webrtc, peerjs,
// trystero) with the project's own `build`: the app folder is copied to a
// temp dir, given a package.json that pins the packages at deno.json's
// exact versions (and the project's deno.lock, so their dependencies are the
// locked ones), and `deno install` lays out its node_modules, where the
// bundler finds them.
// Runs outside the journeys' network namespace: the first install may fetch.
import { cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import config from "../../deno.json" with { type: "json" };
import { buildPod } from "../../src/bundler/mod.ts";
import { newSeed } from "./helpers.ts";

const ROOT = new URL("../..", import.meta.url).pathname;

/** The npm packages a compat pod may use, as deno.json pins them. */
const PACKAGES = ["yjs", "y-webrtc", "peerjs", "trystero"] as const;

/** `{ name: version }` of the packages, from deno.json's `npm:` imports. */
export function pinnedPackages(): Record<string, string> {
  const imports = config.imports as Record<string, string>;
  const pinned: Record<string, string> = {};
  for (const name of PACKAGES) {
    const match = /^npm:(.+)@(\d+\.\d+\.\d+)$/.exec(imports[name] ?? "");
    if (match === null || match[1] !== name) {
      throw new Error(`deno.json must pin '${name}' as npm:${name}@X.Y.Z`);
    }
    pinned[name] = match[2]!;
  }
  return pinned;
}

/**
 * Builds the app in `folder` (its `index.html`) into a signed pod.
 *
 * @param folder The app's folder (absolute, or relative to the project).
 * @param name The pod's name.
 * @returns The pod's bytes.
 */
export async function buildCompatPod(
  folder: string,
  name: string,
): Promise<Uint8Array> {
  const dir = await mkdtemp(join(tmpdir(), "compat-pod-"));
  try {
    await cp(join(ROOT, folder), dir, { recursive: true });
    await writeFile(
      join(dir, "package.json"),
      JSON.stringify({ private: true, dependencies: pinnedPackages() }),
    );
    await writeFile(
      join(dir, "deno.lock"),
      await readFile(join(ROOT, "deno.lock")),
    );
    const install = await new Deno.Command(Deno.execPath(), {
      args: ["install", "--quiet"],
      cwd: dir,
      stdin: "null",
      env: { NO_COLOR: "1" },
    }).output();
    if (install.code !== 0) {
      throw new Error(
        `Cannot install the packages: ${
          new TextDecoder().decode(install.stderr)
        }`,
      );
    }
    // A BuildError names each problem with its file and line.
    const { html } = await buildPod(join(dir, "index.html"), {
      seed: await newSeed(),
      name,
    });
    return html;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
