// What the runtime adapters own (src/adapters/): start-up and its failures,
// the peer address, and the lingering close of a refused upload. Runs on
// both runtimes (see _suite.ts).
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { connect, createServer } from "node:net";
import { assertProblem, signedPod } from "./_pods.ts";
import {
  ANY_LOCAL_PORT,
  type CliRun,
  freePort,
  runCommand,
  sleep,
  spawnBroker,
  startServer,
  tempDir,
} from "./_servers.ts";
import { type ContractApi, test } from "./_suite.ts";
import { parseRawResponse, RawConnection, uploadHead } from "./_wire.ts";
import { nextEmit, nextEvent } from "../support/wait.ts";

/** Holds a TCP port on 127.0.0.1 until disposed of. */
async function holdPort(): Promise<{ port: number } & AsyncDisposable> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as { port: number }).port,
    [Symbol.asyncDispose]: () =>
      new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Whether `port` on 127.0.0.1 can be listened on now. */
async function isFree(port: number): Promise<boolean> {
  const server = createServer();
  const free = await new Promise<boolean>((resolve) => {
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => resolve(true));
  });
  if (free) await new Promise((resolve) => server.close(resolve));
  return free;
}

/**
 * Runs `pod-broker ARGS`, killed after `ms` (then `timedOut` is true), so
 * that a CLI that hangs fails the case instead of the run.
 */
async function runCliWithin(
  api: ContractApi,
  args: string[],
  ms: number,
): Promise<CliRun & { timedOut: boolean }> {
  const [command, ...prefix] = api.cli;
  const run = await runCommand(command!, [...prefix, ...args], {
    timeoutMs: ms,
  });
  return { ...run, timedOut: run.stopped };
}

/** Asserts that `run` stopped at start-up with one line: `flag`'s port is in use. */
function assertPortInUse(run: CliRun & { timedOut: boolean }, flag: RegExp) {
  assert.equal(run.timedOut, false, "the CLI hung");
  assert.notEqual(run.code, 0);
  const lines = run.stderr.trim().split("\n");
  assert.equal(lines.length, 1, run.stderr);
  assert.match(lines[0]!, flag);
  assert.match(lines[0]!, /in use/);
}

test("issue 18: a taken --metrics-port fails start-up with one line, a non-zero exit and nothing left listening", async (api) => {
  await using taken = await holdPort();
  const port = await freePort();
  const run = await runCliWithin(api, [
    "--port",
    String(port),
    "--hostname",
    "127.0.0.1",
    "--metrics-port",
    String(taken.port),
  ], 20_000);
  assertPortInUse(run, /--metrics-port/);
  assert.doesNotMatch(run.stderr, /a bug|\n\s+at /);
  assert.ok(await isFree(port), "the main port is still taken");
});

test("issue 18: createSignalServer rejects a taken metrics port and gives the main port back", async (api) => {
  await using taken = await holdPort();
  const port = await freePort();
  await assert.rejects(
    api.createSignalServer({
      registry: new api.MemoryRegistry(),
      port,
      hostname: "127.0.0.1",
      logger: api.silentLogger,
      metrics: { port: taken.port },
    }),
    (error: Error) =>
      error instanceof TypeError && /metrics\.port/.test(error.message) &&
      /in use/.test(error.message),
  );
  assert.ok(await isFree(port), "the main port is still taken");
});

test("issue 18: a taken --port fails start-up with one line, and the metrics port is given back", async (api) => {
  await using taken = await holdPort();
  const metricsPort = await freePort();
  const run = await runCliWithin(api, [
    "--port",
    String(taken.port),
    "--hostname",
    "127.0.0.1",
    "--metrics-port",
    String(metricsPort),
  ], 20_000);
  assertPortInUse(run, /--port/);
  assert.ok(await isFree(metricsPort), "the metrics port is still taken");
});

/** The `ip` of each access log line in `stdout`, in order. */
function loggedAddresses(stdout: string): (string | undefined)[] {
  return stdout.trim().split("\n").filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line).ip);
}

