// The README's systemd unit ("Running as a service"), run without systemd:
// its ExecStart started as written (paths replaced with temporary ones), the
// broker's own PID in its first log line, ExecReload's SIGHUP reloading the
// deny list (and keeping it when the new file is bad), SIGTERM a clean exit.
import assert from "node:assert/strict";
import { join } from "node:path";
import { signedPod } from "../support/helpers.ts";
import { encodeBase64Url } from "../../src/_util/encoding.ts";
import { parsePod } from "../../src/pod/format.ts";

const ROOT = new URL("../..", import.meta.url).pathname;

/** The `[Service]` settings of the README's unit. */
async function readmeUnit(): Promise<Map<string, string>> {
  const readme = await Deno.readTextFile(join(ROOT, "README.md"));
  const block = /### Running as a service[\s\S]*?```ini\n([\s\S]*?)```/.exec(
    readme,
  );
  assert.ok(block, "README.md has the service unit");
  const settings = new Map<string, string>();
  for (const line of block[1]!.split("\n")) {
    const match = /^([A-Za-z]+)=(.*)$/.exec(line);
    if (match) settings.set(match[1]!, match[2]!);
  }
  return settings;
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

Deno.test("the README's systemd unit runs the broker itself: PID logged, HUP reloads the deny list, TERM exits 0", async () => {
  const unit = await readmeUnit();
  assert.equal(unit.get("ExecReload"), "/bin/kill -HUP $MAINPID");
  const execStart = unit.get("ExecStart")!;
  const [program, ...args] = execStart.split(" ");
  assert.match(program!, /\/(deno|node)$/, "ExecStart runs no wrapper");
  assert.equal(program, "/usr/local/bin/deno");
  assert.equal(unit.get("WorkingDirectory"), "/opt/pod-broker");

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
      : arg
  );
  assert.ok(replaced.includes(dataDir) && replaced.includes(denyFile));
  const env: Record<string, string> = {};
  for (const [key, value] of [unit.get("Environment")!.split("=")]) {
    env[key!] = value!;
  }
  const child = new Deno.Command(Deno.execPath(), {
    args: [...replaced, "--hostname", "127.0.0.1"],
    cwd: ROOT, // WorkingDirectory: the checkout

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
});
