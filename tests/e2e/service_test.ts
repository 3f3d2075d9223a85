// The systemd unit of docs/operators/service.md, run without systemd:
// its ExecStart started as written (paths replaced with temporary ones), on
// Deno and, with the packed npm package, on Node 22; the
// broker's own PID in its first log line, ExecReload's SIGHUP reloading the
// deny list (and keeping it when the new file is bad), SIGTERM a clean exit;
// and its permissions let it read its secrets from the environment.
import assert from "node:assert/strict";
import { inCi } from "../support/gated.ts";
import { join } from "node:path";
import { signedPod, spawnBroker } from "../support/helpers.ts";
import { blocksRunBy } from "../support/doc_blocks.ts";
import { assertEnvBroker, startEnvServices } from "../support/env_start.ts";
import { havePostgres } from "../support/postgres.ts";
import { haveRedis } from "../support/redis.ts";
import {
  ensureTarball,
  installTarball,
  nodePath,
} from "../support/npm_package.ts";
import { encodeBase64Url } from "../../src/_util/encoding.ts";
import { parsePod } from "../../src/pod/format.ts";

const ROOT = new URL("../..", import.meta.url).pathname;

/** The `[Service]` settings of the docs' unit, and its Node ExecStart. */
async function documentedUnit(): Promise<
  { settings: Map<string, string>; nodeExecStart: string }
> {
  const [unit, node] = (await blocksRunBy(
    "docs/operators/service.md",
    "ini",
    import.meta.url,
  )).map((block) => block.text);
  assert.ok(unit && node, "service.md has the unit and its Node line");
  const settings = new Map<string, string>();
  for (const line of unit.split("\n")) {
    const match = /^([A-Za-z]+)=(.*)$/.exec(line);
    if (match) settings.set(match[1]!, match[2]!);
  }
  const nodeExecStart = /^ExecStart=(.*)$/m.exec(node)![1]!;
  return { settings, nodeExecStart };
}

/** Reads JSON log lines from the broker's standard error. */
class LogReader {
  #reader: ReadableStreamDefaultReader<string>;
  #buffer = "";
  readonly lines: Record<string, unknown>[] = [];

  constructor(stream: ReadableStream<Uint8Array<ArrayBuffer>>) {
    this.#reader = stream.pipeThrough(new TextDecoderStream()).getReader();
  }

  /** The first line (from now on, or seen before) that `match` accepts. */
  async next(
    match: (line: Record<string, unknown>) => boolean,
  ): Promise<Record<string, unknown>> {
    for (let seen = 0;;) {
      for (; seen < this.lines.length; seen++) {
        if (match(this.lines[seen]!)) return this.lines.splice(seen, 1)[0]!;
      }
      const { done, value } = await this.#reader.read();
      if (done) throw new Error(`log ended: ${JSON.stringify(this.lines)}`);
      this.#buffer += value;
      const parts = this.#buffer.split("\n");
      this.#buffer = parts.pop()!;
      for (const part of parts) {
        if (part.startsWith("{")) this.lines.push(JSON.parse(part));
      }
    }
  }

  async close(): Promise<void> {
    await this.#reader.cancel().catch(() => {});
  }
}

/**
 * Runs one ExecStart (paths replaced) as systemd would, then checks the PID
 * in the log, two reloads (a good file, a bad one) and a clean stop.
 */
