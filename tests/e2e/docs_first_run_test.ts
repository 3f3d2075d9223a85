// A newcomer's first minutes, as the pages say them. Every `pod-broker`
// alias of the docs, run with an empty DENO_DIR against a stand-in npm
// registry on loopback (nothing leaves the machine), asks only for packages
// serve.lock pins: the serving set, not the tests' browsers and tools (on
// Linux x64, as many as install.md says a first use fetches). And
// the README's first command starts from an empty DENO_DIR without asking
// npm for anything (deno.json's "lazy-dynamic-imports": a package is fetched
// on its first use), and stops the way the README says: Ctrl-C (SIGINT
// to the terminal's process group) stops it; `kill $!` of a wrapper that
// passes no signal on (as npx does) leaves it answering, and `kill PID`
// with the "pid" of its "listening on" line stops it.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { join } from "node:path";
import { runCommand, spawnBroker } from "../support/helpers.ts";
import { LISTENING } from "../support/broker_process.ts";
import { within } from "../support/wait.ts";
import { allBlocks, ROOT } from "../support/doc_blocks.ts";
import { brokerArgs, substitute } from "../support/doc_reader.ts";
import { startNpmStub } from "../support/npm_stub.ts";

/** The package ids (`name@version`) serve.lock pins. */
async function servePackages(): Promise<Set<string>> {
  const lock = JSON.parse(await Deno.readTextFile(join(ROOT, "serve.lock")));
  return new Set(
    Object.keys(lock.npm).map((id) => id.replace(/_.*$/, "")),
  );
}

/** Every `alias pod-broker="..."` of the README and docs/, by its text. */
async function aliases(): Promise<Map<string, string[]>> {
  const found = new Map<string, string[]>();
  for (const block of await allBlocks()) {
    for (const match of block.text.matchAll(/^alias pod-broker="([^"]*)"/gm)) {
      const pages = found.get(match[1]!) ?? [];
      found.set(match[1]!, [...pages, `${block.page}:${block.line}`]);
    }
  }
  return found;
}

Deno.test("every pod-broker alias of the docs, run with an empty DENO_DIR, asks npm only for what serve.lock pins", async () => {
  const found = await aliases();
  const pages = [...found.values()].flat().map((at) => at.split(":")[0]);
  assert.ok(pages.includes("README.md"), "the README's tour has the alias");
  assert.ok(pages.includes("docs/authors/tutorial.md"), "so has the tutorial");
  const pinned = await servePackages();
  const install = await Deno.readTextFile(
    join(ROOT, "docs/operators/install.md"),
  );
  const documented = Number(
    /fetches (\d+) packages on Linux x64/.exec(install)?.[1],
  );
  const temp = await Deno.makeTempDir({ prefix: "pod-first-run-" });
  try {
    for (const [alias, where] of found) {
      await using npm = await startNpmStub();
      const denoDir = await Deno.makeTempDir({ dir: temp });
      const [program, ...args] = substitute(alias, 0).split(/\s+/);
      assert.equal(program, Deno.execPath(), `${where}: runs Deno`);
      // The tour's first use of the alias. It fails here (the stand-in has
      // no package): what counts is what it asked for.
      const run = await runCommand(
        program!,
        [...args, "keygen", "--out", join(temp, "author.pem")],
        {
          cwd: ROOT,
          env: {
            DENO_DIR: denoDir,
            NPM_CONFIG_REGISTRY: npm.url,
            DENO_NO_UPDATE_CHECK: "1",
          },
          timeoutMs: 120_000,
        },
      );
      const { tarballs, metadata } = npm.asked();
      assert.ok(
        tarballs.size > 0,
        `${where}: a fresh DENO_DIR fetches something:\n${run.stderr}`,
      );
      const extra = [...tarballs].filter((id) => !pinned.has(id));
      assert.deepEqual(extra, [], `${where}: only serve.lock's packages`);
      if (Deno.build.os === "linux" && Deno.build.arch === "x86_64") {
        assert.equal(tarballs.size, documented, `${where}: as install.md says`);
      }
      const names = new Set([...pinned].map((id) => id.replace(/@[^@]*$/, "")));
      const unknown = [...metadata].filter((name) => !names.has(name));
      assert.deepEqual(unknown, [], `${where}: only serve.lock's names`);
    }
  } finally {
    await Deno.remove(temp, { recursive: true });
  }
});

