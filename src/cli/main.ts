/**
 * The command line: `serve` (the default) runs the broker; `keygen`,
 * `sign`, `verify`, `publish`, `build`, `init` and `dev` are the pod
 * author's tools, `list` and `delete` the operator's. Each takes `--help`.
 * Bad input, setup problems and a Deno permission not granted exit 2 with one
 * line saying what to do; an unexpected error is a bug and exits 1 with its
 * stack.
 *
 * The tools are loaded when their command runs, so that starting the broker
 * loads only what serving needs.
 *
 * @module
 */

import { hostVersions } from "../_util/host.ts";
import { print, stderr } from "./io.ts";
import { type CreateSignalServer, serve } from "./serve.ts";
import { UsageError } from "./usage_error.ts";
import { asksForHelp, commandHelp, COMMANDS, isCommand } from "./commands.ts";
import { runtimeProblem } from "./runtime_check.ts";
import { suggest } from "./suggest.ts";
import { missingPermission, permissionLine } from "./permission.ts";
import { oneLine } from "../_util/text.ts";

export type { CreateSignalServer };

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
    const tooOld = runtimeProblem(hostVersions());
    if (tooOld !== undefined) {
      stderr(`${tooOld}\n`); // "pod-broker needs Node ...": one line
      return 2;
    }
    const [command, ...rest] = args;
    if (isCommand(command)) {
      return asksForHelp(rest)
        ? print(commandHelp(command))
        : await COMMANDS[command].run(rest, createSignalServer);
    }
    if (command !== undefined && command !== "serve" && !/^-/.test(command)) {
      throw unknownCommand(command);
    }
    return await serve(command === "serve" ? rest : args, createSignalServer);
  } catch (error) {
    if (error instanceof UsageError) {
      stderr(`pod-broker: ${oneLine(error.message)} (see --help)\n`);
      return 2;
    }
    // A permission the command line did not grant is the user's to add.
    const denied = missingPermission(error);
    if (denied !== undefined) {
      stderr(`${permissionLine(oneLine(denied))}\n`);
      return 2;
    }
    // Anything else is ours to fix, not the user's input.
    const { message, stack } = error instanceof Error
      ? error
      : { message: String(error), stack: undefined };
    stderr(
      `pod-broker: unexpected error (a bug, please report it): ${
        oneLine(message)
      }\n`,
    );
    if (stack) stderr(`${stack}\n`);
    return 1;
  }
}

/**
 * A first word that names no command (`serve` takes no word): the nearest
 * command when it looks like a typo ("did you mean publish?"), else the list.
 */
function unknownCommand(word: string): UsageError {
  const commands = ["serve", ...Object.keys(COMMANDS)];
  const near = suggest(word, commands);
  return new UsageError(
    `Unknown command '${word}': ${
      near ? `did you mean ${near}?` : `the commands are ${commands.join(", ")}`
    }`,
  );
}
