// The broker's front page: `GET`/`HEAD /` on the broker's host is a small
// static page (what this is, its version, /health, how to upload, the docs)
// under a strict policy of its own, or the same facts as JSON; a pod host's
// `/` stays the pod.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { assertHeaders, signedPod, upload } from "./_pods.ts";
import { startServer } from "./_servers.ts";
import { test } from "./_suite.ts";
import { rawRequest, type RawResponse } from "./_wire.ts";

/** One GET over raw TCP, with a `Host` that fetch cannot set. */
function getAs(
  port: number,
  host: string,
  path: string,
): Promise<RawResponse> {
  return rawRequest(
    port,
    `GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`,
  );
}

test("GET / on the broker host: a static page with the version, /health, upload and docs, under its own strict policy", async (api) => {
  await using t = await startServer(api, { maxBlobBytes: 3 * 1024 * 1024 });
  const response = await fetch(`${t.url}/`);
  assert.equal(response.status, 200);
  assertHeaders(response, {
    "Content-Type": "text/html; charset=utf-8",
    "Vary": "Accept",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
  });
  const html = await response.text();
  assert.equal(
    Number(response.headers.get("Content-Length")),
    new TextEncoder().encode(html).length,
  );
  assert.ok(html.includes(`pod-broker ${api.version}`), "names the version");
  assert.match(html, /<a href="\/health">/);
  assert.match(html, /POST \/pods<\/code> with <code>Content-Type: text\/html/);
  assert.match(html, /at most 3 MiB/);
  assert.match(html, /Documentation: README\.md and docs\//, "names the docs");
  assert.doesNotMatch(html, /<script|\son[a-z]+=/i, "no script at all");

  // The policy: nothing loads or runs but the page's one style, by hash.
  const csp = response.headers.get("Content-Security-Policy") ?? "";
  const directives = new Map(
    csp.split(";").map((d) => d.trim().split(/\s+/)).map((
      [name, ...values],
    ) => [name!, values]),
  );
  assert.deepEqual(directives.get("default-src"), ["'none'"]);
  assert.equal(directives.has("script-src"), false);
  assert.deepEqual(directives.get("frame-ancestors"), ["'none'"]);
  assert.deepEqual(directives.get("base-uri"), ["'none'"]);
  const style = /<style>([^<]*)<\/style>/.exec(html)?.[1];
  assert.ok(style, "one inline style");
  const hash = createHash("sha256").update(style).digest("base64");
  assert.deepEqual(directives.get("style-src"), [`'sha256-${hash}'`]);

  // What it points at is there: every link is a path of this broker (no
  // site that may not exist), and each answers.
  const links = [...html.matchAll(/<a href="([^"]*)"/g)].map((m) => m[1]!);
  assert.deepEqual(links, ["/health"], "links only to its own paths");
  const health = await fetch(`${t.url}/health`);
  assert.equal((await health.json()).status, "ok");
});

test("GET / with Accept: application/json gives the same facts as JSON; HEAD has GET's headers and no body", async (api) => {
  await using t = await startServer(api, { maxBlobBytes: 1_000_000 });
  const json = await fetch(`${t.url}/`, {
    headers: { Accept: "application/json" },
  });
  assert.equal(json.status, 200);
  assert.equal(json.headers.get("Content-Type"), "application/json");
  assert.equal(json.headers.get("Vary"), "Accept");
  const facts = await json.json();
  assert.deepEqual(facts, {
    name: "pod-broker",
    description: facts.description,
    version: api.version,
    health: "/health",
    upload: {
      method: "POST",
      path: "/pods",
      contentType: "text/html",
      maxBytes: 1_000_000,
    },
    signaling: "/signal",
    docs: facts.docs,
  });
  assert.match(facts.description, /pods/);
  assert.match(facts.docs, /^README\.md and docs\/ /);
  const html = await (await fetch(`${t.url}/`)).text();
  assert.ok(html.includes(facts.docs), "the page names the same docs");

  // Quality values decide; without JSON named, HTML.
  const typeFor = async (accept: string) => {
    const answer = await fetch(`${t.url}/`, { headers: { Accept: accept } });
    await answer.body?.cancel();
    return answer.headers.get("Content-Type");
  };
  assert.equal(
    await typeFor("text/html;q=0.5, application/json"),
    "application/json",
  );
  assert.equal(await typeFor("application/*"), "application/json");
  assert.equal(
    await typeFor("application/json;q=0.1, */*"),
    "text/html; charset=utf-8",
  );
  assert.equal(
    await typeFor("text/html,application/xhtml+xml,*/*;q=0.8"),
    "text/html; charset=utf-8",
  );

  for (const accept of ["text/html", "application/json"]) {
    const get = await fetch(`${t.url}/`, { headers: { Accept: accept } });
    const getLength = (await get.arrayBuffer()).byteLength;
    const head = await fetch(`${t.url}/`, {
      method: "HEAD",
      headers: { Accept: accept },
    });
    assert.equal(head.status, 200);
    assert.equal(
      head.headers.get("Content-Type"),
      get.headers.get("Content-Type"),
    );
    assert.equal(head.headers.get("Content-Length"), String(getLength));
    assert.equal(
      head.headers.get("Content-Security-Policy"),
      get.headers.get("Content-Security-Policy"),
    );
    assert.equal((await head.arrayBuffer()).byteLength, 0);
  }

  const post = await fetch(`${t.url}/`, { method: "POST", body: "x" });
  assert.equal(post.status, 405);
  assert.equal(post.headers.get("Allow"), "GET, HEAD");
  await post.body?.cancel();
});

test("GET / holds no request data: another Host gets the same bytes", async (api) => {
  await using t = await startServer(api);
  const port = t.server.port;
  const plain = await getAs(port, `127.0.0.1:${port}`, "/");
  const other = await getAs(port, "evil-name.example:1", "/");
  assert.equal(plain.status, 200);
  assert.equal(other.status, 200);
  assert.equal(other.body, plain.body);
  assert.doesNotMatch(other.body, /evil-name/);
});

test("podDomain: the broker host's / is the front page, a pod host's / is the pod", async (api) => {
  await using t = await startServer(api, { podDomain: "pods.test" });
  const port = t.server.port;
  const pod = await signedPod(api);
  const created = await (await upload(t.url, pod)).json();
  const front = await getAs(port, `127.0.0.1:${port}`, "/");
  assert.equal(front.status, 200);
  assert.ok(front.body.includes(`pod-broker ${api.version}`));
  const podHost = new URL(created.podUrl).host;
  const served = await getAs(port, podHost, "/");
  assert.equal(served.status, 200);
  assert.equal(served.body, new TextDecoder().decode(pod));
  assert.doesNotMatch(served.body, /pod-broker \d/);
});
