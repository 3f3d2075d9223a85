// An origin per pod, the third security review's items 6 to 8: what a pod
// host is, and what the broker says about pod hosts. Each case is named
// after its item. Runs on both runtimes (see _suite.ts); requests with a
// Host of their own go through node:http (fetch cannot set it).
import assert from "node:assert/strict";
import { signedPod, upload } from "./_pods.ts";
import { sleep, startServer } from "./_servers.ts";
import { test } from "./_suite.ts";
import { TestClient } from "./_wire.ts";
import { labelOf, requestAs } from "./pod_domain.ts";
import { runUntilListening } from "./script_policy.ts";

test("security round 3, 7: with podDomain, /health counts pod-host origins instead of naming them", async (api) => {
  await using t = await startServer(api, { podDomain: "pods.test" });
  const port = t.server.port;
  const created = await (await upload(t.url, await signedPod(api))).json();
  const label = labelOf(created.id);
  const origins = [
    `http://${label}.pods.test:${port}`,
    `HTTPS://${label.toUpperCase()}.Pods.Test`,
    `http://${labelOf("AAAAAAAAAAAA")}.pods.test:${port}`,
    "https://app.example",
  ];
  const clients = origins.map((origin) => new TestClient(t.wsUrl, origin));
  try {
    await Promise.all(clients.map((client) => client.opened()));
    const text = await (await fetch(`${t.url}/health`)).text();
    const health = JSON.parse(text);
    assert.deepEqual(health.origins, ["https://app.example"]);
    assert.equal(health.podOrigins, 3);
    assert.ok(!text.toLowerCase().includes(label), text);
    assert.ok(!text.includes("pods.test"), text);
  } finally {
    await Promise.all(clients.map((client) => client.close()));
  }
  // Closed sockets leave the count (the broker sees the closes a moment later).
  let after;
  for (let tries = 0; tries < 100; tries++) {
    after = await (await fetch(`${t.url}/health`)).json();
    if (after.podOrigins === 0) break;
    await sleep(50);
  }
  assert.equal(after.podOrigins, 0);
  assert.deepEqual(after.origins, []);
});

test("security round 3, 8: with podDomain and trustProxy, X-Forwarded-Host cannot make the broker host a pod host", async (api) => {
  for (
    const options of [
      { podDomain: "pods.test", trustProxy: true },
      {
        podDomain: "pods.test",
        trustProxy: true,
        baseUrl: "https://broker.test",
      },
    ]
  ) {
    const what = JSON.stringify(options);
    await using t = await startServer(api, options);
    const port = t.server.port;
    const created = await (await upload(t.url, await signedPod(api))).json();
    const podHost = `${labelOf(created.id)}.pods.test`;
    for (const broker of [`127.0.0.1:${port}`, "broker.test"]) {
      for (const forwarded of [podHost, `evil.example, ${podHost}:${port}`]) {
        const headers = { "X-Forwarded-Host": forwarded };
        // The broker's own front page, never the pod.
        const root = await requestAs(port, broker, "/", "GET", headers);
        assert.equal(root.status, 200, `${what} ${broker} ${forwarded}`);
        assert.doesNotMatch(root.body, /pod-manifest/);
        assert.match(root.body, /pod-broker/);
        assert.doesNotMatch(
          String(root.headers["content-security-policy"]),
          /allow-same-origin/,
        );
        // The broker host keeps the broker's routes.
        const health = await requestAs(port, broker, "/health", "GET", headers);
        assert.equal(health.status, 200, `${what} ${broker} ${forwarded}`);
        const moved = await requestAs(
          port,
          broker,
          `/${created.id}`,
          "GET",
          headers,
        );
        assert.equal(moved.status, 302, `${what} ${broker} ${forwarded}`);
      }
    }
    // A pod host is still one, and a trusted forwarded scheme and port
    // still shape its URLs when there is no base URL.
    const served = await requestAs(port, podHost, "/", "GET", {
      "X-Forwarded-Host": `${podHost}:8443`,
      "X-Forwarded-Proto": "https",
    });
    assert.equal(served.status, 200, what);
    const policies = String(served.headers["content-security-policy"]);
    assert.match(policies, /sandbox [^;]*allow-same-origin/);
    const host = "baseUrl" in options ? podHost : `${podHost}:8443`;
    assert.ok(
      policies.includes(
        `connect-src 'self' https://${host} wss://${host} data: blob:;`,
      ),
      policies,
    );
  }
});

test("security round 3, 6: a public pod domain needs podDomainPsl (listed or unlisted), else the broker refuses to start", async (api) => {
  await assert.rejects(
    () => startServer(api, { podDomain: "pods.example.com" }),
    (error: Error) =>
      error instanceof TypeError && /'podDomainPsl'/.test(error.message) &&
      /pods\.example\.com is on the Public Suffix List/.test(error.message),
  );
  for (const podDomainPsl of ["unlisted", "listed"] as const) {
    const warnings: unknown[] = [];
    await using t = await startServer(api, {
      podDomain: "pods.example.com",
      podDomainPsl,
      logger: (level, _message, fields) => {
        if (level === "warn") warnings.push(fields?.podDomain);
      },
    });
    assert.deepEqual(
      warnings,
      podDomainPsl === "unlisted" ? ["pods.example.com"] : [],
    );
    const port = t.server.port;
    const created = await (await upload(t.url, await signedPod(api))).json();
    assert.equal(
      created.podUrl,
      `http://${labelOf(created.id)}.pods.example.com:${port}/`,
    );
    const served = await requestAs(
      port,
      `${labelOf(created.id)}.pods.example.com`,
      "/",
    );
    assert.equal(served.status, 200, podDomainPsl);
  }
  // Names the public internet never resolves need no answer.
  for (
    const podDomain of ["localhost", "pods.test", "x.example", "y.invalid"]
  ) {
    await using t = await startServer(api, { podDomain });
    assert.equal((await fetch(`${t.url}/health`)).status, 200, podDomain);
  }
  const flags = ["--registry", "memory", "--port", "0", "--hostname"];
  const refused = await runUntilListening(api, [
    ...flags,
    "127.0.0.1",
    "--pod-domain",
    "pods.example.com",
  ]);
  assert.equal(refused.code, 2, refused.stdout + refused.stderr);
  assert.equal(refused.stderr.trim().split("\n").length, 1, refused.stderr);
  assert.match(refused.stderr, /--pod-domain-psl/);
  const started = await runUntilListening(api, [
    ...flags,
    "127.0.0.1",
    "--pod-domain",
    "pods.example.com",
    "--pod-domain-psl",
    "unlisted",
  ]);
  assert.equal(started.code, -1, started.stdout + started.stderr);
});
