// What every browser test shares: Debian's Chromium, the loud notice when it
// is missing, and running a journey script in a child process inside a
// fresh network namespace (loopback only, when this is root and `unshare`
// works), so that no candidate or packet can leave the machine.
import { existsSync } from "node:fs";
import { CHROMIUM } from "./chat_journey_config.ts";
import { gatedTest, inCi } from "./gated.ts";
import { RUN_MS, WaitTimeout } from "./wait.ts";

export { CHROMIUM, CHROMIUM_FLAGS } from "./chat_journey_config.ts";

/** Whether Debian's Chromium is installed. */
export const hasChromium: boolean = existsSync(CHROMIUM);
export { inCi };

/** Prints the loud notice for a missing Chromium; `what` names the test. */
export function chromiumNotice(what: string): void {
  if (hasChromium) return;
  console.error(
    `\n!!! ${CHROMIUM} is missing: ${what} ${
      inCi ? "FAILS in CI" : "is SKIPPED"
    }.\n!!! Install Debian's Chromium: sudo apt-get install -y chromium\n`,
  );
}

/** What a finished command printed, both streams together. */
export interface RunResult {
  /** Exit code. */
  code: number;
  /** stdout then stderr. */
  output: string;
}

/**
 * Runs a command to the end; one still running after `ms` is killed, and
 * the run fails with what it printed.
 */
export async function run(
  cmd: string,
  args: string[],
  ms: number = RUN_MS,
): Promise<RunResult> {
  const child = new Deno.Command(cmd, {
    args,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).spawn();
  let late = false;
  const timer = setTimeout(() => {
    late = true;
    child.kill("SIGKILL");
  }, ms);
  const { code, stdout, stderr } = await child.output().finally(() =>
    clearTimeout(timer)
  );
  const text = new TextDecoder();
  const output = text.decode(stdout) + text.decode(stderr);
  if (late) {
    const what = `${[cmd, ...args].join(" ")} to exit`;
    throw new Error(`${new WaitTimeout(what, ms).message}:\n${output}`);
  }
  return { code, output };
}

/**
 * How long a journey may take: the call journey took 11 minutes with both
 * cores busy with other work (a load average near 40).
 */
const JOURNEY_MS = 1_800_000;

/** The first of `setups` that works in a fresh network namespace, or null. */
async function namespaceSetup(setups: string[]): Promise<string | null> {
  if (Deno.uid() !== 0) return null;
  for (const setup of setups) {
    try {
      if ((await run("unshare", ["-n", "sh", "-c", setup])).code === 0) {
        return setup;
      }
    } catch {
      return null;
    }
  }
  return null;
}

/** A journey's run, and the namespace setup it ran under (null: none). */
export interface JourneyResult extends RunResult {
  /** The setup command used in the namespace, or null without one. */
  setup: string | null;
}

/**
 * Runs `deno run -A JOURNEY ARGS` (its modules cached first: the namespace
 * has no route to any registry) in a fresh network namespace prepared by
 * the first of `setups` that works, or directly, with a note, when none
 * does. `args` may depend on the setup chosen.
 */
export async function runJourney(
  journey: string,
  args: string[] | ((setup: string | null) => string[]) = [],
  setups: string[] = ["ip link set lo up"],
): Promise<JourneyResult> {
  const cached = await run(Deno.execPath(), ["cache", journey]);
  if (cached.code !== 0) return { ...cached, setup: null };
  const setup = await namespaceSetup(setups);
  if (setup === null) {
    console.error("note: running the browser test without a network namespace");
  }
  const command = [
    Deno.execPath(),
    "run",
    "-A",
    journey,
    ...(typeof args === "function" ? args(setup) : args),
  ];
  const quoted = command.map((part) => `'${part.replaceAll("'", `'\\''`)}'`)
    .join(" ");
  const result = setup === null
    ? await run(command[0]!, command.slice(1), JOURNEY_MS)
    : await run(
      "unshare",
      ["-n", "sh", "-c", `${setup} && exec ${quoted}`],
      JOURNEY_MS,
    );
  return { ...result, setup };
}

/**
 * A test that needs Chromium: ignored (after {@linkcode chromiumNotice}'s
 * loud note) where Chromium is missing outside CI, failed where it is
 * missing in CI.
 */
export function browserTest(name: string, fn: () => Promise<void>): void {
  gatedTest(
    name,
    hasChromium,
    `${CHROMIUM} is missing: apt-get install -y chromium`,
    fn,
  );
}

/** Runs a journey (see {@linkcode runJourney}); fails unless it ends "journey ok". */
export async function runJourneyOk(
  journey: string,
  args: string[] = [],
): Promise<JourneyResult> {
  const result = await runJourney(journey, args);
  if (result.code !== 0 || !/journey ok/.test(result.output)) {
    throw new Error(
      `The journey failed (exit ${result.code}):\n${result.output}`,
    );
  }
  return result;
}

/**
 * A Chromium test ({@linkcode browserTest}, with {@linkcode chromiumNotice}'s
 * note naming `what`) of the journey tests/support/JOURNEY, which runs in a
 * child process inside a loopback-only network namespace where it can
 * ({@linkcode runJourney}). `fn` is given the run, to pass arguments and
 * check what the journey left; by default the run must end "journey ok".
 */
export function journeyTest(
  what: string,
  name: string,
  journey: string,
  fn: (run: (args?: string[]) => Promise<JourneyResult>) => Promise<void> = (
    run,
  ) => run().then(() => {}),
): void {
  const path = new URL(`./${journey}`, import.meta.url).pathname;
  chromiumNotice(what);
  browserTest(name, () => fn((args = []) => runJourneyOk(path, args)));
}
