/**
 * The `dev` command: a pod folder, live. A broker of this package (the
 * runtime's own `createSignalServer`, on the memory registry) serves the
 * folder's page as a published pod, with every header a broker sends: on
 * its own origin (`http://LABEL.localhost:PORT/`, as `--pod-domain
 * localhost`), or with `--opaque` at `/ID` on the broker's host. Each save
 * in the folder rebuilds it (debounced) and stores it as an update of the
 * same pod, through the broker's own update code; open tabs reload (see
 * `dev_pod.ts`). A build error is printed and served as the page.
 *
 * A webxdc app (`APP.xdc`) is served the same way, built as `import`
 * builds it; each time the file is written again (packed anew) it is
 * rebuilt. A bundle that `import` refuses at the start is refused with
 * `import`'s line and exit 2.
 *
 * The pod's id comes from the folder's path, so its URL survives a restart
 * of `dev`, and tabs left open pick the pod up again.
 *
 * @module
 */

import { watch } from "node:fs";
import { stat } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import process from "node:process";
import { encodeBase64Url } from "../_util/encoding.ts";
import { oneLine } from "../_util/text.ts";
import { sha256 } from "../_util/hash.ts";
import { OptionError } from "../config/options.ts";
import type { SignalServer } from "../config/types.ts";
import { BundlerError } from "../bundler/mod.ts";
import { isXdcPath, XdcError } from "../bundler/xdc.ts";
import { createPod, replacePod } from "../http/create_pod.ts";
import { generateKeyPair } from "../pod/ed25519.ts";
import { signUpdate } from "../pod/update.ts";
import { verifyPod } from "../pod/verify.ts";
import type { Registry } from "../registries/types.ts";
import { MemoryRegistry } from "../registries/memory.ts";
import { buildForDev, reloadScript, signForDev } from "./dev_pod.ts";
import { parse, stderr } from "./io.ts";
import { findPodFolder } from "./pod_folder.ts";
import { portInUseLine } from "./serve_flags.ts";
import type { CreateSignalServer } from "./server_factory.ts";
import { UsageError } from "./usage_error.ts";

/** The port `dev` listens on unless told. */
export const DEV_PORT = 8787;
/** Quiet time after a change before the rebuild (ms). */
const DEBOUNCE_MS = 80;
/** The room two tabs of the printed URL share. */
const DEV_ROOM = "dev";

/**
 * `dev [ENTRY.html | APP.xdc | DIR] [--port N] [--hostname H] [--opaque]`:
 * serves until SIGINT or SIGTERM.
 *
 * @param args The arguments after `dev`.
 * @param createSignalServer The runtime's server factory.
 * @returns 0 after Ctrl-C; 1 when the bundler (esbuild) cannot run here;
 * 2 when the webxdc app given is refused at the start.
 * @throws {UsageError} For a bad flag, a missing page, a port in use.
 */
export async function dev(
  args: string[],
  createSignalServer: CreateSignalServer,
): Promise<number> {
  try {
    return await serveFolder(args, createSignalServer);
  } catch (error) {
    if (!(error instanceof BundlerError || error instanceof XdcError)) {
      throw error;
    }
    // A bundle refused (2, in import's words) or the machine (1, as build).
    stderr(`pod-broker: ${oneLine(error.message)}\n`);
    return error instanceof XdcError ? 2 : 1;
  }
}