test("issue 19 item 9: --access-log ip writes the peer address, or with --trust-proxy the last X-Forwarded-For hop", async (api) => {
  for (const trustProxy of [false, true]) {
    const broker = await spawnBroker(api, [
      ...ANY_LOCAL_PORT,
      "--access-log",
      "ip",
      ...(trustProxy ? ["--trust-proxy"] : []),
    ], { keep: true });
    let code: number | undefined;
    try {
      const url = `http://127.0.0.1:${broker.port}/health`;
      await (await fetch(url)).body?.cancel();
      const forwarded = await fetch(url, {
        headers: { "X-Forwarded-For": "203.0.113.9, 198.51.100.4" },
      });
      await forwarded.body?.cancel();
      // A WebSocket upgrade is logged (as 101) with its address too.
      const ws = new WebSocket(`ws://127.0.0.1:${broker.port}/signal`);
      await nextEvent(ws, "open", "the socket to open", {
        failOn: ["error", "close"],
      });
      const closed = nextEvent(ws, "close", "the socket to close");
      ws.close();
      await closed;
      // A request refused before routing (a Host that is not host[:port])
      // is logged with its address too.
      const conn = await RawConnection.open(broker.port);
      try {
        await conn.write(
          "GET /health HTTP/1.1\r\nHost: a:99999\r\nConnection: close\r\n\r\n",
        );
        const answer = parseRawResponse(
          await conn.readUntil((text) => parseRawResponse(text).complete),
        );
        assert.equal(answer.status, 400);
      } finally {
        await conn.close();
      }
    } finally {
      code = await broker.stop();
    }
    assert.equal(code, 0);
    const { stdout } = broker.output();
    assert.deepEqual(
      loggedAddresses(stdout),
      trustProxy
        ? ["127.0.0.1", "198.51.100.4", "127.0.0.1", "127.0.0.1"]
        : ["127.0.0.1", "127.0.0.1", "127.0.0.1", "127.0.0.1"],
      stdout,
    );
  }
});

/**
 * Sends `POST /pods` over raw TCP with a body of `size` bytes, `chunk`
 * bytes every `everyMs` (with Content-Length, or chunked), reading nothing
 * until it is all sent; then reads the response. `sentAll` is false when
 * the broker cut the connection before the body was sent.
 */
async function slowUpload(
  port: number,
  size: number,
  { chunked, chunk, everyMs }: {
    chunked: boolean;
    chunk: number;
    everyMs: number;
  },
): Promise<{ sentAll: boolean; response: string }> {
  const socket = connect({ host: "127.0.0.1", port });
  await nextEmit(socket, "connect", "the upload's connection");
  let response = "";
  let failed = false;
  socket.setEncoding("latin1").on("data", (text: string) => (response += text));
  socket.on("error", () => (failed = true));
  // bounded: raced with a bounded loop below, then the socket is destroyed
  const ended = new Promise<void>((resolve) => socket.once("close", resolve));
  const write = (data: string | Uint8Array) =>
    new Promise<void>((resolve) =>
      socket.write(data, (error) => {
        if (error) failed = true;
        resolve();
      })
    );
  await write(
    "POST /pods HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/html\r\n" +
      (chunked
        ? "Transfer-Encoding: chunked\r\n\r\n"
        : `Content-Length: ${size}\r\n\r\n`),
  );
  const bytes = new Uint8Array(chunk).fill(0x61);
  for (let sent = 0; sent < size && !failed;) {
    const part = bytes.subarray(0, Math.min(chunk, size - sent));
    await write(
      chunked
        ? new Uint8Array([
          ...new TextEncoder().encode(`${part.length.toString(16)}\r\n`),
          ...part,
          13,
          10,
        ])
        : part,
    );
    sent += part.length;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
  if (chunked && !failed) await write("0\r\n\r\n");
  const sentAll = !failed;
  // Until the response is complete, or the broker closes (bounded wait).
  const complete = () => {
    const head = response.indexOf("\r\n\r\n");
    const length = /\r\ncontent-length: *(\d+)/i.exec(response)?.[1];
    if (head >= 0 && /\r\n0\r\n\r\n$/.test(response)) return true;
    return head >= 0 && length !== undefined &&
      response.length - head - 4 >= Number(length);
  };
  let closed = false;
  void ended.then(() => (closed = true));
  for (let i = 0; i < 500 && !closed && !complete(); i++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  socket.destroy();
  await ended;
  return { sentAll, response };
}

for (const chunked of [false, true]) {
  test(
    `issue 20: a client still sending an over-limit body slowly (${
      chunked ? "chunked" : "Content-Length"
    }) receives the 413, not a reset`,
    async (api) => {
      const limit = 256 * 1024;
      await using t = await startServer(api, { maxBlobBytes: limit });
      // limit + 1 bytes over about 3 s: longer than a 2 s lingering close.
      const { sentAll, response } = await slowUpload(t.server.port, limit + 1, {
        chunked,
        chunk: 8 * 1024,
        everyMs: 90,
      });
      assert.ok(
        sentAll,
        "the broker cut the connection while the body was sent",
      );
      assert.match(response, /^HTTP\/1\.1 413 /);
      assert.match(response, /blob_too_large/);
    },
  );
}

test("issue 20: fetch sending 50 MiB + 1, with and without Content-Length, receives the 413", async (api) => {
  await using t = await startServer(api);
  const body = new Uint8Array(api.DEFAULT_MAX_BLOB_BYTES + 1).fill(0x61);
  for (let run = 0; run < 3; run++) {
    const sized = await fetch(`${t.url}/pods`, {
      method: "POST",
      headers: { "Content-Type": "text/html" },
      body,
    });
    await assertProblem(sized, 413, "blob_too_large");
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= body.length) return controller.close();
        const part = body.subarray(sent, sent + 1024 * 1024);
        sent += part.length;
        controller.enqueue(part);
      },
    });
    // Node's fetch wants `duplex: "half"` for a stream body; Deno ignores it.
    const init: RequestInit & { duplex: "half" } = {
      method: "POST",
      headers: { "Content-Type": "text/html" },
      body: stream,
      duplex: "half",
    };
    await assertProblem(
      await fetch(`${t.url}/pods`, init),
      413,
      "blob_too_large",
    );
  }
});

