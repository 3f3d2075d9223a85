/**
 * The `serve` command (the default): flags to options, the registry and the
 * bus opened, the server started, then SIGHUP reloads the deny list and
 * SIGINT or SIGTERM drains the sockets (`--drain-seconds`) and stops it
 * all. A setup problem (a port in use, a data directory that is a file) is
 * the user's to fix: a {@linkcode UsageError}.
 *
 * @module
 */

import { hostPid, offSignal, onSignal } from "../_util/host.ts";
import { print } from "./io.ts";
import {
  describeOptionError,
  openBus,
  optionsFromFlags,
  parseServeArgs,
  serveHelp,
} from "./serve_flags.ts";
import { UsageError } from "./usage_error.ts";
import { COMMANDS } from "./commands.ts";
import type { CreateSignalServer } from "./server_factory.ts";
import { jsonLogger } from "../_util/log.ts";
import { OptionError } from "../config/options.ts";
import { openRegistry } from "./registry.ts";
import type { Bus } from "../signaling/bus/mod.ts";
import type { SignalServer } from "../config/types.ts";
import { VERSION } from "../version.ts";

export type { CreateSignalServer };

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
  const values = parseServeArgs(args);
  if (values.help) return print(help());
  if (values.version) return print(`${VERSION}\n`);
  const { options: fromFlags, given, cli } = await optionsFromFlags(values);
  const denyList = fromFlags.denyList;
  const kind = cli.registry;
  const registry = await openRegistry(kind, cli["data-dir"], {
    databaseUrl: cli["database-url"],
  });
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
  // The listeners stay through the drain: a second signal changes nothing
  // (the window bounds it), where the runtime's default would end the
  // process at once, with the sockets left open. Listened for before the
  // "listening" line: whoever reads it may signal at once.
  const stop = Promise.withResolvers<string>();
  const onInt = () => stop.resolve("SIGINT");
  const onTerm = () => stop.resolve("SIGTERM");
  onSignal("SIGINT", onInt);
  onSignal("SIGTERM", onTerm);
  const shown = server.hostname.includes(":")
    ? `[${server.hostname}]`
    : server.hostname;
  jsonLogger(
    "info",
    `pod-broker ${VERSION} listening on http://${shown}:${server.port}`,
    {
      // The process to signal (a wrapper such as npx has a PID of its own).
      pid: hostPid(),
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
  if (denyList) onSignal("SIGHUP", reload);
  const signal = await stop.promise;
  if (denyList) offSignal("SIGHUP", reload);
  // close() drains: /health says so, and the sockets go over the window.
  jsonLogger("info", "Shutting down", { signal });
  await server.close();
  offSignal("SIGINT", onInt);
  offSignal("SIGTERM", onTerm);
  await bus?.close();
  await registry.close?.();
  return 0;
}
