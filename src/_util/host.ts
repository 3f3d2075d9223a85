/**
 * The process the broker runs in, for the code Deno and Node share: its
 * environment, id and versions, standard output and error, signals, exit,
 * memory, timers, and the `node:` modules the broker uses.
 *
 * On Deno this uses the `Deno` namespace and never Deno's Node layer, which
 * costs a start about 45 ms (`node:crypto` alone) the first time any `node:`
 * module or the `process` global is touched. The `node:` modules load on
 * first use through {@linkcode nodeBuiltin}: a serving start on Deno.serve
 * loads none of them (`tests/unit/startup_imports_test.ts`). On Node, this is
 * `process`.
 *
 * @module
 */

/** What the broker uses of the `Deno` namespace (typed here for Node too). */
interface DenoHost {
  env: {
    get(name: string): string | undefined;
    has(name: string): boolean;
    toObject(): Record<string, string>;
  };
  pid: number;
  args: string[];
  exitCode: number;
  version: { deno: string };
  stdout: { writeSync(bytes: Uint8Array): number };
  stderr: { writeSync(bytes: Uint8Array): number };
  addSignalListener(signal: string, handler: () => void): void;
  removeSignalListener(signal: string, handler: () => void): void;
  memoryUsage(): { rss: number };
}

/** What the broker uses of Node's `process` (Deno has it too, at a cost). */
interface NodeHost {
  env: Record<string, string | undefined>;
  pid: number;
  argv: string[];
  exitCode?: number | string | null | undefined;
  versions: Record<string, string | undefined>;
  stdout: {
    write(data: string | Uint8Array): unknown;
    on(event: string, handler: () => void): unknown;
  };
  stderr: { write(text: string): unknown };
  on(event: string, handler: () => void): unknown;
  off(event: string, handler: () => void): unknown;
  once(event: string, handler: () => void): unknown;
  memoryUsage: { rss(): number };
  getBuiltinModule(name: string): unknown;
}

const deno = (globalThis as { Deno?: DenoHost }).Deno;
const node = (): NodeHost =>
  (globalThis as unknown as { process: NodeHost })
    .process;
const encoder = new TextEncoder();

/** The `node:` modules the broker loads through {@linkcode nodeBuiltin}. */
export interface NodeBuiltins {
  /** `node:buffer`. */
  "node:buffer": typeof import("node:buffer");
  /** `node:crypto`. */
  "node:crypto": typeof import("node:crypto");
  /** `node:fs`. */
  "node:fs": typeof import("node:fs");
  /** `node:fs/promises`. */
  "node:fs/promises": typeof import("node:fs/promises");
  /** `node:http`. */
  "node:http": typeof import("node:http");
  /** `node:path`. */
  "node:path": typeof import("node:path");
  /** `node:sqlite`. */
  "node:sqlite": typeof import("node:sqlite");
  /** `node:process`. */
  "node:process": typeof import("node:process");
  /** `node:timers`. */
  "node:timers": typeof import("node:timers");
  /** `node:url`. */
  "node:url": typeof import("node:url");
}

/**
 * A `node:` module, loaded on first use (`process.getBuiltinModule`, which
 * Node 22.3 and Deno have): on Deno, the first call loads the Node layer.
 * On Node it skips the module's ESM facade, which an `import` of a `node:`
 * module pays: about 20 ms for the first one a process imports, and for
 * `node:http` about 40 ms more (its facade reads every export, which loads
 * Node's Fetch implementation).
 *
 * @param name The module's name.
 * @returns The module.
 */
export function nodeBuiltin<N extends keyof NodeBuiltins>(
  name: N,
): NodeBuiltins[N] {
  return node().getBuiltinModule(name) as NodeBuiltins[N];
}

/**
 * The environment's variables. On Deno each is read when asked for, as
 * Node's `process.env` does, so that a missing `--allow-env` names the
 * variable.
 */
export function hostEnv(): Record<string, string | undefined> {
  return deno ? denoEnv(deno) : node().env;
}

function denoEnv(deno: DenoHost): Record<string, string | undefined> {
  return new Proxy({}, {
    get: (_, name) => typeof name === "string" ? deno.env.get(name) : undefined,
    has: (_, name) => typeof name === "string" && deno.env.has(name),
    ownKeys: () => Object.keys(deno.env.toObject()),
    getOwnPropertyDescriptor: (_, name) => {
      const value = typeof name === "string" ? deno.env.get(name) : undefined;
      return value === undefined
        ? undefined
        : { value, enumerable: true, configurable: true, writable: false };
    },
  });
}

/** The program's arguments: those after the script's path. */
export function hostArgs(): string[] {
  return deno ? deno.args : node().argv.slice(2);
}

/**
 * The path of the script the process was started with, as given (Node's
 * `process.argv[1]`); undefined on Deno, which has `import.meta.main`.
 */
export function hostScriptPath(): string | undefined {
  return deno ? undefined : node().argv[1];
}

/** Sets the code the process exits with when it ends on its own. */
export function setExitCode(code: number): void {
  if (deno) deno.exitCode = code;
  else node().exitCode = code;
}

/** The process id. */
export function hostPid(): number {
  return deno ? deno.pid : node().pid;
}

/** The runtime's versions: `deno` on Deno, `node` on Node. */
export function hostVersions(): Record<string, string | undefined> {
  return deno ? { deno: deno.version.deno } : node().versions;
}

/** The process's resident memory, in bytes. */
export function residentBytes(): number {
  return deno ? deno.memoryUsage().rss : node().memoryUsage.rss();
}

/**
 * Writes all of `data` to standard output. Bytes are the caller's to give
 * up: Node may still hold them after the call returns.
 */
export function writeStdout(data: string | Uint8Array): void {
  if (deno) writeAll(deno.stdout, data);
  else node().stdout.write(data);
}

/** Writes all of `text` to standard error. */
export function writeStderr(text: string): void {
  if (deno) writeAll(deno.stderr, text);
  else node().stderr.write(text);
}

function writeAll(
  stream: { writeSync(bytes: Uint8Array): number },
  data: string | Uint8Array,
): void {
  let bytes = typeof data === "string" ? encoder.encode(data) : data;
  while (bytes.length > 0) bytes = bytes.subarray(stream.writeSync(bytes));
}

/**
 * Calls `handler` when standard output fails after a write returned (on
 * Node, whose writes end later); on Deno a failed write throws instead.
 */
export function onStdoutError(handler: () => void): void {
  if (!deno) node().stdout.on("error", handler);
}

/** Calls `handler` on `signal` (such as `"SIGTERM"`) instead of exiting. */
export function onSignal(signal: string, handler: () => void): void {
  if (deno) deno.addSignalListener(signal, handler);
  else node().on(signal, handler);
}

/** Undoes {@linkcode onSignal}. */
export function offSignal(signal: string, handler: () => void): void {
  if (deno) deno.removeSignalListener(signal, handler);
  else node().off(signal, handler);
}

/** Calls `handler` once as the process exits (synchronous work only). */
export function onExit(handler: () => void): void {
  if (deno) {
    (globalThis as unknown as EventTarget).addEventListener("unload", handler, {
      once: true,
    });
  } else {
    node().once("exit", handler);
  }
}

/**
 * Lets the process exit while `timer` is pending (both runtimes' timers
 * have `unref`; Deno's type says they are numbers).
 *
 * @param timer What `setTimeout` or `setInterval` returned.
 */
export function unrefTimer(timer: unknown): void {
  (timer as { unref?: () => void }).unref?.();
}
