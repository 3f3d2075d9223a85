// Powerful features a pod asks for: a pod declares them in its signed HTML
// (`<meta name="pod-permissions">`), the operator caps them
// (`podPermissions`), and on the pod's own origin Permissions-Policy grants
// each declared and allowed one to `self`. The broker's host never grants.
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { newSeed, putUpdate, signedPod, upload } from "./_pods.ts";
import { runCli, spawnBroker, startServer, tempDir } from "./_servers.ts";
import { type ContractApi, test } from "./_suite.ts";
import { labelOf, type RawAnswer, requestAs } from "./pod_domain.ts";

/** A page that declares `content` in its head. */
function declaring(content: string, head = ""): string {
  return `<!doctype html><html><head><meta charset="utf-8">${head}` +
    `<meta name="pod-permissions" content="${content}">` +
    `<title>call</title></head><body><p>call</p></body></html>\n`;
}

/**
 * `pod-broker sign --key key.pem --out page.pod.html page.html` in the
 * folder of `at`, which must succeed; what it warned.
 */
async function signPage(
  api: ContractApi,
  at: (name: string) => string,
): Promise<string> {
  const signed = await runCli(api, [
    "sign",
    "--key",
    at("key.pem"),
    "--out",
    at("page.pod.html"),
    at("page.html"),
  ]);
  assert.equal(signed.code, 0, signed.stderr);
  return signed.stderr;
}

/** Each member of a Permissions-Policy, by feature. */
function policyOf(value: unknown): Map<string, string> {
  assert.equal(typeof value, "string", "a Permissions-Policy is sent");
  const members = new Map<string, string>();
  for (const member of (value as string).split(",")) {
    const [feature, allow] = member.trim().split("=");
    assert.ok(!members.has(feature!), `${feature} once`);
    members.set(feature!, allow!);
  }
  return members;
}

/** The features granted to `self`, sorted; every other one must be `()`. */
function grantedBy(answer: RawAnswer | Response): string[] {
  const header = answer instanceof Response
    ? answer.headers.get("Permissions-Policy")
    : answer.headers["permissions-policy"];
  const granted: string[] = [];
  for (const [feature, allow] of policyOf(header)) {
    if (allow === "(self)") granted.push(feature);
    else assert.equal(allow, "()", `${feature}=${allow}`);
  }
  return granted.sort();
}

/** Uploads `html` (signed here unless `sign` is false); its id and host. */
async function publish(
  api: Parameters<typeof signedPod>[0],
  url: string,
  port: number,
  html: string,
  sign = true,
): Promise<{ id: string; host: string }> {
  const created = await upload(url, sign ? await signedPod(api, html) : html);
  assert.equal(created.status, 201, await created.clone().text());
  const { id } = await created.json();
  return { id, host: `${labelOf(id)}.pods.test:${port}` };
}

async function metaPermissions(url: string, id: string): Promise<unknown> {
  return (await (await fetch(`${url}/${id}/meta`)).json()).permissions;
}

test("permissions: a pod host grants each declared and allowed feature to self; undeclared and refused ones stay ()", async (api) => {
  await using t = await startServer(api, {
    podDomain: "pods.test",
    podPermissions: ["camera", "microphone", "display-capture", "autoplay"],
  });
  const port = t.server.port;
  const call = await publish(
    api,
    t.url,
    port,
    declaring("microphone camera clipboard-write"),
  );
  const expected = ["camera", "microphone"];
  // The first view, the ready copy, HEAD and a 304 all carry the grants.
  for (const method of ["GET", "GET", "HEAD"]) {
    const answer = await requestAs(port, call.host, "/", method);
    assert.equal(answer.status, 200);
    assert.deepEqual(grantedBy(answer), expected, method);
    const policy = policyOf(answer.headers["permissions-policy"]);
    // Declared but refused by the operator; allowed but not declared.
    assert.equal(policy.get("clipboard-write"), "()");
    assert.equal(policy.get("display-capture"), "()");
    assert.equal(policy.get("usb"), "()");
  }
  const etag = (await requestAs(port, call.host, "/")).headers["etag"];
  const again = await requestAs(port, call.host, "/", "GET", {
    "If-None-Match": etag as string,
  });
  assert.equal(again.status, 304);
  assert.deepEqual(grantedBy(again), expected);
  assert.deepEqual(await metaPermissions(t.url, call.id), expected);

  // A pod that declares nothing gets nothing.
  const plain = await publish(
    api,
    t.url,
    port,
    declaring("").replace(
      /<meta name="pod-permissions"[^>]*>/,
      "",
    ),
  );
  assert.deepEqual(grantedBy(await requestAs(port, plain.host, "/")), []);
  assert.deepEqual(await metaPermissions(t.url, plain.id), []);
});

