// Standard output and error of an in-process CLI run, captured. The CLI
// writes through src/_util/host.ts, which on Deno writes with
// `Deno.stdout.writeSync` and `Deno.stderr.writeSync`: those are replaced
// for the run, then put back.

/** What a captured run returned and wrote. */
export interface Captured<T> {
  /** What the run resolved to. */
  value: T;
  /** Its standard output. */
  stdout: string;
  /** Its standard error. */
  stderr: string;
}

type Writer = { writeSync(bytes: Uint8Array): number };

/**
 * Runs `run` with standard output and error captured.
 *
 * @param run The run, such as a `runCli` call.
 * @returns Its value and what it wrote; a throw goes through, as thrown.
 */
export async function captureOutput<T>(
  run: () => Promise<T>,
): Promise<Captured<T>> {
  const decoder = new TextDecoder();
  const streams = [Deno.stdout, Deno.stderr] as Writer[];
  const texts = ["", ""];
  const real = streams.map((stream) => stream.writeSync);
  streams.forEach((stream, i) => {
    stream.writeSync = (bytes) => {
      texts[i] += decoder.decode(bytes);
      return bytes.length;
    };
  });
  try {
    const value = await run();
    return { value, stdout: texts[0]!, stderr: texts[1]! };
  } finally {
    streams.forEach((stream, i) => stream.writeSync = real[i]!);
  }
}
