// No Docker engine runs here, so the Dockerfile is checked in two ways: an
// offline linter, and its exact ENTRYPOINT + CMD run on this machine with
// /data mapped to a temp dir (and port 8080 to a free one).
import assert from "node:assert/strict";
import { connect, type Socket } from "node:net";
import { validate } from "dockerfile-utils";
import { signedPod, spawnBroker } from "../support/helpers.ts";
import { freePort } from "../support/ports.ts";

const ROOT = new URL("../..", import.meta.url).pathname;
const dockerfile = await Deno.readTextFile(
  new URL("../../Dockerfile", import.meta.url),
);

/** The JSON-array form of an instruction, e.g. ENTRYPOINT ["deno", ...]. */
function execForm(instruction: string): string[] {
  const match = new RegExp(`^${instruction}\\s+(\\[.*\\])\\s*$`, "m").exec(
    dockerfile,
  );
  assert.ok(match, `${instruction} in exec form`);
  return JSON.parse(match[1]!);
}

Deno.test("Dockerfile lints clean with dockerfile-utils", () => {
  assert.deepEqual(validate(dockerfile), []);
});

Deno.test("Dockerfile runs as deno on denoland/deno:2.9.6 with narrow permissions", () => {
  assert.match(dockerfile, /^FROM denoland\/deno:2\.9\.6$/m);
  assert.match(dockerfile, /^USER deno$/m);
  assert.match(dockerfile, /^EXPOSE 8080$/m);
  assert.match(dockerfile, /^VOLUME \/data$/m);
  assert.match(
    dockerfile,
    /^RUN deno install --frozen --entrypoint src\/mod_node\.ts$/m,
  );
  assert.match(dockerfile, /^HEALTHCHECK .*\\\n\s+CMD \["deno", "eval"/m);
  const entrypoint = execForm("ENTRYPOINT");
  assert.ok(!entrypoint.some((arg) => arg === "-A" || arg === "--allow-all"));
  assert.deepEqual(execForm("CMD"), [
    "--registry",
    "sqlite",
    "--data-dir",
    "/data",
    "--port",
    "8080",
  ]);
});

/** The container's command line, with /data in `dataDir` and 8080 as `port`. */
function containerCommand(dataDir: string, port: number) {
  const map = (arg: string) =>
    arg.replaceAll("/data", dataDir).replace(/^8080$/, String(port)).replace(
      "127.0.0.1:8080",
      `127.0.0.1:${port}`,
    );
  const [command, ...args] = [...execForm("ENTRYPOINT"), ...execForm("CMD")]
    .map(map);
  return { command, args, map };
}

Deno.test("Dockerfile's ENTRYPOINT and CMD serve, pass the HEALTHCHECK and stop on SIGTERM", async () => {
  const dataDir = await Deno.makeTempDir();
  const port = await freePort();
  const { command, args, map } = containerCommand(dataDir, port);
  assert.equal(command, "deno");
  await using broker = await spawnBroker(args, ROOT);
  assert.equal(broker.port, port);
  const health = await fetch(`http://127.0.0.1:${port}/health`);
  assert.equal((await health.json()).status, "ok");

  const healthcheck = /HEALTHCHECK[^\n]*\\\n\s+CMD (\[.*\])/.exec(
    dockerfile,
  )![1]!;
  const [, ...probe] = (JSON.parse(healthcheck) as string[]).map(map);
  const probed = await new Deno.Command(Deno.execPath(), {
    args: probe,
    stdout: "null",
  }).output();
  assert.equal(probed.code, 0, "HEALTHCHECK passes");

  const uploaded = await fetch(`http://127.0.0.1:${port}/pods`, {
    method: "POST",
    headers: { "Content-Type": "text/html" },
    body: await signedPod(),
  });
  assert.equal(uploaded.status, 201);
  const { id } = await uploaded.json();
  const stored = [...Deno.readDirSync(`${dataDir}/blobs`)].map((entry) =>
    entry.name
  );
  assert.deepEqual(stored, [id]);

  assert.equal(await broker.stop(), 0);
});

/** What announcing and streaming one oversized frame came to. */
interface OversizedFrame {
  /** Payload bytes written before the broker stopped the connection. */
  sent: number;
  /** The code of the close frame the broker sent, or null. */
  closeCode: number | null;
}

/**
 * Upgrades a raw connection on `/signal`, announces a binary frame of
 * `size` bytes and streams its payload 64 KiB at a time until it is sent in
 * full or the broker closes the connection.
 */
async function sendOversizedFrame(
  port: number,
  size: number,
): Promise<OversizedFrame> {
  const socket: Socket = connect({ host: "127.0.0.1", port });
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  let received = new Uint8Array(0);
  let closed = false;
  socket.on("data", (chunk: Uint8Array) => {
    const all = new Uint8Array(received.length + chunk.length);
    all.set(received);
    all.set(chunk, received.length);
    received = all;
  });
  socket.on("error", () => {});
  const ended = new Promise<void>((resolve) =>
    socket.on("close", () => {
      closed = true;
      resolve();
    })
  );
  const text = () => new TextDecoder("latin1").decode(received);
  socket.write(
    "GET /signal HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n" +
      "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n" +
      "Sec-WebSocket-Version: 13\r\n\r\n",
  );
  for (let i = 0; i < 500 && !text().includes("\r\n\r\n") && !closed; i++) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  assert.match(text(), /^HTTP\/1\.1 101 /);
  const headEnd = text().indexOf("\r\n\r\n") + 4;
  // FIN + binary, masked (with a zero mask), 64-bit length.
  const header = new Uint8Array(14);
  header[0] = 0x82;
  header[1] = 0x80 | 127;
  new DataView(header.buffer).setBigUint64(2, BigInt(size));
  socket.write(header);
  const chunk = new Uint8Array(64 * 1024);
  let sent = 0;
  while (sent < size && !closed) {
    const n = Math.min(chunk.length, size - sent);
    const flushed = socket.write(chunk.subarray(0, n));
    sent += n;
    if (!flushed) {
      await new Promise<void>((resolve) => {
        const done = () => {
          socket.off("drain", done);
          socket.off("close", done);
          resolve();
        };
        socket.on("drain", done);
        socket.on("close", done);
      });
    }
  }
  // The broker ends the connection after its close frame (bounded wait).
  await Promise.race([
    ended,
    new Promise((resolve) => setTimeout(resolve, 5_000)),
  ]);
  socket.destroy();
  await ended;
  const frames = received.subarray(headEnd);
  let closeCode: number | null = null;
  for (let at = 0; at + 2 <= frames.length;) {
    let length = frames[at + 1]! & 0x7f;
    let headLength = 2;
    if (length === 126) {
      length = (frames[at + 2]! << 8) | frames[at + 3]!;
      headLength = 4;
    }
    if ((frames[at]! & 0x0f) === 8 && length >= 2) {
      closeCode = (frames[at + headLength]! << 8) |
        frames[at + headLength + 1]!;
    }
    at += headLength + length;
  }
  return { sent, closeCode };
}

Deno.test("issue 19 item 2: the container refuses a frame announcing over --max-frame-bytes with 1009 before its payload is sent", async () => {
  const dataDir = await Deno.makeTempDir();
  const port = await freePort();
  const { args } = containerCommand(dataDir, port);
  await using broker = await spawnBroker(args, ROOT);
  // 60 MB: under the 64 MiB that Deno.upgradeWebSocket assembles whole
  // before the broker sees the message (and checks its 64 KiB limit).
  const size = 60_000_000;
  const { sent, closeCode } = await sendOversizedFrame(broker.port, size);
  assert.equal(closeCode, 1009);
  assert.ok(sent < size, "the whole 60 MB payload was read before the refusal");
  assert.equal(await broker.stop(), 0);
  await Deno.remove(dataDir, { recursive: true });
});