test("permissions: the broker's host never grants, and /meta says [] without a pod domain", async (api) => {
  await using t = await startServer(api);
  const created = await (await upload(
    t.url,
    await signedPod(api, declaring("camera microphone fullscreen")),
  )).json();
  const served = await fetch(created.url);
  await served.body?.cancel();
  assert.equal(served.status, 200);
  assert.deepEqual(grantedBy(served), []);
  const policy = policyOf(served.headers.get("Permissions-Policy"));
  for (const feature of ["camera", "microphone"]) {
    assert.equal(policy.get(feature), "()", feature);
  }
  // As before pods could declare: the clipboard's write and full screen are
  // the browser's default there (they never prompt).
  for (const feature of ["clipboard-write", "fullscreen"]) {
    assert.ok(!policy.has(feature), feature);
  }
  assert.deepEqual(await metaPermissions(t.url, created.id), []);
});

test("permissions: Permissions-Policy names only features browsers know; a pod host denies all eight tokens to a pod that declares none", async (api) => {
  await using t = await startServer(api, { podDomain: "pods.test" });
  const plain = await publish(
    api,
    t.url,
    t.server.port,
    declaring("").replace(/<meta name="pod-permissions"[^>]*>/, ""),
  );
  const served = await requestAs(t.server.port, plain.host, "/");
  const policy = policyOf(served.headers["permissions-policy"]);
  for (const feature of api.POD_PERMISSIONS) {
    assert.equal(policy.get(feature), "()", feature);
  }
  // Chromium logs an error for each of these (it does not know them).
  for (
    const unknown of [
      "ambient-light-sensor",
      "battery",
      "bluetooth",
      "document-domain",
    ]
  ) {
    assert.ok(!policy.has(unknown), unknown);
  }
});

test("permissions: an operator's Permissions-Policy is the base the grants replace members of", async (api) => {
  await using t = await startServer(api, {
    podDomain: "pods.test",
    podHeaderOptions: { permissionsPolicy: "camera=(), usb=()" },
  });
  const call = await publish(
    api,
    t.url,
    t.server.port,
    declaring("camera picture-in-picture"),
  );
  const answer = await requestAs(t.server.port, call.host, "/");
  assert.equal(
    answer.headers["permissions-policy"],
    "usb=(), microphone=(), display-capture=(), clipboard-write=(), " +
      "fullscreen=(), screen-wake-lock=(), autoplay=(), camera=(self), " +
      "picture-in-picture=(self)",
  );
});

test("permissions: a new version's declaration is read again", async (api) => {
  await using t = await startServer(api, { podDomain: "pods.test" });
  const port = t.server.port;
  const seed = (await api.generateKeyPair()).seed;
  const v1 = await signedPod(api, declaring("camera"), {
    createdAt: "2026-01-01T00:00:00Z",
  }, seed);
  const created = await (await upload(t.url, v1)).json();
  const host = `${labelOf(created.id)}.pods.test:${port}`;
  assert.deepEqual(grantedBy(await requestAs(port, host, "/")), ["camera"]);
  const v2 = await signedPod(api, declaring("microphone"), {
    createdAt: "2026-02-01T00:00:00Z",
  }, seed);
  const updated = await putUpdate(api, t.url, created.id, v2, seed);
  await updated.body?.cancel();
  assert.equal(updated.status, 200);
  assert.deepEqual(grantedBy(await requestAs(port, host, "/")), [
    "microphone",
  ]);
  assert.deepEqual(await metaPermissions(t.url, created.id), ["microphone"]);
});

