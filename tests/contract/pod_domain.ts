// An origin per pod (issue 22): with `podDomain`, each pod is served at
// SCHEME://LABEL.DOMAIN[:PORT]/ and nothing else is answered there. Requests
// go through node:http, since fetch cannot set the Host header.
import assert from "node:assert/strict";
import { type HostAnswer, requestWithHost } from "../support/host_request.ts";
import { signedPod, upload } from "./_pods.ts";
import { startServer } from "./_servers.ts";
import { test } from "./_suite.ts";

/** Lowercase RFC 4648 base32, no padding, of an id's 12 ASCII bytes. */
export function labelOf(id: string): string {
  let bits = 0n;
  for (const char of id) bits = (bits << 8n) | BigInt(char.charCodeAt(0));
  bits <<= 4n; // 96 bits padded to 100: 20 characters of 5 bits
  return bits.toString(32).padStart(20, "0").replace(
    /./g,
    (digit) => "abcdefghijklmnopqrstuvwxyz234567"[parseInt(digit, 32)]!,
  );
}

/** A response read by {@linkcode requestAs}. */
export type RawAnswer = HostAnswer;

/** One request to 127.0.0.1:`port` with a raw `Host` header. */
export function requestAs(
  port: number,
  host: string,
  path: string,
  method = "GET",
  headers: Record<string, string> = {},
): Promise<RawAnswer> {
  return requestWithHost(port, host, path, { method, headers });
}

function codeOf(answer: RawAnswer): string {
  return JSON.parse(answer.body).code;
}

test("podDomain: a pod is served at LABEL.DOMAIN, whatever the Host's case, port or trailing dot", async (api) => {
  await using t = await startServer(api, { podDomain: "pods.test" });
  const port = t.server.port;
  const pod = await signedPod(api);
  const created = await (await upload(t.url, pod)).json();
  const label = labelOf(created.id);
  assert.match(label, /^[a-z2-7]{20}$/);
  assert.equal(created.podUrl, `http://${label}.pods.test:${port}/`);
  const meta = await (await fetch(`${t.url}/${created.id}/meta`)).json();
  assert.equal(meta.podUrl, created.podUrl);
  for (
    const host of [
      `${label}.pods.test:${port}`,
      `${label.toUpperCase()}.PODS.Test:${port}`,
      `${label}.pods.test.:${port}`,
      `${label}.pods.test`,
    ]
  ) {
    const answer = await requestAs(port, host, "/");
    assert.equal(answer.status, 200, host);
    assert.equal(answer.body, new TextDecoder().decode(pod), host);
    assert.equal(answer.headers["etag"], `"${meta.sha256}"`);
  }
  const host = `${label}.pods.test:${port}`;
  const head = await requestAs(port, host, "/", "HEAD");
  assert.equal(head.status, 200);
  assert.equal(head.body, "");
  const etag = head.headers["etag"] as string;
  const again = await requestAs(port, host, "/", "GET", {
    "If-None-Match": etag,
  });
  assert.equal(again.status, 304);
  const hits = (await (await fetch(`${t.url}/${created.id}/meta`)).json())
    .hits;
  assert.equal(hits, 4, "each 200 GET on the pod host is a hit");
});

test("podDomain: a pod host answers / and /signal only; unknown labels are 404", async (api) => {
  await using t = await startServer(api, { podDomain: "pods.test" });
  const port = t.server.port;
  const created = await (await upload(t.url, await signedPod(api))).json();
  const host = `${labelOf(created.id)}.pods.test:${port}`;
  for (
    const [method, path] of [
      ["POST", "/pods"],
      ["GET", "/health"],
      ["GET", `/${created.id}`],
      ["GET", `/${created.id}/meta`],
      ["GET", "/index.html"],
    ]
  ) {
    const answer = await requestAs(port, host, path!, method);
    assert.equal(answer.status, 404, `${method} ${path}`);
  }
  const signal = await requestAs(port, host, "/signal");
  assert.equal(signal.status, 426, "/signal is answered as on the broker");
  assert.equal(codeOf(signal), "upgrade_required");
  for (
    const unknown of [
      labelOf("AAAAAAAAAAAA"), // a well-formed id no pod has
      "aaaaaaaaaaaaaaaaaaaa", // decodes to bytes that are no id
      "a.b", // a name under the pod domain that is no label
      labelOf(created.id).slice(0, -1) + "b", // not the canonical encoding
    ]
  ) {
    const answer = await requestAs(port, `${unknown}.pods.test:${port}`, "/");
    assert.equal(answer.status, 404, unknown);
    assert.equal(codeOf(answer), "pod_not_found", unknown);
  }
});

