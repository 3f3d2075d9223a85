/**
 * The command line: `serve` (the default) maps flags to the options of
 * `createSignalServer` (flags, `--help` and conversions come from the
 * options table); `keygen`, `sign`, `verify` and `publish` are the pod
 * author's tools. Bad input exits 2 with a one-line reason; an unexpected
 * error is a bug and exits 1 with its stack.
 *
 * @module
 */

import process from "node:process";
import { parse, print, stderr } from "./io.ts";
import { keygen, publish, signCommand, verifyCommand } from "./pod_tools.ts";
import {
  describeOptionError,
  type FlagValues,
  openBus,
  optionsFromFlags,
  serveFlagConfig,
  serveHelp,
} from "./serve_flags.ts";
import { UsageError } from "./usage_error.ts";
import { DenyList, DenyListError } from "../operator/deny_list.ts";
import { jsonLogger } from "../_util/log.ts";
import { OptionError } from "../config/options.ts";
import { openRegistry } from "./registry.ts";
import { deleteCommand, listCommand } from "./operator.ts";
import type { Bus } from "../signaling/bus/mod.ts";
import type { SignalServer, SignalServerOptions } from "../config/types.ts";
import { VERSION } from "../version.ts";

/** The runtime's `createSignalServer`, passed in by `mod.ts` or `mod_node.ts`. */
export type CreateSignalServer = (
  options: SignalServerOptions,
) => Promise<SignalServer>;

function help(): string {
  return `pod-broker ${VERSION}: signed single-file web apps, served and signaled

Usage:
  pod-broker [serve] [options]          start the broker
  pod-broker keygen [--out FILE]        make an Ed25519 key (PKCS#8 PEM)
  pod-broker sign --key FILE [--name NAME] [--created-at] [--out FILE] POD.html
  pod-broker verify POD.html            check a signed pod
  pod-broker publish --broker URL [--key FILE] [--name NAME] [--update ID] POD.html
                                        sign (with a fresh key if none) and upload
  pod-broker build ENTRY.html [--out FILE] [--key FILE] [--name NAME]
  pod-broker list (--data-dir D | --registry postgres --database-url URL) [--owner KEY]
                                        the stored pods, one JSON record a line
  pod-broker delete ID (--data-dir D | --registry postgres --database-url URL)
                                        take a pod down: its URL answers 410

Serve options:
${serveHelp()}
`;
}

/**
 * Runs the command line.
 *
 * @param args The arguments after the program name.
 * @param createSignalServer The runtime's server factory.
 * @returns The exit code: 0 on success, 1 on failure, 2 on bad input.
 */
export async function runCli(
  args: string[],
  createSignalServer: CreateSignalServer,
): Promise<number> {
  try {
    const [command, ...rest] = args;
    switch (command) {
      case "keygen":
        return await keygen(rest);
      case "sign":
        return await signCommand(rest);
      case "verify":
        return await verifyCommand(rest);
      case "publish":
        return await publish(rest);
      case "list":
        return await listCommand(rest);
      case "delete":
        return await deleteCommand(rest);
      case "build":
        // Loaded on demand: serving never loads the bundler (esbuild).
        return await (await import("../build/mod.ts")).runBuild(rest);
      case "serve":
        return await serve(rest, createSignalServer);
      default:
        return await serve(args, createSignalServer);
    }
  } catch (error) {
    if (error instanceof UsageError) {
      stderr(`pod-broker: ${oneLine(error.message)} (see --help)\n`);
      return 2;
    }
    // Anything else is ours to fix, not the user's input.
    const { message, stack } = error instanceof Error
      ? error
      : { message: String(error), stack: undefined };
    stderr(
      `pod-broker: unexpected error (a bug, please report it): ${message}\n`,
    );
    if (stack) stderr(`${stack}\n`);
    return 1;
  }
}

async function serve(
  args: string[],
  createSignalServer: CreateSignalServer,
): Promise<number> {
  const { values } = parse(args, serveFlagConfig(), false) as {
    values: FlagValues;
  };
  if (values.help) return print(help());
  if (values.version) return print(`${VERSION}\n`);
  const { options: fromFlags, given } = optionsFromFlags(values);
  const denyList = await loadDenyList(values["deny-list"]);
  if (denyList) fromFlags.denyList = denyList;
  const kind = (values.registry as string | undefined) ?? "memory";
  const registry = await openRegistry(
    kind,
    values["data-dir"] as string | undefined,
    { databaseUrl: values["database-url"] as string | undefined },
  );
  let server: SignalServer;
  let bus: Bus | undefined;
  try {
    bus = await openBus(values);
    server = await createSignalServer({
      ...fromFlags,
      registry,
      ...(bus ? { bus } : {}),
    });
  } catch (error) {
    await bus?.close();
    await registry.close?.();
    if (error instanceof OptionError) {
      throw new UsageError(describeOptionError(error, given));
    }
    throw error;
  }
  const shown = server.hostname.includes(":")
    ? `[${server.hostname}]`
    : server.hostname;
  jsonLogger(
    "info",
    `pod-broker ${VERSION} listening on http://${shown}:${server.port}`,
    {
      registry: kind,
      ...(server.metricsPort === null ? {} : {
        metrics: `http://${
          fromFlags.metrics?.hostname ?? "127.0.0.1"
        }:${server.metricsPort}/metrics`,
      }),
    },
  );
  // SIGHUP reloads the deny list; a bad file keeps the old entries.
  const reload = () => {
    denyList?.reload().then(
      (entries) => jsonLogger("info", "Deny list reloaded", { entries }),
      (error) => jsonLogger("warn", (error as Error).message),
    );
  };
  if (denyList) process.on("SIGHUP", reload);
  const signal = await new Promise<string>((resolve) => {
    process.once("SIGINT", () => resolve("SIGINT"));
    process.once("SIGTERM", () => resolve("SIGTERM"));
  });
  process.off("SIGHUP", reload);
  jsonLogger("info", "Shutting down", { signal });
  await server.close();
  await bus?.close();
  await registry.close?.();
  return 0;
}

/**
 * A message on one line: control characters from the user's input (a
 * newline in a file name) are shown escaped, as JSON would.
 */
function oneLine(message: string): string {
  return message.replace(
    // deno-lint-ignore no-control-regex
    /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g,
    (c) =>
      c < "\u0020"
        ? JSON.stringify(c).slice(1, -1)
        : `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/** `--deny-list FILE`, loaded; a missing or bad file is a usage error. */
async function loadDenyList(
  path: string | boolean | string[] | undefined,
): Promise<DenyList | undefined> {
  if (typeof path !== "string") return undefined;
  try {
    return await DenyList.load(path);
  } catch (error) {
    if (error instanceof DenyListError) throw new UsageError(error.message);
    throw error;
  }
}
