// A `pod-broker dev` process for tests: started on port 0, its printed URL
// read from standard output, its standard error collected, stopped by PID.
import { MOD } from "./helpers.ts";

export { cli as runCli } from "./helpers.ts";

/** A running `pod-broker dev`. */
export interface DevProcess extends AsyncDisposable {
  /** The URL it printed (with its `#dev` fragment). */
  url: string;
  /** Everything it wrote to standard error so far. */
  stderr(): string;
  /** Waits until its standard error matches `pattern` (or fails after `ms`). */
  waitFor(pattern: RegExp, ms?: number): Promise<void>;
  /** SIGTERM, then its exit code. */
  stop(): Promise<number>;
}

/** Starts `pod-broker dev ARGS --port 0` and waits for its URL. */
export async function startDev(
  args: string[],
  env: Record<string, string> = {},
): Promise<DevProcess> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MOD, "dev", ...args, "--port", "0"],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1", ...env },
  }).spawn();
  let errors = "";
  const drained = (async () => {
    for await (
      const chunk of child.stderr.pipeThrough(new TextDecoderStream())
    ) errors += chunk;
  })();
  let out = "";
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  while (!out.includes("\n")) {
    const { done, value } = await reader.read();
    if (done) {
      await child.status;
      await drained;
      throw new Error(`dev ended before printing its URL:\n${errors}`);
    }
    out += value;
  }
  reader.releaseLock();
  const rest = child.stdout.cancel().catch(() => {});
  let stopped: Promise<number> | undefined;
  const stop = () =>
    stopped ??= (async () => {
      child.kill("SIGTERM");
      const { code } = await child.status;
      await Promise.all([drained, rest]);
      return code;
    })();
  return {
    url: out.split("\n")[0]!,
    stderr: () => errors,
    async waitFor(pattern, ms = 20_000) {
      const until = Date.now() + ms;
      while (!pattern.test(errors)) {
        if (Date.now() > until) {
          throw new Error(`dev never printed ${pattern}:\n${errors}`);
        }
        await new Promise((done) => setTimeout(done, 50));
      }
    },
    stop,
    [Symbol.asyncDispose]: async () => void await stop(),
  };
}
