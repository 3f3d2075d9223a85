// Hostile-load limits of uploads (issue 11): the in-flight budget (which
// holds the bytes received, issue 19), the progress deadline, memory that grows with received bytes only. Runs on
// Deno and on the npm package under Node 22 (see _support.ts); the raw
// responses are read with either framing (Deno.serve sends Content-Length,
// node:http may send chunks).
import assert from "node:assert/strict";
import process from "node:process";
import {
  announce,
  collect,
  parseRawResponse,
  type RawConnection,
  signedPod,
  startServer,
  until,
  upload,
} from "./_support.ts";

const { cases, test } = collect();

/** The upload limit cases. */
export const UPLOAD_CASES = cases;

function statusOf(head: string): number {
  return parseRawResponse(head).status;
}

test("uploads: 200 slow announcers hold only what they sent; /health and uploads go on", async (api) => {
  const announced = 50_000_000;
  await using t = await startServer(api, {
    maxUploadBytesInFlight: 2 * announced,
    uploadTimeoutMs: 60_000,
  });
  const rssBefore = process.memoryUsage().rss;
  const slow: RawConnection[] = [];
  try {
    for (let i = 0; i < 200; i++) {
      slow.push(await announce(t.server.port, announced, "<"));
    }
    // Announced bytes hold nothing: an honest upload still fits.
    const response = await upload(t.url, await signedPod(api));
    const said = await response.text();
    assert.equal(response.status, 201, said);
    const health = await fetch(`${t.url}/health`, {
      signal: AbortSignal.timeout(5_000),
    });
    assert.equal(health.status, 200);
    await health.body?.cancel();
    // None of them was refused or answered: they are simply waited for.
    assert.ok(slow.every((c) => c.text() === ""));
    // Nothing was allocated on the announcers' word (200 x 50 MB).
    const grown = process.memoryUsage().rss - rssBefore;
    assert.ok(grown < 200 * 1024 * 1024, `RSS grew by ${grown} bytes`);
  } finally {
    await Promise.all(slow.map((c) => c.close()));
  }
});

test("uploads: 8 concurrent large uploads against a budget of 2 get busy as their bytes pass it, the others land", async (api) => {
  const pod = await signedPod(
    api,
    `<!doctype html><p>${"x".repeat(2 * 1024 * 1024)}</p>`,
  );
  await using t = await startServer(api, {
    maxUploadBytesInFlight: 2 * pod.length,
    uploadTimeoutMs: 30_000,
  });
  // Eight uploads announce their length and send half: four halves fill
  // the budget, so at least four are refused as their bytes arrive.
  const half = pod.subarray(0, pod.length / 2);
  const uploads: RawConnection[] = [];
  try {
    for (let i = 0; i < 8; i++) {
      uploads.push(await announce(t.server.port, pod.length, half));
    }
    await until(() =>
      uploads.filter((u) => statusOf(u.text()) !== 0).length >= 4
    );
    for (const u of uploads) {
      const status = statusOf(u.text());
      if (status !== 0) {
        assert.equal(status, 503, u.text().slice(0, 300));
        assert.match(u.text(), /"code":"busy"/);
      }
    }
    // The others send the rest: each lands or is refused, and one lands.
    const waiting = uploads.filter((u) => statusOf(u.text()) === 0);
    const rest = pod.subarray(pod.length / 2);
    await Promise.all(waiting.map((u) => u.write(rest).catch(() => {})));
    await until(() =>
      waiting.every((u) => parseRawResponse(u.text()).complete)
    );
    const landed = waiting.filter((u) => statusOf(u.text()) === 201);
    assert.ok(landed.length >= 1, "none landed");
    for (const u of waiting) {
      if (!landed.includes(u)) assert.equal(statusOf(u.text()), 503);
    }
    for (const u of landed) {
      const id = /"id":"([A-Za-z0-9]{12})"/.exec(u.text())![1];
      const got = new Uint8Array(
        await (await fetch(`${t.url}/${id}`)).arrayBuffer(),
      );
      assert.deepEqual(got, pod);
    }
  } finally {
    await Promise.all(uploads.map((u) => u.close()));
  }
});

test(
  "uploads: a stalled upload gets 408 upload_timeout and holds no budget after",
  async (api) => {
    await using t = await startServer(api, { uploadTimeoutMs: 300 });
    const stalled = await announce(t.server.port, 10_000, "<!doctype html>");
    await until(() => parseRawResponse(stalled.text()).complete);
    await stalled.close();
    const head = stalled.text();
    assert.equal(statusOf(head), 408, head);
    assert.match(head, /"code":"upload_timeout"/);
    assert.match(head, /application\/problem\+json/);
    const ok = await upload(t.url, await signedPod(api));
    assert.equal(ok.status, 201);
    await ok.body?.cancel();
  },
);