test("a body refused at once that ends right at the lingering bound (limit + 1 declared) leaves its keep-alive connection to the client's next request", async (api) => {
  // The client sends the whole body, reads the 413 and sends its next
  // request on the same connection, as fetch does; that request is still
  // arriving 5 s later (the lingering close's idle limit), as a 50 MiB
  // upload is on a loaded machine. It is answered, not reset.
  const limit = 1024 * 1024;
  await using t = await startServer(api, { maxBlobBytes: limit });
  const conn = await RawConnection.open(t.server.port);
  try {
    await conn.write(
      `POST /pods HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/html\r\nContent-Length: ${
        limit + 1
      }\r\n\r\n`,
    );
    const body = new Uint8Array(limit + 1).fill(0x61);
    for (let at = 0; at < body.length; at += 64 * 1024) {
      await conn.write(body.subarray(at, at + 64 * 1024));
    }
    const first = await conn.readUntil((text) =>
      parseRawResponse(text).complete
    );
    assert.match(first, /^HTTP\/1\.1 413 /);
    await sleep(100);
    if (/\r\nconnection: close\r\n/i.test(first) || conn.socket.readableEnded) {
      return; // closed at once: the client opens a new connection
    }
    const seen = first.length;
    const pod = await signedPod(api);
    await conn.write(uploadHead(pod.length));
    // Trickled over 6 s, past the idle limit of the refused body's linger.
    const pieces = 12;
    const size = Math.ceil(pod.length / pieces);
    for (let i = 0; i < pieces; i++) {
      await sleep(500);
      await conn.write(pod.subarray(i * size, (i + 1) * size));
    }
    const next = await conn.nextResponse(seen);
    assert.match(next, /^HTTP\/1\.1 201 /, JSON.stringify(next.slice(0, 80)));
  } finally {
    await conn.close();
  }
});

test("issue 20: curl --data-binary of 50 MiB + 1 receives the 413", async (api) => {
  await using t = await startServer(api);
  await using dir = await tempDir();
  const file = join(dir.path, "big.html");
  await writeFile(
    file,
    new Uint8Array(api.DEFAULT_MAX_BLOB_BYTES + 1).fill(0x61),
  );
  for (const chunked of [false, true]) {
    const run = await runCommand("curl", [
      "-sS",
      "--max-time",
      "60",
      "-w",
      "\n%{http_code}",
      "-H",
      "Content-Type: text/html",
      ...(chunked ? ["-H", "Transfer-Encoding: chunked"] : []),
      "--data-binary",
      `@${file}`,
      `${t.url}/pods`,
    ]);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /blob_too_large/);
    assert.match(run.stdout, /\n413$/);
  }
});
