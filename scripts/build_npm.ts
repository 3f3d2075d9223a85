/**
 * Builds the npm package by hand, as `dnt` would (dnt lives on JSR, which
 * this project cannot reach):
 *
 * 1. stages `src/` in `npm/src/`, leaving out the Deno-only files; the npm
 *    entry point is `mod_node.ts` (Deno's is `mod.ts`);
 * 2. compiles it with TypeScript against Node's types only, so a stray
 *    `Deno.` breaks the build, into `npm/esm/` (`.js` and `.d.ts`, imports
 *    rewritten from `.ts` to `.js`);
 * 3. bundles the server's JavaScript (the entry point and the subpath exports
 *    but the browser client) into `npm/esm/server/`, split into chunks that
 *    load on first use, and drops the per-file copies: Node then loads a
 *    serving start's code from a few files, not one per module (a cold start
 *    on Node 22 35 to 42 ms shorter, see docs/performance.md), each with a
 *    source map back to `src/` (TypeScript's maps, chained). The `.d.ts`
 *    files and the client stay per file in `npm/esm/`;
 * 4. writes `npm/package.json` with the exact dependency versions from
 *    `deno.json`, copies README and LICENSE;
 * 5. packs `pod-broker-<version>.tgz` into the project root.
 *
 * Run it with `deno task build:npm`.
 *
 * @module
 */

import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";
import ts from "typescript";
import {
  NODE_BIN,
  NODE_ENTRY,
  PACKAGE_NAME,
  SERVER_DIR,
} from "../tests/support/npm_layout.ts";

/** Oldest Node.js with `node:sqlite` unflagged. */
const NODE_ENGINES = ">=22.13";
/** Files of `src/` that only Deno can run; the Node build leaves them out. */
const DENO_ONLY = new Set(["mod.ts", "adapters/deno.ts"]);
/** The browser client (`pod-broker/client`), compiled with the DOM's types. */
const CLIENT_DIR = "client";
/** Tools the build needs, with versions taken from `deno.json` "imports". */
const BUILD_TOOLS = ["typescript", "@types/node"];
/** Files copied into the package when present. */
const EXTRA_FILES = ["README.md", "LICENSE"];

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const NPM_DIR = join(ROOT, "npm");

/** What a build produced. */
export interface BuildResult {
  /** The package version (from `deno.json`). */
  version: string;
  /** Absolute path of the packed tarball in the project root. */
  tarball: string;
}

interface DenoConfig {
  version: string;
  exports?: Record<string, string>;
  license?: string;
  imports?: Record<string, string>;
  compilerOptions?: Record<string, unknown>;
}

/**
 * Builds `npm/` and packs it, printing each step.
 *
 * @returns The version and the tarball's path.
 * @throws {Error} When a step fails (with the failing tool's output).
 */