/** {@linkcode dev}, but for a bundler that cannot run. */
async function serveFolder(
  args: string[],
  createSignalServer: CreateSignalServer,
): Promise<number> {
  const { values, positionals } = parse(args, {
    port: { type: "string" },
    hostname: { type: "string" },
    opaque: { type: "boolean" },
  }, true);
  if (positionals.length > 1) {
    throw new UsageError("dev takes at most one ENTRY.html, APP.xdc or DIR");
  }
  const entry = await entryOf(positionals[0] ?? ".");
  const folder = dirname(entry);
  const port = portOf(values.port);
  const settings = await findPodFolder(folder);
  // Never the author's key: a folder is anyone's to write, and its page
  // can read its own signed bytes. A key of this run signs every version.
  const { seed } = await generateKeyPair();
  const script = await reloadScript(entry);
  const registry = new MemoryRegistry();
  const server = await listen(createSignalServer, {
    registry,
    port,
    hostname: values.hostname ?? "127.0.0.1",
    ...(values.opaque ? {} : { podDomain: "localhost" }),
    accessLog: "off",
    logger: (level, message) => {
      if (level !== "info") stderr(`pod-broker dev: ${level}: ${message}\n`);
    },
  });
  let watcher: { close(): void } | undefined;
  try {
    const id = folderId(folder);
    const rebuild = rebuilder({
      entry,
      script,
      seed,
      name: settings?.name,
      registry,
      id,
    });
    // Watched from before the first build, so that no save made once the
    // URL is out can be missed (a recursive watch starts asynchronously).
    const first = rebuild();
    watcher = watchFolder(folder, rebuild, first, watched(entry));
    await first;
    // Listened for before the URL is out: whoever reads it may stop us at
    // once, and the default would end the process without closing it.
    const stopped = new Promise<string>((done) => {
      process.once("SIGINT", () => done("SIGINT"));
      process.once("SIGTERM", () => done("SIGTERM"));
    });
    stderr(
      `pod-broker dev: serving ${entry}, signed with a throwaway key${
        values.opaque ? ", on the broker's host (--opaque)" : ""
      }\n`,
    );
    process.stdout.write(`${await podUrl(server, id)}#${DEV_ROOM}\n`);
    stderr(
      "pod-broker dev: open that URL in two tabs (two peers of one room); each save reloads them; Ctrl-C stops\n",
    );
    const signal = await stopped;
    stderr(`pod-broker dev: stopped (${signal})\n`);
  } finally {
    watcher?.close();
    await server.close();
  }
  return 0;
}

/** What one rebuild needs. */
interface RebuildOptions {
  entry: string;
  script: string;
  seed: Uint8Array;
  name: string | undefined;
  registry: MemoryRegistry;
  id: string;
}

/**
 * A rebuild of the folder: built, signed later than the last version, and
 * stored as pod `id` (made the first time, then updated through the
 * broker's own update code); a build that changed nothing is not stored.
 * A webxdc app that fails its first build is refused (its error thrown).
 */
function rebuilder(options: RebuildOptions): () => Promise<void> {
  const { entry, script, seed, name, registry, id } = options;
  let stored: { createdAt: string; html: string } | undefined;
  return async () => {
    const started = performance.now();
    const built = await buildForDev(entry, script);
    if (built.error instanceof XdcError && stored === undefined) {
      throw built.error;
    }
    const kind = built.failed ? "error" : "warning";
    for (const line of built.lines) {
      stderr(`pod-broker dev: ${kind}: ${line}\n`);
    }
    if (built.html === stored?.html) return;
    const { pod, createdAt } = await signForDev(built.html, seed, {
      name: built.name ?? name,
      after: stored?.createdAt,
    });
    if (stored === undefined) {
      await createPod(registry, pod, { randomId: () => id });
    } else await replaceAsOwner(registry, id, pod, seed);
    stored = { createdAt, html: built.html };
    const ms = Math.round(performance.now() - started);
    stderr(
      built.failed
        ? `pod-broker dev: the build failed (${built.lines.length} problem(s)); the page shows them\n`
        : `pod-broker dev: built in ${ms} ms (${
          pod.length.toLocaleString("en")
        } bytes)\n`,
    );
  };
}

/** The page: ENTRY.html or APP.xdc as given, or DIR/index.html. */
async function entryOf(given: string): Promise<string> {
  const path = resolve(given);
  const info = await stat(path).catch(() => null);
  const entry = info?.isDirectory() ? join(path, "index.html") : path;
  if (!(await stat(entry).catch(() => null))?.isFile()) {
    throw new UsageError(
      `Cannot serve '${given}': no such page (dev takes ENTRY.html, APP.xdc, or a folder with index.html)`,
    );
  }
  return entry;
}

