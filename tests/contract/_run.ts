// The contract suite's runner for Node 22 (tests/contract/node_test.ts
// transpiles it with the suite and starts it there): every case in turn,
// each with a time limit, and one JSON line per case on stdout.
import process from "node:process";
import type { ContractApi, ContractCase } from "./_suite.ts";

/** What starts each result line, so that stray output cannot pass for one. */
export const RESULT_PREFIX = "contract-result ";

/** The outcome of one case, as the runner prints it. */
export interface CaseResult {
  /** The case's name. */
  name: string;
  /** Whether it passed. */
  ok: boolean;
  /** How long it took, in milliseconds. */
  ms: number;
  /** The failure's message. */
  error?: string;
  /** The failure's stack (source-mapped to tests/contract/*.ts). */
  stack?: string;
}

/** How long a case may take unless it says otherwise. */
const DEFAULT_TIMEOUT_MS = 60_000;
/** How long the handles a case opened may take to close after it. */
const SETTLE_MS = 3_000;

/**
 * Runs `cases` one after another against `api`, printing a result line for
 * each (`RESULT_PREFIX` + JSON of {@linkcode CaseResult}).
 *
 * A case fails when it rejects, when it runs past its time limit, when an
 * error escapes it (an unhandled rejection or an uncaught exception while
 * it runs), or when it leaves handles open (sockets, servers, timers, child
 * processes): Node's stand-in for Deno's test sanitizers.
 *
 * @returns The number of failed cases.
 */
export async function runCases(
  api: ContractApi,
  cases: readonly ContractCase[],
): Promise<number> {
  let escaped: unknown[] = [];
  const onEscape = (error: unknown) => void escaped.push(error);
  process.on("unhandledRejection", onEscape);
  process.on("uncaughtException", onEscape);
  let failed = 0;
  try {
    for (const { name, fn, timeoutMs = DEFAULT_TIMEOUT_MS } of cases) {
      escaped = [];
      const before = activeResources();
      const started = performance.now();
      let result: CaseResult;
      try {
        await withTimeout(fn(api), timeoutMs);
        if (escaped.length > 0) throw escaped[0];
        const leaked = await leakedSince(before);
        if (leaked.length > 0) {
          throw new Error(
            `Cannot finish the case: it left open ${leaked.join(", ")}`,
          );
        }
        result = { name, ok: true, ms: elapsed(started) };
      } catch (error) {
        failed++;
        result = {
          name,
          ok: false,
          ms: elapsed(started),
          error: describe(error),
          ...(error instanceof Error && error.stack
            ? { stack: error.stack }
            : {}),
        };
      }
      process.stdout.write(`${RESULT_PREFIX}${JSON.stringify(result)}\n`);
    }
  } finally {
    process.off("unhandledRejection", onEscape);
    process.off("uncaughtException", onEscape);
  }
  return failed;
}

function elapsed(started: number): number {
  return Math.round(performance.now() - started);
}

async function withTimeout(
  promise: Promise<void>,
  timeoutMs: number,
): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`Timed out after ${timeoutMs} ms`)),
          timeoutMs,
        );
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Counts of the handles that keep the event loop alive, by type. */
function activeResources(): Map<string, number> {
  const counts = new Map<string, number>();
  for (const type of process.getActiveResourcesInfo()) {
    counts.set(type, (counts.get(type) ?? 0) + 1);
  }
  return counts;
}

/**
 * The handles open now beyond those of `before`, once closing ones had up
 * to `SETTLE_MS` to go (a closed socket's handle goes on the next turns).
 */
async function leakedSince(before: Map<string, number>): Promise<string[]> {
  const end = Date.now() + SETTLE_MS;
  for (;;) {
    const leaked: string[] = [];
    for (const [type, count] of activeResources()) {
      const extra = count - (before.get(type) ?? 0);
      if (extra > 0) leaked.push(`${extra} ${type}`);
    }
    if (leaked.length === 0 || Date.now() > end) return leaked;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * An error's name and message, and its causes' (Node's `fetch failed` says
 * what failed only in its `cause`: a reset, a closed socket...).
 */
function describe(error: unknown): string {
  const parts: string[] = [];
  for (let e = error, depth = 0; e !== undefined && depth < 4; depth++) {
    parts.push(e instanceof Error ? `${e.name}: ${e.message}` : String(e));
    e = e instanceof Error ? e.cause : undefined;
  }
  return parts.join(" (cause: ") + ")".repeat(parts.length - 1);
}