export async function buildNpm(): Promise<BuildResult> {
  const log = (text: string) => console.log(text);
  const types = `./esm/${NODE_ENTRY.replace(/\.ts$/, ".d.ts")}`;
  const config = JSON.parse(
    await Deno.readTextFile(join(ROOT, "deno.json")),
  ) as DenoConfig;
  const imports = config.imports ?? {};

  log(`Staging src/ in npm/src/ (without ${[...DENO_ONLY].join(", ")})`);
  await clean();
  const staged = await stageSources();
  const dependencies = dependenciesOf(staged, imports);
  const devDependencies: Record<string, string> = {};
  for (
    const name of [...BUILD_TOOLS, ...Object.keys(dependencies).map(typesOf)]
  ) {
    if (name in imports) devDependencies[name] = exactVersion(name, imports);
  }
  for (const tool of BUILD_TOOLS) {
    if (!(tool in devDependencies)) {
      throw new Error(`Cannot build: add "${tool}" to deno.json "imports"`);
    }
  }

  const tarball = join(ROOT, `${PACKAGE_NAME}-${config.version}.tgz`);
  await writeJson(join(NPM_DIR, "package.json"), {
    name: PACKAGE_NAME,
    version: config.version,
    description:
      "Serves Ed25519-signed single-file web apps (pods) under a strict CSP and relays WebRTC signaling between their peers",
    license: config.license ?? "MIT",
    type: "module",
    main: `./${NODE_BIN}`,
    types,
    exports: {
      ".": { types, default: `./${NODE_BIN}` },
      ...subpathExports(config.exports ?? {}),
      "./package.json": "./package.json",
    },
    // mod_node.ts starts with `#!/usr/bin/env node` and runs the CLI as main.
    bin: { [PACKAGE_NAME]: `./${NODE_BIN}` },
    files: ["esm/"],
    engines: { node: NODE_ENGINES },
    dependencies,
    devDependencies,
  });
  await writeJson(join(NPM_DIR, "tsconfig.json"), tsconfig(config));
  await writeJson(
    join(NPM_DIR, "tsconfig.client.json"),
    clientTsconfig(config),
  );
  for (const file of EXTRA_FILES) {
    try {
      await Deno.copyFile(join(ROOT, file), join(NPM_DIR, file));
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
      console.warn(`Warning: ${file} is missing; the package goes without it`);
    }
  }

  log(
    `Installing ${
      Object.keys({ ...dependencies, ...devDependencies }).join(", ")
    }`,
  );
  await run("npm", [
    "install",
    "--no-audit",
    "--no-fund",
    "--ignore-scripts",
    "--no-package-lock",
  ], NPM_DIR);

  log("Compiling with TypeScript against Node's types");
  const tsc = join(NPM_DIR, "node_modules/typescript/bin/tsc");
  await run("node", [tsc, "-p", "tsconfig.json"], NPM_DIR);
  log("Compiling the browser client against the DOM's types");
  await run("node", [tsc, "-p", "tsconfig.client.json"], NPM_DIR);
  await fixDeclarations(join(NPM_DIR, "esm"));
  await selfTypes(join(NPM_DIR, "esm", CLIENT_DIR));
  log(`Bundling the server into npm/esm/${SERVER_DIR}/`);
  await bundleServer(serverEntries(config.exports ?? {}));
  await Deno.chmod(join(NPM_DIR, NODE_BIN), 0o755);

  log(`Packing ${relative(ROOT, tarball)}`);
  await Deno.remove(tarball).catch(() => {});
  await run("npm", ["pack", "--pack-destination", ROOT], NPM_DIR);
  await Deno.stat(tarball);
  return { version: config.version, tarball };
}

/**
 * Names each client module's declarations in the module itself
 * (`// @ts-self-types="./mod.d.ts"`), so that Deno type-checks a pod
 * folder's `app.ts` against the very file `build` bundles: the `deno.json`
 * that `pod-broker init` writes maps `pod-broker/client` to `mod.js`.
 */
async function selfTypes(directory: string): Promise<void> {
  for await (const entry of Deno.readDir(directory)) {
    if (!entry.isFile || !entry.name.endsWith(".js")) continue;
    const path = join(directory, entry.name);
    const types = entry.name.replace(/\.js$/, ".d.ts");
    const code = await Deno.readTextFile(path);
    await Deno.writeTextFile(
      path,
      `// @ts-self-types="./${types}"\n${code}`,
    );
  }
}

/** Empties `npm/`, keeping `node_modules/` so that rebuilds install fast. */
async function clean(): Promise<void> {
  await Deno.mkdir(NPM_DIR, { recursive: true });
  for await (const entry of Deno.readDir(NPM_DIR)) {
    if (entry.name === "node_modules") continue;
    await Deno.remove(join(NPM_DIR, entry.name), { recursive: true });
  }
}

/** Copies `src/**.ts` minus the Deno-only files; returns the staged paths. */
async function stageSources(): Promise<string[]> {
  const staged: string[] = [];
  async function walk(directory: string): Promise<void> {
    for await (const entry of Deno.readDir(join(ROOT, "src", directory))) {
      const path = directory ? `${directory}/${entry.name}` : entry.name;
      if (entry.isDirectory) {
        await walk(path);
      } else if (path.endsWith(".ts") && !DENO_ONLY.has(path)) {
        const target = join(NPM_DIR, "src", path);
        await Deno.mkdir(dirname(target), { recursive: true });
        await Deno.copyFile(join(ROOT, "src", path), target);
        staged.push(target);
      }
    }
  }
  await walk("");
  if (!staged.some((path) => path.endsWith(`/src/${NODE_ENTRY}`))) {
    throw new Error(`Cannot build: src/${NODE_ENTRY} is missing`);
  }
  return staged;
}

