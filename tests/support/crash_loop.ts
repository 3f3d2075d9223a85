/**
 * `deno task crash-loop`: crash safety of the SQLite registry under load.
 * N times (default 100): start a CLI broker on one SQLite data directory,
 * upload pods of varied sizes (up to ~1 MiB, 8 at a time), SIGKILL it at a
 * random moment, and check what the kill left:
 *
 * - right after the kill (the database opened read-only): every record has
 *   its blob, byte-exact (its SHA-256 is the record's);
 * - after the restart: every acknowledged (201) pod is served byte-exact
 *   (those of the last run all, older ones sampled, all of them at the end),
 *   no temporary file is left, and blobs and records match one to one.
 *
 * `scripts/crash_loop.ts` (`deno task crash-loop [--kills N] [--concurrency
 * N] [--node]`) prints the figures; `tests/e2e/crash_test.ts` runs a small
 * version.
 *
 * @module
 */

import { readdirSync, statSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { encodeBase64Url } from "../../src/_util/encoding.ts";
import { sha256 } from "../../src/_util/hash.ts";
import { generateKeyPair } from "../../src/pod/ed25519.ts";
import { signPod } from "../../src/pod/sign.ts";
import { NODE_BIN } from "./npm_layout.ts";

/** Options of {@linkcode runCrashLoop}. */
export interface CrashLoopOptions {
  /** SIGKILLs to deliver. */
  kills: number;
  /** Uploads in flight at once. @default {8} */
  concurrency?: number;
  /** Largest pod uploaded. @default {1048576} */
  maxPodBytes?: number;
  /**
   * Longest time a broker runs, after its first acknowledged upload, before
   * its kill. @default {1500}
   */
  maxRunMs?: number;
  /** Older pods re-checked after each restart. @default {20} */
  sample?: number;
  /** Where progress lines go. @default {() => {}} */
  log?: (line: string) => void;
}

/** What a crash loop did and found. */
export interface CrashLoopReport {
  /** SIGKILLs delivered. */
  kills: number;
  /** Uploads started. */
  uploads: number;
  /** Uploads answered 201. */
  acknowledged: number;
  /** Records found whose upload was not acknowledged (killed in between). */
  unacknowledgedStored: number;
  /** GETs compared byte for byte with the uploaded pod. */
  podChecks: number;
  /** Records checked right after a kill (blob present, digest equal). */
  recordChecks: number;
  /** Temporary files a kill left (each must be gone after the restart). */
  tempFilesAfterKill: number;
  /** Blobs without a record a kill left (likewise). */
  orphanBlobsAfterKill: number;
  /** Wall time. */
  ms: number;
  /** Broken invariants; empty when all held. */
  violations: string[];
}

const MOD = new URL("../../src/mod.ts", import.meta.url).pathname;
/** The Node build's CLI (`deno task build:npm` makes it). */
const MOD_NODE = new URL(`../../npm/${NODE_BIN}`, import.meta.url).pathname;

/** A broker child process and where it listens. */
export interface BrokerChild {
  /** Its process id (the broker itself, not a shell). */
  pid: number;
  /** `http://127.0.0.1:PORT`. */
  url: string;
  /** The child, to kill and await. */
  child: Deno.ChildProcess;
  /** The last 8 KiB of its output. */
  log: () => string;
  /** Sends `signal`, waits for the exit and the end of its output. */
  stop: (signal: Deno.Signal) => Promise<Deno.CommandStatus>;
}

/** Options of {@linkcode startBroker}. */
export interface StartBrokerOptions {
  /** CLI flags; `--port 0 --hostname 127.0.0.1` are added. */
  flags: string[];
  /** Run the Node build (npm/) under Node 22 instead of Deno. */
  node?: boolean;
  /** Raise the open-file limit (`ulimit -n`, at most the hard limit) before exec. */
  maxOpenFiles?: number;
  /**
   * Expose V8's `gc()` and run it on SIGUSR2, so a caller can measure
   * memory after a full collection (see {@linkcode collectGarbage}).
   */
  gcOnSignal?: boolean;
}

let gcPreload: Promise<string> | undefined;

/** A module, preloaded into the broker, that runs `gc()` on SIGUSR2. */
function gcPreloadFile(node: boolean): Promise<string> {
  gcPreload ??= Deno.makeTempDir({ prefix: "pod_gc_" }).then(async (dir) => {
    await Deno.writeTextFile(
      `${dir}/gc_deno.js`,
      'Deno.addSignalListener("SIGUSR2", () => globalThis.gc());\n',
    );
    await Deno.writeTextFile(
      `${dir}/gc_node.mjs`,
      'process.on("SIGUSR2", () => globalThis.gc());\n',
    );
    return dir;
  });
  return gcPreload.then((dir) => `${dir}/gc_${node ? "node.mjs" : "deno.js"}`);
}

/** Removes the files {@linkcode startBroker} wrote for `gcOnSignal`. */
export async function removeBrokerFiles(): Promise<void> {
  if (gcPreload === undefined) return;
  const dir = await gcPreload;
  gcPreload = undefined;
  await Deno.remove(dir, { recursive: true }).catch(() => {});
}

/**
 * Asks a broker started with `gcOnSignal` for a full garbage collection
 * and gives it `settleMs` to finish.
 *
 * @param broker The broker.
 * @param settleMs Time to wait after the signal.
 */
export async function collectGarbage(
  broker: BrokerChild,
  settleMs = 1_000,
): Promise<void> {
  Deno.kill(broker.pid, "SIGUSR2");
  await new Promise((resolve) => setTimeout(resolve, settleMs));
}

let nodeBinary: Promise<string> | undefined;

/** Node 22's path, from `npx -y node@22` (fetched on first use). */
function nodePath(): Promise<string> {
  nodeBinary ??= new Deno.Command("npx", {
    args: ["-y", "node@22", "-p", "process.execPath"],
    stdout: "piped",
    stderr: "inherit",
  }).output().then(({ code, stdout }) => {
    if (code !== 0) throw new Error("Cannot find Node 22 through npx");
    return new TextDecoder().decode(stdout).trim();
  });
  return nodeBinary;
}

/**
 * Starts a CLI broker on 127.0.0.1, port 0, and waits for its "listening
 * on" line; its output is drained to the end so it never blocks.
 *
 * @param options Flags, runtime, open-file limit.
 * @returns The running broker.
 */
export async function startBroker(
  options: StartBrokerOptions,
): Promise<BrokerChild> {
  const gc = options.gcOnSignal
    ? await gcPreloadFile(options.node ?? false)
    : null;
  const argv = options.node
    ? [
      await nodePath(),
      ...(gc ? ["--expose-gc", "--import", gc] : []),
      MOD_NODE,
    ]
    : [
      Deno.execPath(),
      "run",
      "-A",
      ...(gc ? ["--v8-flags=--expose-gc", "--preload", gc] : []),
      MOD,
    ];
  argv.push(...options.flags, "--port", "0", "--hostname", "127.0.0.1");
  const [program, ...args] = options.maxOpenFiles
    ? [
      "sh",
      "-c",
      `ulimit -n ${options.maxOpenFiles} 2>/dev/null || ulimit -n "$(ulimit -Hn)"; exec "$@"`,
      "sh",
      ...argv,
    ]
    : argv;
  const child = new Deno.Command(program!, {
    args,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).spawn();
  let text = "";
  let resolveUrl: (url: string) => void;
  let rejectUrl: (error: Error) => void;
  const url = new Promise<string>((resolve, reject) => {
    resolveUrl = resolve;
    rejectUrl = reject;
  });
  const drain = async (stream: ReadableStream<Uint8Array<ArrayBuffer>>) => {
    const decoder = new TextDecoder();
    for await (const bytes of stream) {
      text = (text + decoder.decode(bytes, { stream: true })).slice(-8_192);
      const match = /listening on (http:\/\/\S+?:\d+)/.exec(text);
      if (match) resolveUrl(match[1]!);
    }
  };
  const drained = Promise.all([drain(child.stdout), drain(child.stderr)]).then(
    () => rejectUrl(new Error(`Cannot start the broker: it ended: ${text}`)),
  );
  const stop = async (signal: Deno.Signal) => {
    try {
      child.kill(signal);
    } catch {
      // Already gone.
    }
    const status = await child.status;
    await drained;
    return status;
  };
  const timer = setTimeout(
    () => rejectUrl(new Error(`Cannot start the broker in 60 s: ${text}`)),
    60_000,
  );
  try {
    return { pid: child.pid, url: await url, child, log: () => text, stop };
  } catch (error) {
    await stop("SIGKILL");
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

function sqliteBroker(dataDir: string, node: boolean): Promise<BrokerChild> {
  return startBroker({
    flags: ["--registry", "sqlite", "--data-dir", dataDir],
    node,
  });
}

interface Row {
  id: string;
  blob_size: number;
  sha256: string;
}

/** Records in the database, read-only (the broker is dead or reading too). */
function readRecords(dataDir: string): Row[] {
  const db = new DatabaseSync(join(dataDir, "pods.sqlite"), { readOnly: true });
  try {
    return db.prepare("SELECT id, blob_size, sha256 FROM pods")
      .all() as unknown as Row[];
  } finally {
    db.close();
  }
}

function blobNames(dataDir: string): string[] {
  return readdirSync(join(dataDir, "blobs"));
}

function randomInt(below: number): number {
  return Math.floor(Math.random() * below);
}

/** Pods of varied sizes, log-uniform from 1 KiB to `maxBytes`. */
async function makePods(
  count: number,
  maxBytes: number,
): Promise<Uint8Array[]> {
  const { seed } = await generateKeyPair();
  const pods: Uint8Array[] = [];
  for (let i = 0; i < count; i++) {
    const size = Math.round(
      1024 * Math.pow(maxBytes / 1024, i / Math.max(1, count - 1)),
    );
    const filler = "x".repeat(Math.max(0, size - 400));
    pods.push(
      await signPod(
        `<!doctype html><html><head><title>pod ${i}</title></head><body><p>${i}</p><!--${filler}--></body></html>\n`,
        seed,
      ),
    );
  }
  return pods;
}

/**
 * Runs the crash loop in a fresh temp directory (removed at the end).
 *
 * @param options Kills, load, logging.
 * @returns The figures and any broken invariant.
 */
export async function runCrashLoop(
  options: CrashLoopOptions & { node?: boolean },
): Promise<CrashLoopReport> {
  const concurrency = options.concurrency ?? 8;
  const maxRunMs = options.maxRunMs ?? 1_500;
  const sample = options.sample ?? 20;
  const log = options.log ?? (() => {});
  const node = options.node ?? false;
  const pods = await makePods(16, options.maxPodBytes ?? 1_048_576);
  const digests = pods.map((pod) => encodeBase64Url(sha256(pod)));
  const dataDir = await Deno.makeTempDir({ prefix: "pod_crash_" });
  const report: CrashLoopReport = {
    kills: 0,
    uploads: 0,
    acknowledged: 0,
    unacknowledgedStored: 0,
    podChecks: 0,
    recordChecks: 0,
    tempFilesAfterKill: 0,
    orphanBlobsAfterKill: 0,
    ms: 0,
    violations: [],
  };
  const violation = (text: string) => {
    report.violations.push(text);
    log(`VIOLATION: ${text}`);
  };
  /** Acknowledged pods: id -> index into `pods`. */
  const acked = new Map<string, number>();
  /** Records already checked after an earlier kill. */
  const seenRecords = new Set<string>();
  const started = performance.now();
  let broker: BrokerChild | undefined;

  /** GET each id and compare with the pod it was acknowledged for. */
  const checkPods = async (url: string, ids: Iterable<string>) => {
    for (const id of ids) {
      const response = await fetch(`${url}/${id}`);
      const body = new Uint8Array(await response.arrayBuffer());
      report.podChecks++;
      const want = pods[acked.get(id)!]!;
      if (response.status !== 200) {
        violation(`acknowledged pod ${id} answers ${response.status}`);
      } else if (
        body.length !== want.length || !body.every((b, i) => b === want[i])
      ) {
        violation(`acknowledged pod ${id} is not byte-exact`);
      }
    }
  };

  /** After a restart: no temp file, blobs and records one to one. */
  const checkAfterRestart = () => {
    const names = blobNames(dataDir);
    const temps = names.filter((name) => name.startsWith(".tmp-"));
    if (temps.length) violation(`temp files after restart: ${temps.join(" ")}`);
    const ids = new Set(readRecords(dataDir).map((row) => row.id));
    const blobs = new Set(names.filter((name) => !name.startsWith(".tmp-")));
    for (const id of ids) {
      if (!blobs.has(id)) violation(`record ${id} has no blob after restart`);
    }
    for (const name of blobs) {
      if (!ids.has(name)) violation(`blob ${name} has no record after restart`);
    }
    for (const id of acked.keys()) {
      if (!ids.has(id)) violation(`acknowledged pod ${id} has no record`);
    }
  };

  /** Right after a kill, before anything cleans up: every record whole. */
  const checkAfterKill = async () => {
    const names = blobNames(dataDir);
    const temps = names.filter((name) => name.startsWith(".tmp-"));
    report.tempFilesAfterKill += temps.length;
    const rows = readRecords(dataDir);
    const ids = new Set(rows.map((row) => row.id));
    report.orphanBlobsAfterKill +=
      names.filter((name) => !name.startsWith(".tmp-") && !ids.has(name))
        .length;
    for (const row of rows) {
      if (seenRecords.has(row.id)) continue;
      seenRecords.add(row.id);
      report.recordChecks++;
      if (!acked.has(row.id)) report.unacknowledgedStored++;
      const path = join(dataDir, "blobs", row.id);
      let bytes: Uint8Array;
      try {
        bytes = new Uint8Array(await readFile(path));
      } catch {
        violation(`record ${row.id} has no blob after a kill`);
        continue;
      }
      if (bytes.length !== Number(row.blob_size)) {
        violation(
          `blob ${row.id} has ${bytes.length} bytes, its record says ${row.blob_size}`,
        );
      } else if (encodeBase64Url(sha256(bytes)) !== row.sha256) {
        violation(`blob ${row.id} does not match its record's sha256`);
      } else if (
        acked.has(row.id) && row.sha256 !== digests[acked.get(row.id)!]
      ) {
        violation(`record ${row.id} is not the pod acknowledged for it`);
      }
    }
  };

  try {
    let lastRun: string[] = [];
    for (let round = 1; round <= options.kills; round++) {
      broker = await sqliteBroker(dataDir, node);
      if (round > 1) {
        checkAfterRestart();
        const older = [...acked.keys()].filter((id) => !lastRun.includes(id));
        const sampled = Array.from(
          { length: Math.min(sample, older.length) },
          () => older[randomInt(older.length)]!,
        );
        await checkPods(broker.url, [...lastRun, ...sampled]);
      }
      lastRun = [];
      // Load: `concurrency` workers upload until the kill.
      let killed = false;
      const url = broker.url;
      // The kill comes at a random moment after this round's first
      // acknowledgement, so that a loaded machine, where the first upload
      // takes longer than maxRunMs, still kills under load.
      let firstAck!: () => void;
      const acknowledged = new Promise<void>((resolve) => firstAck = resolve);
      const worker = async () => {
        while (!killed) {
          const index = randomInt(pods.length);
          report.uploads++;
          try {
            const response = await fetch(`${url}/pods`, {
              method: "POST",
              headers: { "Content-Type": "text/html" },
              body: pods[index]! as Uint8Array<ArrayBuffer>,
            });
            const body = await response.json();
            if (response.status === 201) {
              acked.set(body.id, index);
              lastRun.push(body.id);
              report.acknowledged++;
              firstAck();
            } else if (!killed) {
              violation(`upload answered ${response.status} ${body.code}`);
            }
          } catch {
            // The broker was killed mid-request: not acknowledged.
          }
        }
      };
      const workers = Array.from({ length: concurrency }, worker);
      // Bounded: a broker that acknowledges nothing is killed after 60 s,
      // and the caller sees no acknowledgement.
      let bound: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        acknowledged,
        new Promise((resolve) => bound = setTimeout(resolve, 60_000)),
      ]);
      clearTimeout(bound);
      await new Promise((resolve) => setTimeout(resolve, randomInt(maxRunMs)));
      await broker.stop("SIGKILL");
      killed = true;
      await Promise.all(workers);
      broker = undefined;
      report.kills++;
      await checkAfterKill();
      if (round % 10 === 0 || round === options.kills) {
        log(
          `${round} kills, ${report.acknowledged} acknowledged, ${report.podChecks} GETs checked, ${report.violations.length} violations`,
        );
      }
    }
    // The last restart: every acknowledged pod, byte for byte.
    broker = await sqliteBroker(dataDir, node);
    checkAfterRestart();
    await checkPods(broker.url, acked.keys());
    const { code } = await broker.stop("SIGTERM");
    broker = undefined;
    if (code !== 0) violation(`the last broker exited with ${code} on SIGTERM`);
  } finally {
    if (broker) await broker.stop("SIGKILL");
    report.ms = performance.now() - started;
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
  return report;
}

/** Bytes used under `dir`, for the figures. */
export function duSync(dir: string): number {
  let total = 0;
  for (const name of readdirSync(dir)) {
    const stat = statSync(join(dir, name));
    total += stat.isDirectory() ? duSync(join(dir, name)) : stat.size;
  }
  return total;
}