async function runService(
  execStart: string,
  programs: Record<string, string>,
  cwd: string,
  env: Record<string, string>,
): Promise<void> {
  const [program, ...args] = execStart.split(" ");
  assert.ok(program! in programs, `ExecStart runs ${program}, no wrapper`);
  const temp = await Deno.makeTempDir({ prefix: "pod-service-" });
  const dataDir = join(temp, "data");
  const denyFile = join(temp, "deny.txt");
  await Deno.writeTextFile(denyFile, "# nothing denied yet\n");
  const replaced = args.map((arg) =>
    arg === "/var/lib/pod-broker"
      ? dataDir
      : arg === "/etc/pod-broker/deny.txt"
      ? denyFile
      : arg === "8080"
      ? "0"
      : arg.replace("/opt/pod-broker", cwd)
  );
  assert.ok(replaced.includes(dataDir) && replaced.includes(denyFile));
  const child = new Deno.Command(programs[program!]!, {
    args: [...replaced, "--hostname", "127.0.0.1"],
    cwd, // WorkingDirectory
    env,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const log = new LogReader(child.stderr);
  try {
    const listening = await log.next((line) =>
      /listening on/.test(String(line.msg))
    );
    // The broker names its own process: what $MAINPID is under systemd.
    assert.equal(listening.pid, child.pid);
    const port = /:(\d+)$/.exec(String(listening.msg))![1];
    const base = `http://127.0.0.1:${port}`;

    const pod = await signedPod();
    const { json } = parsePod(pod);
    const owner = (json as { publicKey: string }).publicKey;
    const upload = () =>
      fetch(`${base}/pods`, {
        method: "POST",
        headers: { "Content-Type": "text/html" },
        body: pod,
      }).then(async (response) => {
        await response.body?.cancel();
        return response.status;
      });
    assert.equal(await upload(), 201);

    // ExecReload: the new list applies at once.
    await Deno.writeTextFile(denyFile, `key:${owner}\n`);
    Deno.kill(child.pid, "SIGHUP");
    const reloaded = await log.next((line) =>
      line.msg === "Deny list reloaded"
    );
    assert.equal(reloaded.entries, 1);
    assert.equal(await upload(), 403);

    // A bad file is reported, and the previous list stays in force.
    await Deno.writeTextFile(
      denyFile,
      `key:${encodeBase64Url(new Uint8Array(3))}\n`,
    );
    Deno.kill(child.pid, "SIGHUP");
    const kept = await log.next((line) => line.level === "warn");
    assert.match(String(kept.msg), /; kept the previous list$/);
    assert.equal(kept.entries, 1);
    assert.equal(await upload(), 403);

    // KillSignal: a clean exit.
    Deno.kill(child.pid, "SIGTERM");
    await log.next((line) => line.msg === "Shutting down");
    assert.equal((await child.status).code, 0);
  } finally {
    await log.close();
    try {
      child.kill("SIGKILL");
    } catch {
      // already gone
    }
    await child.status;
    await Deno.remove(temp, { recursive: true });
  }
}

/** The unit's `Environment=` lines. */
function environment(settings: Map<string, string>): Record<string, string> {
  const [key, value] = settings.get("Environment")!.split("=");
  return { [key!]: value! };
}

Deno.test("the documented systemd unit runs the broker itself: PID logged, HUP reloads the deny list, TERM exits 0", async () => {
  const { settings } = await documentedUnit();
  assert.equal(settings.get("ExecReload"), "/bin/kill -HUP $MAINPID");
  assert.equal(settings.get("WorkingDirectory"), "/opt/pod-broker");
  await runService(
    settings.get("ExecStart")!,
    { "/usr/local/bin/deno": Deno.execPath() },
    ROOT,
    environment(settings),
  );
});

Deno.test({
  name:
    "the documented Node ExecStart runs the npm package's entry: PID logged, HUP reloads, TERM exits 0",
  // Builds (or reuses) and installs the npm package, as the contract suite
  // on Node does.
  async fn() {
    const { settings, nodeExecStart } = await documentedUnit();
    const project = await installTarball(await ensureTarball());
    try {
      await runService(
        nodeExecStart,
        { "/usr/bin/node": await nodePath() },
        project,
        environment(settings),
      );
    } finally {
      await Deno.remove(project, { recursive: true });
    }
  },
});

/**
 * The unit's ExecStart with its own permissions, on PostgreSQL, Redis and
 * TURN configured from the environment (systemd's Environment= or
 * EnvironmentFile=): the broker starts and uses each.
 */
Deno.test({
  name:
    "the documented systemd unit reads POD_BROKER_TURN_SECRET, DATABASE_URL and REDIS_URL from its environment",
  ignore: !inCi && !(havePostgres() && haveRedis()),
  async fn() {
    const { settings } = await documentedUnit();
    const [program, ...args] = settings.get("ExecStart")!.split(" ");
    assert.equal(program, "/usr/local/bin/deno");
    // The runtime's flags and the entry point, as the unit has them.
    const entry = args.indexOf("src/mod_node.ts");
    assert.ok(entry > 0, "ExecStart runs src/mod_node.ts");
    await using services = await startEnvServices();
    await using broker = await spawnBroker(
      [
        ...args.slice(0, entry + 1),
        ...services.flags,
        "--port",
        "0",
        "--hostname",
        "127.0.0.1",
      ],
      ROOT,
      { ...environment(settings), ...services.env },
    );
    await assertEnvBroker(`http://127.0.0.1:${broker.port}`, services);
    assert.equal(await broker.stop(), 0);
  },
});
