// The strict script policy (`--script-policy hashes`) under abuse (issue 19,
// items 4 and 10): a pod with thousands of inline scripts cannot blow up
// every response's headers, a large pod's hashing cannot hold another
// pod's first view, and a custom content policy the hashes cannot hold in
// is refused at start-up. Pods are put straight into the registry where
// signing them would only make the case slow.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import type { PodRecord, Registry } from "../../src/core.ts";
import { signedPod, upload } from "./_pods.ts";
import {
  ANY_LOCAL_PORT,
  type CliRun,
  runCommand,
  startServer,
} from "./_servers.ts";
import { type ContractApi, test } from "./_suite.ts";

/** `count` distinct inline scripts. */
function scripts(count: number): string {
  let html = "";
  for (let i = 0; i < count; i++) html += `<script>s(${i})</script>`;
  return html;
}

/** Stores `html` as pod `id` without signing it. */
async function putPod(
  registry: Registry,
  id: string,
  html: string,
): Promise<void> {
  const blob = new TextEncoder().encode(html);
  const digest = createHash("sha256").update(blob).digest("base64url");
  const record: PodRecord = {
    id,
    ownerPubkey: "A".repeat(43),
    blobSize: blob.length,
    sha256: digest,
    contentSha256: digest,
    name: null,
    createdAt: null,
    uploadedAt: new Date().toISOString(),
    hits: 0,
  };
  await registry.putPod(record, blob);
}

/** Bytes of a response's header list, as names and values. */
function headerBytes(response: Response): number {
  let bytes = 0;
  for (const [name, value] of response.headers) {
    bytes += name.length + value.length + 4;
  }
  return bytes;
}

function scriptSrc(response: Response): string {
  const policies = response.headers.get("Content-Security-Policy") ?? "";
  return policies.match(/script-src[^;,]*/)?.[0] ?? "";
}

test("security 4: under scriptPolicy 'hashes' a pod with more than 16 KiB of script hashes gets script-src 'none', small headers and one log line", async (api) => {
  const lines: string[] = [];
  await using t = await startServer(api, {
    podHeaderOptions: { scriptPolicy: "hashes" },
    logger: (level, message) => lines.push(`${level} ${message}`),
  });
  // 2,000 scripts: 110 KB of hash sources before the fix, on every response.
  const many = await upload(
    t.url,
    await signedPod(api, `<!doctype html><title>many</title>${scripts(2_000)}`),
  );
  assert.equal(many.status, 201);
  const { id } = await many.json();
  for (const method of ["HEAD", "HEAD", "GET"]) {
    const got = await fetch(`${t.url}/${id}`, { method });
    await got.body?.cancel();
    assert.equal(got.status, 200);
    assert.equal(scriptSrc(got), "script-src 'none'");
    assert.ok(headerBytes(got) < 16 * 1024, `${headerBytes(got)} bytes`);
  }
  const warned = lines.filter((line) => line.includes("script-src 'none'"));
  assert.equal(warned.length, 1, lines.join("\n"));
  assert.match(warned[0]!, new RegExp(`^warn .*${id}`));
  // A pod with a few scripts still gets its hashes.
  const few = await upload(
    t.url,
    await signedPod(api, `<!doctype html><title>few</title>${scripts(3)}`),
  );
  const got = await fetch((await few.json()).url, { method: "HEAD" });
  assert.match(scriptSrc(got), /^script-src 'sha256-[^ ]+' 'sha256-[^ ]+'/);
  assert.equal(scriptSrc(got).split("'sha256-").length - 1, 3);
});