test("podDomain: a deleted pod's host answers 410 with Clear-Site-Data", async (api) => {
  const registry = new api.MemoryRegistry();
  await using t = await startServer(api, { registry, podDomain: "pods.test" });
  const port = t.server.port;
  const created = await (await upload(t.url, await signedPod(api))).json();
  const host = `${labelOf(created.id)}.pods.test:${port}`;
  assert.equal((await requestAs(port, host, "/")).status, 200);
  assert.equal(await registry.deletePod(created.id), true);
  for (const method of ["GET", "HEAD"]) {
    const answer = await requestAs(port, host, "/", method);
    assert.equal(answer.status, 410, method);
    assert.equal(answer.headers["clear-site-data"], '"storage"', method);
  }
  assert.equal(codeOf(await requestAs(port, host, "/")), "pod_deleted");
});

test("podDomain: the broker host redirects /:id to the pod's origin, other routes unchanged", async (api) => {
  await using t = await startServer(api, {
    podDomain: "pods.test",
    baseUrl: "https://broker.test:8443",
  });
  const port = t.server.port;
  const created = await (await upload(t.url, await signedPod(api))).json();
  const origin = `https://${labelOf(created.id)}.pods.test:8443`;
  assert.equal(created.podUrl, `${origin}/`);
  assert.equal(created.url, `https://broker.test:8443/${created.id}`);
  const moved = await fetch(`${t.url}/${created.id}?x=1`, {
    redirect: "manual",
  });
  assert.equal(moved.status, 302);
  assert.equal(moved.headers.get("Location"), `${origin}/?x=1`);
  await moved.body?.cancel();
  assert.equal((await fetch(`${t.url}/health`)).status, 200);
  // With a base URL, the pod host is found from the Host the request names.
  const served = await requestAs(
    port,
    `${labelOf(created.id)}.pods.test`,
    "/",
  );
  assert.equal(served.status, 200);
  const policies = served.headers["content-security-policy"] as string;
  assert.match(policies, /sandbox [^;]*allow-same-origin/);
  assert.ok(
    policies.includes(
      `connect-src 'self' ${origin} ${
        origin.replace("https", "wss")
      } data: blob:;`,
    ),
    policies,
  );
});

test("podDomain: pod headers keep the policies, with allow-same-origin and the pod host's own origin to connect to", async (api) => {
  await using t = await startServer(api, {
    podDomain: "localhost",
    podHeaderOptions: { sandbox: "allow-scripts" },
  });
  const port = t.server.port;
  const created = await (await upload(t.url, await signedPod(api))).json();
  const onBroker = await fetch(`${t.url}/${created.id}/meta`);
  assert.equal(onBroker.status, 200);
  await onBroker.body?.cancel();
  const host = `${labelOf(created.id)}.localhost:${port}`;
  const served = await requestAs(port, host, "/");
  assert.equal(served.status, 200);
  const [sandbox, content] =
    (served.headers["content-security-policy"] as string)
      .split(", ");
  assert.equal(
    sandbox,
    "sandbox allow-scripts allow-same-origin; object-src 'none'; base-uri 'none'",
  );
  assert.match(content!, /^default-src 'none'; /);
  assert.ok(
    content!.includes(
      `connect-src 'self' http://${host} ws://${host} data: blob:;`,
    ),
    content,
  );
  assert.equal(served.headers["x-frame-options"], "DENY");
  // The broker host (localhost itself) is not a pod host.
  const health = await requestAs(port, `localhost:${port}`, "/health");
  assert.equal(health.status, 200);
});

test("without podDomain, pod hosts are not special and there is no podUrl", async (api) => {
  await using t = await startServer(api);
  const created = await (await upload(t.url, await signedPod(api))).json();
  assert.equal(created.podUrl, undefined);
  const meta = await (await fetch(`${t.url}/${created.id}/meta`)).json();
  assert.equal(meta.podUrl, undefined);
  const direct = await fetch(`${t.url}/${created.id}`);
  assert.equal(direct.status, 200);
  assert.doesNotMatch(
    direct.headers.get("Content-Security-Policy")!,
    /allow-same-origin/,
  );
  await direct.body?.cancel();
  const port = t.server.port;
  const root = await requestAs(
    port,
    `${labelOf(created.id)}.localhost:${port}`,
    "/",
  );
  // The broker's front page, as on any host of the broker: not the pod.
  assert.equal(root.status, 200);
  const front = await fetch(`${t.url}/`);
  assert.equal(root.body, await front.text());
  assert.doesNotMatch(
    String(root.headers["content-security-policy"]),
    /allow-same-origin/,
  );
});