/** What of the page's folder is watched, and which changes rebuild. */
interface Watched {
  /** Whether subfolders are watched too. */
  recursive: boolean;
  /** Whether a change of this name (relative to the folder) rebuilds. */
  wanted(name: string): boolean;
}

/**
 * What to watch: a webxdc app's own file only (its folder may be any, such
 * as Downloads), else the whole folder but `node_modules`, dot files and
 * editor backups.
 */
function watched(entry: string): Watched {
  if (isXdcPath(entry)) {
    const file = basename(entry);
    return { recursive: false, wanted: (name) => name === file };
  }
  return {
    recursive: true,
    wanted: (name) =>
      !/(^|[\\/])(node_modules|\.[^\\/]*)([\\/]|$)|~$/.test(name),
  };
}

/** `--port N`: 0 to 65535 (0: any free port). */
function portOf(value: string | undefined): number {
  if (value === undefined) return DEV_PORT;
  const port = Number(value);
  if (!/^\d{1,5}$/.test(value) || port > 65535) {
    throw new UsageError(`Cannot use --port '${value}': not a port number`);
  }
  return port;
}

/** Starts the broker; a port in use is the user's to change. */
async function listen(
  createSignalServer: CreateSignalServer,
  options: Parameters<CreateSignalServer>[0],
): Promise<SignalServer> {
  try {
    return await createSignalServer(options);
  } catch (error) {
    if (!(error instanceof OptionError)) throw error;
    throw new UsageError(
      /^is in use\b/.test(error.reason)
        ? portInUseLine(options.port ?? DEV_PORT, "port")
        : `Cannot listen on port ${options.port}: ${error.reason} (--port N)`,
    );
  }
}

/** A pod id of the folder's path: the same URL on every start. */
function folderId(folder: string): string {
  const digest = encodeBase64Url(sha256(new TextEncoder().encode(folder)));
  return digest.replace(/[-_]/g, "").slice(0, 12);
}

/** The pod's URL, as the broker's own `/meta` gives it. */
async function podUrl(server: SignalServer, id: string): Promise<string> {
  const host = server.hostname.includes(":")
    ? `[${server.hostname}]`
    : server.hostname;
  const base = `http://${host}:${server.port}`;
  const response = await fetch(`${base}/${id}/meta`);
  const meta = await response.json() as { url: string; podUrl?: string };
  return meta.podUrl ?? meta.url;
}

/**
 * Rebuilds after each quiet spell following a change in the folder that
 * `wanted` keeps; one rebuild at a time (`first` included), and one more
 * if the folder changed meanwhile.
 */
function watchFolder(
  folder: string,
  rebuild: () => Promise<void>,
  first: Promise<void>,
  { recursive, wanted }: Watched,
): { close(): void } {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let again = false;
  let running: Promise<void> | undefined = first.catch(() => {}).finally(
    () => {
      running = undefined;
      if (again) {
        again = false;
        run();
      }
    },
  );
  const run = () => {
    timer = undefined;
    if (running) {
      again = true;
      return;
    }
    running = rebuild().catch((error) => {
      stderr(`pod-broker dev: error: ${(error as Error).message}\n`);
    }).finally(() => {
      running = undefined;
      if (again) {
        again = false;
        run();
      }
    });
  };
  const watcher = watch(folder, { recursive }, (_event, name) => {
    if (!wanted(String(name ?? ""))) return;
    clearTimeout(timer);
    timer = setTimeout(run, DEBOUNCE_MS);
  });
  return {
    close() {
      clearTimeout(timer);
      watcher.close();
    },
  };
}

/** Replaces pod `id` as its owner would: with the signed update statement. */
async function replaceAsOwner(
  registry: Registry,
  id: string,
  pod: Uint8Array,
  seed: Uint8Array,
): Promise<void> {
  const current = await registry.getRecord(id);
  if (current === null) throw new Error(`dev: pod '${id}' is gone`);
  const { contentSha256 } = await verifyPod(pod);
  const signature = await signUpdate(
    { id, replaces: current.sha256, contentSha256 },
    seed,
  );
  await replacePod(registry, id, pod, { signature, current });
}