test(
  "security 4: under scriptPolicy 'hashes' a large pod's hashing never holds another pod's first view",
  async (api) => {
    const registry = new api.MemoryRegistry();
    let largeLoading!: () => void;
    const loading = new Promise<void>((resolve) => (largeLoading = resolve));
    // The large pod's blob read says when its hashing starts.
    const watched: Registry = {
      putPod: (record, blob) => registry.putPod(record, blob),
      getRecord: (id) => registry.getRecord(id),
      bumpHits: (id) => registry.bumpHits(id),
      getBlob: (id) => {
        if (id === "LargePod0000") largeLoading();
        return registry.getBlob(id);
      },
    };
    // About 16 MB of markup and one script: seconds of parsing.
    await putPod(
      registry,
      "LargePod0000",
      `<!doctype html>${"<p>filler</p>".repeat(1_200_000)}<script>x()</script>`,
    );
    await putPod(registry, "SmallPod0000", "<script>small()</script>");
    await using t = await startServer(api, {
      registry: watched,
      podHeaderOptions: { scriptPolicy: "hashes" },
    });
    const order: string[] = [];
    const large = fetch(`${t.url}/LargePod0000`, { method: "HEAD" }).then(
      (response) => (order.push("large"), response),
    );
    await loading;
    const small = await fetch(`${t.url}/SmallPod0000`);
    order.push("small");
    assert.equal(small.status, 200);
    assert.match(await small.text(), /small\(\)/);
    assert.match(scriptSrc(small), /^script-src 'sha256-/);
    assert.equal((await large).status, 200);
    assert.match(scriptSrc(await large), /^script-src 'sha256-/);
    assert.deepEqual(order, ["small", "large"]);
  },
  { timeoutMs: 120_000 },
);

test("serving: the broker keeps its ready pod responses across Host names (no cache thrown away on a switch)", async (api) => {
  const registry = new api.MemoryRegistry();
  let blobReads = 0;
  const counted: Registry = {
    putPod: (record, blob) => registry.putPod(record, blob),
    getRecord: (id) => registry.getRecord(id),
    getRecordNow: (id) => registry.getRecordNow(id),
    bumpHits: (id) => registry.bumpHits(id),
    getBlob: (id) => (blobReads++, registry.getBlob(id)),
  };
  await putPod(registry, "HostPod00000", "<p>two hosts</p>");
  await using t = await startServer(api, {
    registry: counted,
    trustProxy: true,
  });
  for (let round = 0; round < 3; round++) {
    for (const host of ["a.example", "b.example"]) {
      const got = await fetch(`${t.url}/HostPod00000`, {
        headers: { "X-Forwarded-Host": host },
      });
      assert.equal(await got.text(), "<p>two hosts</p>");
      assert.match(
        got.headers.get("Content-Security-Policy") ?? "",
        new RegExp(
          `connect-src 'self' http://${host.replace(".", "\\.")} ws://${
            host.replace(".", "\\.")
          } data: blob:;`,
        ),
      );
    }
  }
  // One read per Host name; every later view came from the cache.
  assert.equal(blobReads, 2);
});

/** Custom content policies the hashes cannot hold in, and why. */
const REFUSED_POLICIES: readonly [string, RegExp][] = [
  ["default-src 'self' 'unsafe-inline'", /no script-src/],
  [
    "default-src 'none'; script-src 'self'; script-src-elem 'self' 'unsafe-inline'",
    /script-src-elem 'unsafe-inline'/,
  ],
];

test("security 10: createSignalServer refuses scriptPolicy 'hashes' with a custom csp the hashes cannot hold in", async (api) => {
  for (const [csp, reason] of REFUSED_POLICIES) {
    await assert.rejects(
      startServer(api, { podHeaderOptions: { scriptPolicy: "hashes", csp } }),
      (error: Error) => {
        assert.ok(error instanceof api.OptionError, String(error));
        assert.equal(error.key, "podHeaderOptions.csp");
        assert.match(error.message, reason);
        return true;
      },
    );
  }
  // A policy with a script-src is taken, and gets the hashes.
  await using t = await startServer(api, {
    podHeaderOptions: {
      scriptPolicy: "hashes",
      csp: "default-src 'none'; script-src 'self'",
    },
  });
  const created = await upload(
    t.url,
    await signedPod(api, `<!doctype html>${scripts(1)}`),
  );
  const got = await fetch((await created.json()).url, { method: "HEAD" });
  assert.match(scriptSrc(got), /^script-src 'self' 'sha256-[^']+'$/);
});

/**
 * Runs `pod-broker ARGS` until it exits, or until it says it is listening
 * (it is then stopped, and the run has code -1): a broker that should have
 * refused to start must not hang the case.
 */
export async function runUntilListening(
  api: ContractApi,
  args: string[],
): Promise<CliRun> {
  const [command, ...prefix] = api.cli;
  const run = await runCommand(command!, [...prefix, ...args], {
    stopWhen: /listening on/,
    timeoutMs: 30_000,
  });
  return {
    code: run.stopped ? -1 : run.code,
    stdout: run.stdout,
    stderr: run.stderr,
  };
}

test("security 10: pod-broker --script-policy hashes refuses a --csp the hashes cannot hold in (exit 2, one line)", async (api) => {
  for (const [csp, reason] of REFUSED_POLICIES) {
    const run = await runUntilListening(api, [
      "--registry",
      "memory",
      ...ANY_LOCAL_PORT,
      "--script-policy",
      "hashes",
      "--csp",
      csp,
    ]);
    assert.equal(run.code, 2, run.stdout + run.stderr);
    assert.equal(run.stderr.trim().split("\n").length, 1, run.stderr);
    assert.match(run.stderr, /--csp/);
    assert.match(run.stderr, reason);
  }
});

test("one pod, every broker: a signed inline event handler gets its hash under scriptPolicy 'hashes', and /meta says which policy the pod is served under", async (api) => {
  const html = '<script>go()</script><button onclick="send()">Send</button>';
  const hash = (text: string) =>
    `'sha256-${createHash("sha256").update(text).digest("base64")}'`;
  for (const scriptPolicy of ["unsafe-inline", "hashes"] as const) {
    await using t = await startServer(api, {
      podHeaderOptions: { scriptPolicy },
    });
    const created = await (await upload(t.url, await signedPod(api, html)))
      .json();
    const meta = await (await fetch(`${t.url}/${created.id}/meta`)).json();
    assert.equal(meta.scriptPolicy, scriptPolicy);
    const served = await fetch(created.url);
    await served.body?.cancel();
    const src = scriptSrc(served);
    if (scriptPolicy === "hashes") {
      assert.ok(
        src.includes(`${hash("go()")} 'unsafe-hashes' ${hash("send()")}`),
        src,
      );
    } else {
      assert.ok(src.includes("'unsafe-inline'"), src);
      assert.ok(!src.includes("'unsafe-hashes'"), src);
    }
  }
});
