/**
 * The `serve` command (the default): flags to options, the registry and the
 * bus opened, the server started, then SIGHUP reloads the deny list and
 * SIGINT or SIGTERM stops it all. A setup problem (a port in use, a data
 * directory that is a file) is the user's to fix: a {@linkcode UsageError}.
 *
 * @module
 */

import process from "node:process";
import { parse, print } from "./io.ts";
import {
  describeOptionError,
  type FlagValues,
  openBus,
  optionsFromFlags,
  serveFlagConfig,
  serveHelp,
} from "./serve_flags.ts";
import { UsageError } from "./usage_error.ts";
import { COMMANDS } from "./usage.ts";
import { DenyList, DenyListError } from "../operator/deny_list.ts";
import { jsonLogger } from "../_util/log.ts";
import { OptionError } from "../config/options.ts";
import { openRegistry } from "./registry.ts";
import type { Bus } from "../signaling/bus/mod.ts";
import type { SignalServer, SignalServerOptions } from "../config/types.ts";
import { VERSION } from "../version.ts";

/** The runtime's `createSignalServer`, passed in by `mod.ts` or `mod_node.ts`. */
export type CreateSignalServer = (
  options: SignalServerOptions,
) => Promise<SignalServer>;

/** `pod-broker --help`: the commands, then every serve option. */
export function help(): string {
  const lines = Object.values(COMMANDS).map(({ synopsis, summary }) =>
    `  ${synopsis}\n      ${summary}`
  );
  return `pod-broker ${VERSION}: signed single-file web apps, served and signaled

Usage:
  pod-broker [serve] [options]
      start the broker
${lines.join("\n")}

'pod-broker COMMAND --help' shows one command's usage.

Serve options:
${serveHelp()}
`;
}

/**
 * `serve [options]`: runs the broker until SIGINT or SIGTERM.
 *
 * @param args The arguments after `serve` (or all of them).
 * @param createSignalServer The runtime's server factory.
 * @returns 0 after a clean shutdown.
 * @throws {UsageError} For bad flags or a setup problem.
 */
export async function serve(
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
    throw listenProblem(error, fromFlags) ?? error;
  }
  const shown = server.hostname.includes(":")
    ? `[${server.hostname}]`
    : server.hostname;
  jsonLogger(
    "info",
    `pod-broker ${VERSION} listening on http://${shown}:${server.port}`,
    {
      // The process to signal (a wrapper such as npx has a PID of its own).
      pid: process.pid,
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
      (error) =>
        jsonLogger(
          "warn",
          `${(error as Error).message}; kept the previous list`,
          { entries: denyList.size },
        ),
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
 * A listener that could not start for a reason the operator can fix (the
 * port is taken or privileged, the address is not this machine's), as a
 * {@linkcode UsageError} saying what to do; undefined for anything else.
 */
export function listenProblem(
  error: unknown,
  options: Pick<SignalServerOptions, "port" | "hostname" | "metrics">,
): UsageError | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  const main = options.port ?? 8080;
  const metrics = options.metrics?.port;
  // Node names the port; Deno does not (then it is the main one, unless a
  // metrics port is asked for too).
  const named = (error as { port?: unknown }).port;
  const isMetrics = named === metrics && metrics !== undefined;
  const port = typeof named === "number" ? named : main;
  const flag = isMetrics ? "--metrics-port" : "--port";
  const which = typeof named !== "number" && metrics !== undefined
    ? `port ${main} or ${metrics}`
    : `port ${port}`;
  const flags = typeof named !== "number" && metrics !== undefined
    ? "--port or --metrics-port"
    : flag;
  switch (code) {
    case "EADDRINUSE":
      return new UsageError(`${which} is in use: pass ${flags}`);
    case "EACCES":
      return new UsageError(
        `${which} needs privileges: pass ${flags} above 1023`,
      );
    case "EADDRNOTAVAIL":
      return new UsageError(
        `cannot listen on '${
          options.hostname ?? "0.0.0.0"
        }': not an address of this machine: pass --hostname`,
      );
    default:
      return undefined;
  }
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
