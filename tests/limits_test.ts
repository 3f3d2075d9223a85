// Hostile-load limits of uploads (issue 11): the in-flight budget, the
// progress deadline, memory that grows with received bytes only.
import assert from "node:assert/strict";
import { connect, type Socket } from "node:net";
import { signedPod, startServer, upload } from "./_helpers.ts";

/** A raw connection that announced an upload and sent `sent` bytes of it. */
async function announce(
  port: number,
  contentLength: number,
  sent: string,
): Promise<{ socket: Socket; response: Promise<string>; text: () => string }> {
  const socket = connect({ host: "127.0.0.1", port });
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  let text = "";
  const response = new Promise<string>((resolve) => {
    socket.on("data", (chunk) => (text += chunk.toString("latin1")));
    socket.on("close", () => resolve(text));
    socket.on("error", () => resolve(text));
  });
  socket.write(
    `POST /pods HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/html\r\nContent-Length: ${contentLength}\r\n\r\n${sent}`,
  );
  return { socket, response, text: () => text };
}

function statusOf(head: string): number {
  return Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
}

/** Waits until `check()` holds, polling; fails after `ms`. */
async function until(check: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error("Condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

Deno.test("uploads: 200 slow announcers against a small budget get 503 busy; /health and uploads go on", async () => {
  const announced = 50_000_000;
  await using t = await startServer({
    maxUploadBytesInFlight: 2 * announced,
    uploadTimeoutMs: 60_000,
  });
  const rssBefore = Deno.memoryUsage().rss;
  const slow: Awaited<ReturnType<typeof announce>>[] = [];
  for (let i = 0; i < 200; i++) {
    slow.push(await announce(t.server.port, announced, "<"));
  }
  // The two that fit hold the budget; every other one is refused at once.
  const refused = slow.slice(2);
  await until(() => refused.every((c) => /"code":"busy"/.test(c.text())));
  for (const { text } of refused) {
    assert.equal(statusOf(text()), 503, text().slice(0, 200));
    assert.match(text(), /\r\nretry-after: 2\r\n/i);
  }
  assert.ok(slow.slice(0, 2).every((c) => c.text() === ""));
  const health = await fetch(`${t.url}/health`, {
    signal: AbortSignal.timeout(5_000),
  });
  assert.equal(health.status, 200);
  await health.body?.cancel();
  // Nothing was allocated on the announcers' word (200 x 50 MB).
  const grown = Deno.memoryUsage().rss - rssBefore;
  assert.ok(grown < 200 * 1024 * 1024, `RSS grew by ${grown} bytes`);
  // Once the holders go away, the budget is free again.
  for (const { socket } of slow) socket.destroy();
  await Promise.all(slow.map((c) => c.response));
  let accepted = 0;
  for (let attempt = 0; attempt < 50 && accepted === 0; attempt++) {
    const response = await upload(t.url, await signedPod());
    if (response.status === 201) accepted++;
    await response.body?.cancel();
    if (accepted === 0) await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(accepted, 1);
});

Deno.test("uploads: 8 concurrent large uploads against a budget of 2 get busy, the others land", async () => {
  const pod = await signedPod(
    `<!doctype html><p>${"x".repeat(2 * 1024 * 1024)}</p>`,
  );
  await using t = await startServer({
    maxUploadBytesInFlight: 2 * pod.length,
    uploadTimeoutMs: 30_000,
  });
  // Eight uploads announce their length and send half; two fit the budget.
  const half = new TextDecoder("latin1").decode(
    pod.subarray(0, pod.length / 2),
  );
  const uploads: Awaited<ReturnType<typeof announce>>[] = [];
  for (let i = 0; i < 8; i++) {
    uploads.push(await announce(t.server.port, pod.length, half));
  }
  // Six are refused at once, before their bodies are read.
  await until(() =>
    uploads.filter((u) => statusOf(u.text()) !== 0).length === 6
  );
  const waiting = uploads.filter((u) => statusOf(u.text()) === 0);
  assert.equal(waiting.length, 2);
  for (const u of uploads) {
    if (!waiting.includes(u)) assert.equal(statusOf(u.text()), 503);
  }
  // The two accepted ones finish normally.
  const rest = pod.subarray(pod.length / 2);
  for (const { socket } of waiting) socket.write(rest);
  await until(() => waiting.every((u) => /\}$/.test(u.text())));
  for (const u of waiting) {
    assert.equal(statusOf(u.text()), 201, u.text());
    const id = /"id":"([A-Za-z0-9]{12})"/.exec(u.text())![1];
    const got = new Uint8Array(
      await (await fetch(`${t.url}/${id}`)).arrayBuffer(),
    );
    assert.deepEqual(got, pod);
  }
  for (const u of uploads) u.socket.destroy();
  await Promise.all(uploads.map((u) => u.response));
});

Deno.test("uploads: a stalled upload gets 408 upload_timeout and holds no budget after", async () => {
  await using t = await startServer({ uploadTimeoutMs: 300 });
  const stalled = await announce(t.server.port, 10_000, "<!doctype html>");
  await until(() => /\}$/.test(stalled.text()));
  stalled.socket.destroy();
  await stalled.response;
  const head = stalled.text();
  assert.equal(statusOf(head), 408, head);
  assert.match(head, /"code":"upload_timeout"/);
  assert.match(head, /application\/problem\+json/);
  const ok = await upload(t.url, await signedPod());
  assert.equal(ok.status, 201);
  await ok.body?.cancel();
});