/**
 * The npm packages the staged sources import, each at the exact version
 * that `deno.json` maps it to, as for `package.json` "dependencies".
 */
function dependenciesOf(
  staged: string[],
  imports: Record<string, string>,
): Record<string, string> {
  const names = new Set<string>();
  for (const path of staged) {
    // The compiler's own scanner: comments and strings are no imports.
    const { importedFiles } = ts.preProcessFile(Deno.readTextFileSync(path));
    for (const { fileName: specifier } of importedFiles) {
      if (specifier.startsWith(".") || specifier.startsWith("node:")) continue;
      const parts = specifier.split("/");
      const name = specifier.startsWith("@")
        ? parts.slice(0, 2).join("/")
        : parts[0]!;
      if (!(name in imports)) {
        throw new Error(
          `Cannot build: ${
            relative(NPM_DIR, path)
          } imports '${specifier}', which deno.json "imports" does not map`,
        );
      }
      names.add(name);
    }
  }
  const dependencies: Record<string, string> = {};
  for (const name of [...names].sort()) {
    dependencies[name] = exactVersion(name, imports);
  }
  return dependencies;
}

/** The exact version in `"name": "npm:name@1.2.3"`. */
function exactVersion(name: string, imports: Record<string, string>): string {
  const match = /^npm:(@?[^@]+)@(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?)$/
    .exec(imports[name] ?? "");
  if (!match || match[1] !== name) {
    throw new Error(
      `Cannot build: deno.json maps '${name}' to '${
        imports[name]
      }'; expected "npm:${name}@<exact version>"`,
    );
  }
  return match[2]!;
}

/** `@types/ws` for `ws`, `@types/scope__name` for `@scope/name`. */
function typesOf(name: string): string {
  return `@types/${name.replace(/^@/, "").replace("/", "__")}`;
}

/** The compiler options: deno.json's strictness, Node's types only, ESM out. */
function tsconfig(config: DenoConfig): unknown {
  return {
    compilerOptions: {
      ...config.compilerOptions,
      target: "ES2023",
      lib: ["ES2024"],
      // Node's globals only: no DOM, no Deno.
      types: ["node"],
      module: "NodeNext",
      moduleResolution: "NodeNext",
      rootDir: "src",
      outDir: "esm",
      declaration: true,
      rewriteRelativeImportExtensions: true,
      erasableSyntaxOnly: true,
      // Explicit types on exports, as JSR asks.
      isolatedDeclarations: true,
      verbatimModuleSyntax: true,
      skipLibCheck: true,
      newLine: "lf",
      // Read by the bundler, which maps the bundle back to `src/`; the
      // per-file copies that carry them do not ship.
      inlineSourceMap: true,
    },
    include: ["src"],
    exclude: [`src/${CLIENT_DIR}`],
  };
}

/** The browser client's compiler options: the DOM's globals, no Node. */
function clientTsconfig(config: DenoConfig): unknown {
  const base = tsconfig(config) as {
    compilerOptions: Record<string, unknown>;
  };
  return {
    compilerOptions: {
      ...base.compilerOptions,
      lib: ["ES2024", "DOM", "DOM.Iterable"],
      types: [],
      // The client ships per file, as compiled, with no map.
      inlineSourceMap: false,
    },
    include: [`src/${CLIENT_DIR}`],
  };
}

/**
 * TypeScript rewrites `.ts` to `.js` in the emitted JavaScript but keeps the
 * specifiers of declaration files as written; rewrite those too, so the
 * types resolve for every consumer.
 */