test("permissions: a hostile declaration is bounded and ignored", async (api) => {
  await using t = await startServer(api, { podDomain: "pods.test" });
  const port = t.server.port;
  const grants = async (html: string) => {
    const pod = await publish(api, t.url, port, html);
    const answer = await requestAs(port, pod.host, "/");
    assert.equal(answer.status, 200);
    const header = answer.headers["permissions-policy"] as string;
    assert.ok(header.length < 1024, `${header.length} bytes`);
    const listed = await metaPermissions(t.url, pod.id) as string[];
    assert.deepEqual([...listed].sort(), grantedBy(answer));
    return grantedBy(answer);
  };
  // 100 KB of tokens: past 256 bytes, the declaration is ignored whole.
  const flood = Array.from(
    { length: 15_000 },
    (_, i) => ["camera", "microphone", `x${i}`][i % 3],
  ).join(" ");
  assert.ok(flood.length > 100_000);
  assert.deepEqual(await grants(declaring(flood)), []);
  assert.deepEqual(await grants(declaring(`camera ${"x".repeat(251)}`)), []);
  // Duplicates count once; tokens are lower case (others are unknown).
  assert.deepEqual(
    await grants(declaring("camera camera CAMERA Microphone\tautoplay  ")),
    ["autoplay", "camera"],
  );
  // Only the first element of the head counts.
  assert.deepEqual(
    await grants(declaring("camera", '<meta name="POD-permissions" content>')),
    [],
  );
  // Past the first 64 KiB, in the body, in a comment or a script: unread.
  assert.deepEqual(
    await grants(declaring("camera", `<!--${"-".repeat(70_000)}-->`)),
    [],
  );
  assert.deepEqual(
    await grants(
      "<!doctype html><title>t</title><p>x</p>" +
        '<meta name="pod-permissions" content="camera">',
    ),
    [],
  );
  assert.deepEqual(
    await grants(
      '<!doctype html><head><!-- <meta name="pod-permissions" content="camera"> -->' +
        '<script>"<meta name=pod-permissions content=camera>"</script></head>',
    ),
    [],
  );
});

/** `pod-broker` on pods.test, with `--pod-permissions` set to `permissions`. */
function podDomainBroker(api: ContractApi, permissions: string) {
  return spawnBroker(api, [
    "--pod-domain",
    "pods.test",
    "--pod-permissions",
    permissions,
    "--port",
    "0",
    "--hostname",
    "127.0.0.1",
  ]);
}

test("pod-broker --pod-permissions none grants nothing; an unknown token stops the start with exit 2", async (api) => {
  await using broker = await podDomainBroker(api, "none");
  const base = `http://127.0.0.1:${broker.port}`;
  const call = await publish(
    api,
    base,
    broker.port,
    declaring("camera microphone"),
  );
  assert.deepEqual(grantedBy(await requestAs(broker.port, call.host, "/")), []);
  assert.deepEqual(await metaPermissions(base, call.id), []);

  {
    await using some = await podDomainBroker(api, "microphone, camera");
    const declared = declaring("camera display-capture");
    const base = `http://127.0.0.1:${some.port}`;
    const pod = await publish(api, base, some.port, declared);
    assert.deepEqual(grantedBy(await requestAs(some.port, pod.host, "/")), [
      "camera",
    ]);
  }

  const refused = await runCli(api, ["--pod-permissions", "camera,usb"]);
  assert.equal(refused.code, 2);
  assert.equal(refused.stderr.trim().split("\n").length, 1, refused.stderr);
  assert.match(refused.stderr, /--pod-permissions.*'usb'/);
});