Deno.test("the README's first command, from an empty DENO_DIR, answers /health having asked npm for nothing: each package waits for its first use", async () => {
  const opening = (await allBlocks()).find((b) => b.page === "README.md")!;
  await using npm = await startNpmStub();
  const denoDir = await Deno.makeTempDir({ prefix: "pod-first-start-" });
  try {
    await using broker = await spawnBroker(brokerArgs(opening.text), ROOT, {
      DENO_DIR: denoDir,
      NPM_CONFIG_REGISTRY: npm.url,
      DENO_NO_UPDATE_CHECK: "1",
    });
    assert.ok(await answers(broker.port), "it answers /health");
    const { tarballs, metadata } = npm.asked();
    assert.deepEqual(
      [...metadata, ...tarballs],
      [],
      "a serving start on Deno.serve fetches no package",
    );
  } finally {
    await Deno.remove(denoDir, { recursive: true });
  }
});

/** A broker started by the README's first command under a wrapper. */
interface Wrapped extends AsyncDisposable {
  /** The wrapper's PID (`$!`). */
  wrapper: number;
  /** The broker's own PID, from its "listening on" line. */
  pid: number;
  /** Its port. */
  port: number;
  /** Resolves once the wrapper has exited. */
  wrapperGone: Promise<void>;
  /** Resolves once the broker has exited (its standard error closes). */
  brokerGone: Promise<void>;
}

/**
 * Starts the README's first command (on 127.0.0.1, port 0) under bash as
 * npx runs it: a parent process that passes no signal on to the broker, in
 * a process group of its own, as a terminal's foreground job is.
 */
async function startWrapped(): Promise<Wrapped> {
  const opening = (await allBlocks()).find((b) => b.page === "README.md")!;
  const args = brokerArgs(opening.text);
  const child = spawn(
    "bash",
    ["-c", '"$@"; exit $?', "npx", Deno.execPath(), ...args],
    { cwd: ROOT, detached: true, stdio: ["ignore", "ignore", "pipe"] },
  );
  // bounded: the test waits for both through within()
  const wrapperGone = new Promise<void>((resolve) =>
    child.once("exit", () => resolve())
  );
  // bounded: see above
  const brokerGone = new Promise<void>((resolve) =>
    child.stderr.once("close", () => resolve())
  );
  // Whatever a failed assertion leaves: the whole group, wrapper and broker.
  const dispose = async () => {
    try {
      process.kill(-child.pid!, "SIGKILL");
    } catch {
      // gone already
    }
    await within(brokerGone, "the broker to exit after SIGKILL");
  };
  let log = "";
  const listening = new Promise<string>((resolve, reject) => {
    child.stderr.setEncoding("utf8").on("data", (text: string) => {
      log += text;
      const found = log.split("\n").find((entry) => LISTENING.test(entry));
      if (found) resolve(found);
    });
    brokerGone.then(() => reject(new Error(`no "listening on":\n${log}`)));
  });
  const line = await within(listening, "the broker to listen").catch(
    async (error) => {
      await dispose();
      throw error;
    },
  );
  const { pid } = JSON.parse(line);
  const port = Number(LISTENING.exec(line)![1]);
  return {
    wrapper: child.pid!,
    pid,
    port,
    wrapperGone,
    brokerGone,
    [Symbol.asyncDispose]: dispose,
  };
}

/** Whether the broker on `port` answers /health with a 2xx within 10 s. */
async function answers(port: number): Promise<boolean> {
  try {
    const response = await fetch(`http://127.0.0.1:${port}/health`, {
      signal: AbortSignal.timeout(10_000),
    });
    await response.body?.cancel();
    return response.ok;
  } catch {
    return false;
  }
}

Deno.test("the README's first command stops as the README says: Ctrl-C, or kill of the logged pid (kill $! of npx's process is not enough)", async () => {
  const readme = await Deno.readTextFile(join(ROOT, "README.md"));
  const opening = readme.slice(0, readme.indexOf("## "));
  assert.match(opening, /Ctrl-C stops it/);
  assert.match(opening, /`kill \$!` stops only npx's own process/);
  assert.match(opening, /`kill PID`, where PID is the `"pid"` of its/);

  // Ctrl-C: SIGINT to the foreground process group.
  await using first = await startWrapped();
  assert.notEqual(first.pid, first.wrapper, "the broker has a PID of its own");
  assert.ok(await answers(first.port));
  process.kill(-first.wrapper, "SIGINT");
  await within(
    Promise.all([first.brokerGone, first.wrapperGone]),
    "the broker and npx's process to exit after Ctrl-C",
  );
  assert.equal(await answers(first.port), false, "stopped by Ctrl-C");

  // `kill $!`, then `kill PID`.
  await using second = await startWrapped();
  process.kill(second.wrapper, "SIGTERM");
  await within(second.wrapperGone, "npx's process to exit after kill");
  assert.ok(await answers(second.port), "kill $! leaves the broker answering");
  process.kill(second.pid, "SIGTERM");
  await within(second.brokerGone, "the broker to exit after kill PID");
  assert.equal(await answers(second.port), false, "stopped by kill PID");
});