async function fixDeclarations(directory: string): Promise<void> {
  for await (const entry of Deno.readDir(directory)) {
    const path = join(directory, entry.name);
    if (entry.isDirectory) {
      await fixDeclarations(path);
      continue;
    }
    if (!entry.name.endsWith(".d.ts")) continue;
    const text = await Deno.readTextFile(path);
    const fixed = text.replace(
      /((?:\bfrom|\bimport)\s*\(?\s*["'])(\.{1,2}\/[^"']*?)\.ts(["'])/g,
      "$1$2.js$3",
    );
    if (fixed !== text) await Deno.writeTextFile(path, fixed);
  }
}

async function writeJson(path: string, value: unknown): Promise<void> {
  await Deno.mkdir(dirname(path), { recursive: true });
  await Deno.writeTextFile(path, `${JSON.stringify(value, null, 2)}\n`);
}

/** Runs a command in `cwd`; on failure throws with its output. */
async function run(
  command: string,
  args: string[],
  cwd: string,
): Promise<void> {
  const { code, stdout, stderr } = await new Deno.Command(command, {
    args,
    cwd,
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (code !== 0) {
    const output = new TextDecoder().decode(stdout) +
      new TextDecoder().decode(stderr);
    throw new Error(
      `Cannot build: '${command} ${
        args.join(" ")
      }' exited with ${code}\n${output}`,
    );
  }
}

/**
 * The subpaths of `deno.json` "exports" other than ".", pointed at their
 * compiled files: `./src/a/b.ts` has its types in `./esm/a/b.d.ts` and its
 * code in the bundle, `./esm/server/b.js` (the client's in `./esm/a/b.js`).
 */
function subpathExports(
  exports: Record<string, string>,
): Record<string, { types: string; default: string }> {
  const out: Record<string, { types: string; default: string }> = {};
  for (const [subpath, file] of Object.entries(exports)) {
    if (subpath === ".") continue;
    const base = file.replace(/^\.\/src\//, "./esm/").replace(/\.ts$/, "");
    const code = isClient(file)
      ? `${base}.js`
      : `./esm/${SERVER_DIR}/${base.replace(/^.*\//, "")}.js`;
    out[subpath] = { types: `${base}.d.ts`, default: code };
  }
  return out;
}

/** Whether a `deno.json` export is the browser client's (kept per file). */
function isClient(file: string): boolean {
  return file.startsWith(`./src/${CLIENT_DIR}/`);
}

/** The compiled files the bundle starts from: the entry, then the exports. */
function serverEntries(exports: Record<string, string>): string[] {
  const files = Object.entries(exports)
    .filter(([subpath, file]) => subpath !== "." && !isClient(file))
    .map(([, file]) => file.replace(/^\.\/src\//, ""));
  return [NODE_ENTRY, ...files].map((file) =>
    join(NPM_DIR, "esm", file.replace(/\.ts$/, ".js"))
  );
}

/**
 * Bundles the compiled server from `entries` into `npm/esm/server/` (each
 * entry under its own name, the rest in chunks, dynamic imports still
 * loaded on first use, npm packages and `node:` modules left as imports),
 * then removes the per-file `.js` it came from, the client's aside.
 */
async function bundleServer(entries: string[]): Promise<void> {
  const names = entries.map((path) => path.replace(/^.*\//, ""));
  if (new Set(names).size !== names.length) {
    throw new Error(`Cannot build: two exports share a name (${names})`);
  }
  try {
    await esbuild.build({
      entryPoints: entries,
      outdir: join(NPM_DIR, "esm", SERVER_DIR),
      entryNames: "[name]",
      bundle: true,
      splitting: true,
      format: "esm",
      platform: "node",
      target: "node22",
      packages: "external",
      // A `.map` beside each file, naming `src/` paths and lines (not
      // their text): Node started with `--enable-source-maps` puts them in
      // stack traces.
      sourcemap: "linked",
      sourcesContent: false,
      logLevel: "silent",
    });
  } finally {
    await esbuild.stop();
  }
  await removePerFileCode(join(NPM_DIR, "esm"));
}

/** Deletes the compiled `.js` files under `directory` but the bundle's and the client's. */
async function removePerFileCode(directory: string): Promise<void> {
  for await (const entry of Deno.readDir(directory)) {
    const path = join(directory, entry.name);
    if (entry.isDirectory) {
      const top = relative(join(NPM_DIR, "esm"), path);
      if (top !== SERVER_DIR && top !== CLIENT_DIR) {
        await removePerFileCode(path);
      }
    } else if (entry.name.endsWith(".js")) {
      await Deno.remove(path);
    }
  }
}

if (import.meta.main) {
  const { tarball } = await buildNpm();
  console.log(`Built ${relative(ROOT, tarball)}`);
}