test("pod-broker build --permissions writes the declaration, sign warns about unknown tokens, verify prints the list", async (api) => {
  await using dir = await tempDir();
  const at = (name: string) => join(dir.path, name);
  await writeFile(at("key.pem"), api.encodePrivateKeyPem(await newSeed(api)));
  await writeFile(
    at("index.html"),
    "<!doctype html><html><head><title>call</title></head><body>hi</body></html>",
  );
  const built = await runCli(api, [
    "build",
    at("index.html"),
    "--key",
    at("key.pem"),
    "--permissions",
    "microphone,camera,usb",
    "--out",
    at("call.html"),
  ]);
  assert.equal(built.code, 0, built.stderr);
  assert.match(built.stderr, /unknown permission 'usb' dropped/);
  const html = await readFile(at("call.html"), "utf8");
  assert.ok(
    html.startsWith(
      '<!doctype html><html><head><meta name="pod-permissions" content="camera microphone"><title>',
    ),
    html.slice(0, 120),
  );
  const verified = await runCli(api, ["verify", at("call.html")]);
  assert.equal(verified.code, 0, verified.stderr);
  assert.deepEqual(JSON.parse(verified.stdout).permissions, [
    "camera",
    "microphone",
  ]);
  // A page that declares its own is refused: one place for the list.
  const twice = await runCli(api, [
    "build",
    at("call.html"),
    "--permissions",
    "camera",
  ]);
  assert.equal(twice.code, 2);
  assert.match(twice.stderr, /pod-permissions"> already/);

  // sign: unknown and odd-case tokens are dropped with a warning.
  await writeFile(at("page.html"), declaring("camera Microphone x-ray"));
  assert.match(
    await signPage(api, at),
    /unknown permission 'Microphone', 'x-ray' dropped \(known: camera, microphone,/,
  );
  const listed = await runCli(api, ["verify", at("page.pod.html")]);
  assert.deepEqual(JSON.parse(listed.stdout).permissions, ["camera"]);
  // What verify prints is what a broker grants.
  await using t = await startServer(api, { podDomain: "pods.test" });
  const pod = await publish(
    api,
    t.url,
    t.server.port,
    await readFile(at("page.pod.html"), "utf8"),
    false,
  );
  assert.deepEqual(await metaPermissions(t.url, pod.id), ["camera"]);
});

test("pod-broker sign warns about a declaration a broker ignores: over 256 bytes, or outside the head", async (api) => {
  await using dir = await tempDir();
  const at = (name: string) => join(dir.path, name);
  await writeFile(at("key.pem"), api.encodePrivateKeyPem(await newSeed(api)));
  const sign = async (html: string) => {
    await writeFile(at("page.html"), html);
    const warned = await signPage(api, at);
    const listed = await runCli(api, ["verify", at("page.pod.html")]);
    assert.equal(listed.code, 0, listed.stderr);
    return { warned, listed: JSON.parse(listed.stdout) };
  };
  const long = await sign(declaring(`camera ${"x".repeat(251)}`));
  assert.match(
    long.warned,
    /pod-permissions"> has more than 256 bytes: a broker ignores it/,
  );
  assert.deepEqual(long.listed.permissions, []);
  const inBody = await sign(
    "<!doctype html><title>t</title><p>x</p>" +
      '<meta name="pod-permissions" content="camera">',
  );
  assert.match(
    inBody.warned,
    /only in the head, within the page's first 64 KiB/,
  );
  assert.deepEqual(inBody.listed.permissions, []);
  // A declaration a broker reads draws no warning.
  const fine = await sign(declaring("camera"));
  assert.doesNotMatch(fine.warned, /pod-permissions/);
  assert.deepEqual(fine.listed.permissions, ["camera"]);
});

/** The sandbox tokens of a served pod (its first Content-Security-Policy). */
function sandboxTokens(answer: RawAnswer): string[] {
  const [sandbox] = (answer.headers["content-security-policy"] as string)
    .split(", ");
  return sandbox!.split(";")[0]!.split(" ").slice(1);
}

test("permissions: under podHeaderOptions.storage 'granted' a pod host serves a pod granted nothing without allow-same-origin, a granted one with it", async (api) => {
  await using t = await startServer(api, {
    podDomain: "pods.test",
    podHeaderOptions: { storage: "granted" },
  });
  const port = t.server.port;
  const call = await publish(api, t.url, port, declaring("camera"));
  const plain = await publish(api, t.url, port, declaring("usb"));
  // The first view, the ready copy, HEAD and a 304 alike.
  for (const method of ["GET", "GET", "HEAD"]) {
    const granted = await requestAs(port, call.host, "/", method);
    assert.deepEqual(grantedBy(granted), ["camera"]);
    assert.ok(sandboxTokens(granted).includes("allow-same-origin"), method);
    const opaque = await requestAs(port, plain.host, "/", method);
    assert.equal(opaque.status, 200);
    assert.deepEqual(grantedBy(opaque), []);
    assert.deepEqual(
      sandboxTokens(opaque),
      "allow-scripts allow-forms allow-modals allow-downloads allow-popups allow-popups-to-escape-sandbox"
        .split(" "),
      method,
    );
  }
  const etag = (await requestAs(port, plain.host, "/")).headers["etag"];
  const again = await requestAs(port, plain.host, "/", "GET", {
    "If-None-Match": etag as string,
  });
  assert.equal(again.status, 304);
  assert.ok(!sandboxTokens(again).includes("allow-same-origin"));

  // The default: every pod on its own origin runs at it.
  await using all = await startServer(api, { podDomain: "pods.test" });
  const own = await publish(api, all.url, all.server.port, declaring("usb"));
  assert.ok(
    sandboxTokens(await requestAs(all.server.port, own.host, "/"))
      .includes("allow-same-origin"),
  );
});

test("pod-broker --pod-storage granted with --pod-permissions none serves every pod opaque; another value stops the start with exit 2", async (api) => {
  await using broker = await spawnBroker(api, [
    "--pod-domain",
    "pods.test",
    "--pod-permissions",
    "none",
    "--pod-storage",
    "granted",
    "--port",
    "0",
    "--hostname",
    "127.0.0.1",
  ]);
  const base = `http://127.0.0.1:${broker.port}`;
  const call = await publish(api, base, broker.port, declaring("camera"));
  const served = await requestAs(broker.port, call.host, "/");
  assert.equal(served.status, 200);
  assert.ok(!sandboxTokens(served).includes("allow-same-origin"));

  const refused = await runCli(api, ["--pod-storage", "some"]);
  assert.equal(refused.code, 2);
  assert.equal(refused.stderr.trim().split("\n").length, 1, refused.stderr);
  assert.match(refused.stderr, /--pod-storage/);
});

test("permissions: a large pod streamed from SQLite is granted from its head alone", async (api) => {
  await using dir = await tempDir();
  const registry = new api.SqliteRegistry({ dataDir: dir.path });
  try {
    await using t = await startServer(api, {
      registry,
      podDomain: "pods.test",
    });
    const port = t.server.port;
    // 3 MiB of body after the head: the pod is streamed, not held whole.
    const html = declaring("camera").replace(
      "<p>call</p>",
      `<p>${"call ".repeat(600_000)}</p>`,
    );
    const pod = await publish(api, t.url, port, html);
    for (const method of ["GET", "HEAD"]) {
      const answer = await requestAs(port, pod.host, "/", method);
      assert.equal(answer.status, 200);
      assert.deepEqual(grantedBy(answer), ["camera"], method);
      if (method === "GET") assert.ok(answer.body.length > 3_000_000);
    }
    assert.deepEqual(await metaPermissions(t.url, pod.id), ["camera"]);
    await t.server.close();
  } finally {
    registry.close();
  }
});
