// SIGKILL during updates (issue 21), for the SQLite and PostgreSQL
// registries: a CLI broker in a child process gets a stream of `PUT /:id`
// updates of a few pods, several at once, and is SIGKILLed at a random
// moment; after each restart every pod must serve, whole, either its last
// acknowledged version or the one in flight at the kill (never an older
// one, never a mix: the bytes hash to the ETag and to /meta's sha256).
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { signUpdate, verifyPod } from "../../src/core.ts";
import {
  ANY_LOCAL_PORT,
  MOD,
  newSeed,
  signedPod,
  spawnBroker,
  upload,
} from "./helpers.ts";
import { pseudoRandomBytes } from "./registry_contract.ts";

/** Options of {@linkcode runUpdateCrashLoop}. */
export interface UpdateCrashOptions {
  /** The broker's registry flags (`--registry sqlite --data-dir D`...). */
  flags: string[];
  /** Environment of the broker (DATABASE_URL: never in argv). */
  env?: Record<string, string>;
  /** SIGKILLs to deliver. */
  kills: number;
  /** Pods updated at once. @default {4} */
  pods?: number;
  /** Checks the data left by a kill while no broker runs. */
  afterKill?: () => Promise<void>;
}

/** What the loop did. */
export interface UpdateCrashReport {
  /** Updates answered 200. */
  acknowledged: number;
  /** Pods found at the version in flight (stored, not acknowledged). */
  inFlightStored: number;
}

interface Pod {
  id: string;
  seed: Uint8Array;
  /** SHA-256 (base64url) of the last acknowledged version. */
  acked: string;
  /** SHA-256 of the version being sent, or null. */
  inFlight: string | null;
}

let clock = Date.UTC(2026, 0, 1);

/** The next version of a pod: a later createdAt, 1 B to 256 KiB of text. */
async function nextVersion(
  seed: Uint8Array,
): Promise<Uint8Array<ArrayBuffer>> {
  clock += 1000;
  const filler = pseudoRandomBytes(1 + (clock / 1000 * 7919) % 65_536, clock)
    .reduce((text, byte) => text + (byte % 10), "");
  return await signedPod(
    `<!doctype html><title>t</title><p>${clock}</p><p>${filler}</p>`,
    { createdAt: new Date(clock).toISOString().replace(".000", "") },
    seed,
  );
}

function digest(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("base64url");
}

/** Starts the CLI broker and waits for its port. */
async function start(options: UpdateCrashOptions) {
  const broker = await spawnBroker(
    [
      "run",
      "-A",
      MOD,
      ...options.flags,
      ...ANY_LOCAL_PORT,
    ],
    undefined,
    options.env,
  );
  return {
    url: `http://127.0.0.1:${broker.port}`,
    kill: async () => void await broker.stop("SIGKILL"),
  };
}

/** Checks that `pod` serves one whole version it may have; updates `acked`. */
async function checkPod(url: string, pod: Pod): Promise<boolean> {
  const response = await fetch(`${url}/${pod.id}`);
  assert.equal(response.status, 200, `pod ${pod.id}`);
  const sha = digest(new Uint8Array(await response.arrayBuffer()));
  assert.equal(response.headers.get("ETag"), `"${sha}"`, "bytes and ETag");
  const meta = await (await fetch(`${url}/${pod.id}/meta`)).json();
  assert.equal(meta.sha256, sha, "bytes and /meta");
  assert.ok(
    sha === pod.acked || sha === pod.inFlight,
    `pod ${pod.id} serves neither its acknowledged version nor the one in flight`,
  );
  const stored = sha !== pod.acked;
  pod.acked = sha;
  pod.inFlight = null;
  return stored;
}

/**
 * Uploads `pods` pods, then `kills` times: updates them all concurrently
 * (each pod one update at a time), SIGKILLs the broker after a random
 * 50 to 500 ms, restarts it and checks every pod.
 */
export async function runUpdateCrashLoop(
  options: UpdateCrashOptions,
): Promise<UpdateCrashReport> {
  const report: UpdateCrashReport = { acknowledged: 0, inFlightStored: 0 };
  let broker = await start(options);
  const pods: Pod[] = [];
  try {
    for (let i = 0; i < (options.pods ?? 4); i++) {
      const seed = await newSeed();
      const pod = await nextVersion(seed);
      const created = await upload(broker.url, pod);
      assert.equal(created.status, 201);
      const { id } = await created.json();
      pods.push({ id, seed, acked: digest(pod), inFlight: null });
    }
    for (let kill = 0; kill < options.kills; kill++) {
      let running = true;
      const refusals: string[] = [];
      const url = broker.url;
      const writers = pods.map(async (pod) => {
        // Bounded: the kill ends it long before.
        for (let n = 0; running && n < 10_000; n++) {
          const body = await nextVersion(pod.seed);
          pod.inFlight = digest(body);
          // The owner's statement: this version replaces the one acked.
          const signature = await signUpdate({
            id: pod.id,
            replaces: pod.acked,
            contentSha256: (await verifyPod(body)).contentSha256,
          }, pod.seed);
          let response: Response;
          try {
            response = await fetch(`${url}/${pod.id}`, {
              method: "PUT",
              headers: {
                "Content-Type": "text/html",
                "Pod-Update-Signature": signature,
                "Pod-Update-Replaces": pod.acked,
              },
              body,
            });
          } catch {
            return; // killed
          }
          const text = await response.text().catch(() => null);
          if (text === null) return;
          if (response.status !== 200) {
            // Reported after the kill (a rejection now would go unhandled).
            refusals.push(`${response.status} ${text}`);
            return;
          }
          pod.acked = pod.inFlight;
          pod.inFlight = null;
          report.acknowledged += 1;
        }
      });
      // The kill lands while updates run: after this round's first
      // acknowledgement (a loaded machine may take seconds to reach one;
      // bounded), then 50 to 500 ms into whatever is in flight.
      const before = report.acknowledged;
      for (let i = 0; i < 600 && report.acknowledged === before; i++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await new Promise((resolve) =>
        setTimeout(resolve, 50 + Math.floor(Math.random() * 450))
      );
      running = false;
      await broker.kill();
      await Promise.all(writers);
      assert.deepEqual(refusals, [], "updates refused");
      await options.afterKill?.();
      broker = await start(options);
      for (const pod of pods) {
        if (await checkPod(broker.url, pod)) report.inFlightStored += 1;
      }
    }
  } finally {
    await broker.kill();
  }
  return report;
}
