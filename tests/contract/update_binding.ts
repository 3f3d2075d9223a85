// Updates bound to their pod: `PUT /:id` needs the owner's signature of
// the update statement (this id, the version replaced, the new content),
// so nobody without the key can put one of an author's pods onto another;
// a statement naming a version no longer stored is 409; a createdAt from
// the far future is refused. And the CLI never loses the author's key:
// a signed file is published as it is, another key needs --new-owner,
// every signing writes createdAt, and `publish --update` needs the key.
// Runs on Deno and on the npm package under Node 22.
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { MemoryRegistry, Registry } from "../../src/core.ts";
import {
  assertProblem,
  newSeed,
  putUpdate,
  signedPod,
  updateHeaders,
  upload,
} from "./_pods.ts";
import { runCli, startServer, tempDir, type TestServer } from "./_servers.ts";
import { type ContractApi, test } from "./_suite.ts";
import { parseRawResponse, RawConnection } from "./_wire.ts";

/** `pod-broker publish FILE --broker URL` with `flags`. */
function publish(
  api: ContractApi,
  file: string,
  broker: string,
  ...flags: string[]
): ReturnType<typeof runCli> {
  return runCli(api, ["publish", file, "--broker", broker, ...flags]);
}

/** A dated pod of `seed` with `text` in its body. */
function dated(
  api: ContractApi,
  seed: Uint8Array,
  text: string,
  createdAt: string,
): Promise<Uint8Array<ArrayBuffer>> {
  return signedPod(
    api,
    `<!doctype html><title>t</title><p>${text}</p>`,
    { createdAt },
    seed,
  );
}

/** Uploads `pod`; its id. */
async function published(url: string, pod: Uint8Array<ArrayBuffer>) {
  const created = await upload(url, pod);
  assert.equal(created.status, 201, await created.clone().text());
  return (await created.json()).id as string;
}

/** PUTs `pod` to /ID with exactly `headers` besides the content type. */
function rawPut(
  url: string,
  id: string,
  pod: Uint8Array<ArrayBuffer>,
  headers: Record<string, string> = {},
): Promise<Response> {
  return fetch(`${url}/${id}`, {
    method: "PUT",
    headers: { "Content-Type": "text/html", ...headers },
    body: pod,
  });
}

/** PUTs `pod` to /ID and asserts the problem it is refused with. */
async function putRefused(
  url: string,
  id: string,
  pod: Uint8Array<ArrayBuffer>,
  headers: Record<string, string>,
  status: number,
  code: string,
): Promise<void> {
  await assertProblem(await rawPut(url, id, pod, headers), status, code);
}

/** A broker on a memory registry, or an SQLite one in `dir`. */
async function brokerOn(
  api: ContractApi,
  kind: "memory" | "sqlite",
  dir: string,
): Promise<TestServer> {
  const registry: Registry = kind === "memory"
    ? new api.MemoryRegistry()
    : new api.SqliteRegistry({ dataDir: dir });
  return await startServer(api, { registry });
}

async function served(url: string, id: string): Promise<string> {
  const response = await fetch(`${url}/${id}`);
  assert.equal(response.status, 200);
  return await response.text();
}

for (const kind of ["memory", "sqlite"] as const) {
  test(`update bound to its pod (${kind}): nobody without the key puts one of an author's pods onto another; A keeps serving A`, async (api) => {
    await using dir = await tempDir();
    await using broker = await brokerOn(api, kind, dir.path);
    const owner = await newSeed(api);
    const a = await dated(api, owner, "pod A", "2026-01-01T00:00:00Z");
    const b = await dated(api, owner, "pod B", "2026-01-02T00:00:00Z");
    const idA = await published(broker.url, a);
    const idB = await published(broker.url, b);
    // The review's attack: B's public bytes PUT onto A, no key needed.
    await putRefused(broker.url, idA, b, {}, 403, "update_unauthorized");
    for (
      const signature of ["", "x", "A".repeat(86), "A".repeat(85) + "B"]
    ) {
      await putRefused(
        broker.url,
        idA,
        b,
        {
          "Pod-Update-Signature": signature,
        },
        403,
        "update_unauthorized",
      );
    }
    // A statement signed by anyone else, for exactly this update.
    await assertProblem(
      await putUpdate(api, broker.url, idA, b, await newSeed(api)),
      403,
      "update_unauthorized",
    );
    // The owner's own statement for B (another id) does not move onto A.
    const forB = await updateHeaders(api, broker.url, idB, b, owner);
    await putRefused(broker.url, idA, b, forB, 403, "update_unauthorized");
    // A statement for other content does not cover these bytes.
    const other = await dated(api, owner, "other", "2026-01-03T00:00:00Z");
    const forOther = await updateHeaders(api, broker.url, idA, other, owner);
    await putRefused(broker.url, idA, b, forOther, 403, "update_unauthorized");
    // A malformed version name is refused like a malformed signature.
    await putRefused(
      broker.url,
      idA,
      other,
      {
        ...forOther,
        "Pod-Update-Replaces": "not-a-digest",
      },
      403,
      "update_unauthorized",
    );
    assert.match(await served(broker.url, idA), /pod A/);
    const meta = await (await fetch(`${broker.url}/${idA}/meta`)).json();
    assert.equal(meta.version, 1);
    // The owner's signed update goes through.
    const updated = await rawPut(broker.url, idA, other, forOther);
    assert.equal(updated.status, 200, await updated.clone().text());
    assert.equal((await updated.json()).version, 2);
    assert.match(await served(broker.url, idA), /other/);
  });

  test(`update bound to its pod (${kind}): a statement naming a version no longer stored is 409 stale_update, and a replayed update changes nothing`, async (api) => {
    await using dir = await tempDir();
    await using broker = await brokerOn(api, kind, dir.path);
    const owner = await newSeed(api);
    const id = await published(
      broker.url,
      await dated(api, owner, "v1", "2026-01-01T00:00:00Z"),
    );
    // Two updates signed for v1 (two devices, say); the first one lands.
    const v2 = await dated(api, owner, "v2", "2026-01-02T00:00:00Z");
    const v3 = await dated(api, owner, "v3", "2026-01-03T00:00:00Z");
    const forV2 = await updateHeaders(api, broker.url, id, v2, owner);
    const forV3 = await updateHeaders(api, broker.url, id, v3, owner);
    assert.equal((await rawPut(broker.url, id, v2, forV2)).status, 200);
    await putRefused(broker.url, id, v3, forV3, 409, "stale_update");
    // Replaying the first update, headers and all, stores nothing.
    await putRefused(broker.url, id, v2, forV2, 409, "stale_update");
    // Without the version named, the signature is checked for the stored
    // one, and does not verify.
    await putRefused(
      broker.url,
      id,
      v3,
      {
        "Pod-Update-Signature": forV3["Pod-Update-Signature"]!,
      },
      403,
      "update_unauthorized",
    );
    const meta = await (await fetch(`${broker.url}/${id}/meta`)).json();
    assert.equal(meta.version, 2);
    assert.match(await served(broker.url, id), /v2/);

    // An update that lands while another's body is still arriving wins;
    // the slow one, named for the version it read, is 409.
    const v4 = await dated(api, owner, "v4", "2026-01-04T00:00:00Z");
    const v5 = await dated(api, owner, "v5", "2026-01-05T00:00:00Z");
    const slow = await RawConnection.open(broker.server.port);
    try {
      const headers = await updateHeaders(api, broker.url, id, v4, owner);
      await slow.write(
        `PUT /${id} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/html\r\n` +
          `Pod-Update-Signature: ${headers["Pod-Update-Signature"]}\r\n` +
          `Pod-Update-Replaces: ${headers["Pod-Update-Replaces"]}\r\n` +
          `Content-Length: ${v4.length}\r\nConnection: close\r\n\r\n`,
      );
      await slow.write(v4.subarray(0, 10));
      // The slow request is in (its record read) before v5 lands.
      await new Promise((resolve) => setTimeout(resolve, 200));
      const fast = await putUpdate(api, broker.url, id, v5, owner);
      assert.equal(fast.status, 200, await fast.clone().text());
      await slow.write(v4.subarray(10));
      const text = await slow.readUntil((t) => parseRawResponse(t).complete);
      const answer = parseRawResponse(text);
      assert.equal(answer.status, 409, text.slice(0, 400));
      assert.equal(JSON.parse(answer.body).code, "stale_update");
    } finally {
      await slow.close();
    }
    assert.match(await served(broker.url, id), /v5/);
  });
}

test("update bound to its pod: a createdAt more than 24 hours ahead is refused on POST and PUT with 422 created_at_future, before anything is stored", async (api) => {
  await using broker = await startServer(api);
  const registry = broker.registry as MemoryRegistry;
  const owner = await newSeed(api);
  const hour = 60 * 60 * 1000;
  const at = (ms: number) => new Date(Date.now() + ms).toISOString();
  await assertProblem(
    await upload(broker.url, await dated(api, owner, "far", at(25 * hour))),
    422,
    "created_at_future",
  );
  assert.equal(registry.size, 0);
  // A clock a few hours fast is no reason to refuse.
  const id = await published(
    broker.url,
    await dated(api, owner, "near", at(2 * hour)),
  );
  const far = await dated(api, owner, "far", at(25 * hour));
  await assertProblem(
    await putUpdate(api, broker.url, id, far, owner),
    422,
    "created_at_future",
  );
  const meta = await (await fetch(`${broker.url}/${id}/meta`)).json();
  assert.equal(meta.version, 1);
  assert.match(await served(broker.url, id), /near/);
  assert.equal(registry.size, 1);
});

/** A folder with a key and a page, and the CLI run in it. */
async function authorFolder(api: ContractApi) {
  const dir = await tempDir();
  const at = (name: string) => join(dir.path, name);
  const keygen = await runCli(api, ["keygen", "--out", at("author.pem")]);
  assert.equal(keygen.code, 0, keygen.stderr);
  const other = await runCli(api, ["keygen", "--out", at("other.pem")]);
  assert.equal(other.code, 0, other.stderr);
  // keygen prints the public key alone on standard output.
  const ownerKey = keygen.stdout.trim();
  const otherKey = other.stdout.trim();
  return { dir, at, ownerKey, otherKey };
}

/** Asserts exit 2 with one line on stderr matching `pattern`. */
function assertRefused(
  run: { code: number; stdout: string; stderr: string },
  pattern: RegExp,
): void {
  assert.equal(run.code, 2, run.stderr);
  assert.equal(run.stderr.split("\n").length, 2, run.stderr);
  assert.match(run.stderr, pattern);
  assert.equal(run.stdout, "");
}

test("keys are never lost: build --key, publish without --key, edit, build, publish --update --key: the pod keeps its owner and is updated", async (api) => {
  await using broker = await startServer(api);
  const registry = broker.registry as MemoryRegistry;
  const { dir, at, ownerKey } = await authorFolder(api);
  await using _ = dir;
  await writeFile(at("index.html"), "<!doctype html><title>t</title><p>one");
  const build = () =>
    runCli(api, [
      "build",
      at("index.html"),
      "--key",
      at("author.pem"),
      "--name",
      "Mine",
      "--out",
      at("pod.html"),
    ]);
  assert.equal((await build()).code, 0);
  const built = new Uint8Array(await readFile(at("pod.html")));
  const first = await publish(api, at("pod.html"), broker.url);
  assert.equal(first.code, 0, first.stderr);
  assert.doesNotMatch(first.stderr, /fresh key/);
  const id = first.stdout.trim().split("/").pop()!;
  // Sent as it is: the very bytes built, the author's key.
  const stored = new Uint8Array(
    await (await fetch(`${broker.url}/${id}`)).arrayBuffer(),
  );
  assert.deepEqual(stored, built);
  const meta = await (await fetch(`${broker.url}/${id}/meta`)).json();
  assert.equal(meta.ownerPubkey, ownerKey);
  assert.notEqual(meta.createdAt, null, "build --key writes createdAt");

  // Without the key, an update is refused before anything is sent.
  await writeFile(at("index.html"), "<!doctype html><title>t</title><p>two");
  assert.equal((await build()).code, 0);
  assertRefused(
    await publish(api, at("pod.html"), broker.url, "--update", id),
    /^pod-broker: Cannot update pod '\w+' without --key FILE: /,
  );
  assert.equal(
    (await (await fetch(`${broker.url}/${id}/meta`)).json()).version,
    1,
  );
  const update = await publish(
    api,
    at("pod.html"),
    broker.url,
    "--key",
    at("author.pem"),
    "--update",
    id,
  );
  assert.equal(update.code, 0, update.stderr);
  assert.equal(update.stdout, first.stdout);
  assert.match(await served(broker.url, id), /two/);
  const after = await (await fetch(`${broker.url}/${id}/meta`)).json();
  assert.equal(after.version, 2);
  assert.equal(after.name, "Mine");
  assert.ok(after.createdAt > meta.createdAt, after.createdAt);
  assert.equal(registry.size, 1);
});

test("keys are never lost: re-signing a file signed by another key needs --new-owner (sign and publish), refused on one line with exit 2", async (api) => {
  await using broker = await startServer(api);
  const registry = broker.registry as MemoryRegistry;
  const { dir, at, ownerKey, otherKey } = await authorFolder(api);
  await using _ = dir;
  await writeFile(at("page.html"), "<!doctype html><title>t</title><p>hi");
  const signed = await runCli(api, [
    "sign",
    "--key",
    at("author.pem"),
    "--out",
    at("pod.html"),
    at("page.html"),
  ]);
  assert.equal(signed.code, 0, signed.stderr);
  const why = /signed by another key .*--new-owner/;
  assertRefused(
    await runCli(api, [
      "sign",
      "--key",
      at("other.pem"),
      "--out",
      at("taken.html"),
      at("pod.html"),
    ]),
    why,
  );
  await assert.rejects(readFile(at("taken.html")));
  assertRefused(
    await publish(api, at("pod.html"), broker.url, "--key", at("other.pem")),
    why,
  );
  assert.equal(registry.size, 0, "nothing uploaded");
  // Re-signing with its own key is fine, and so is --new-owner.
  const same = await publish(
    api,
    at("pod.html"),
    broker.url,
    "--key",
    at("author.pem"),
  );
  assert.equal(same.code, 0, same.stderr);
  const sameMeta = await (await fetch(`${same.stdout.trim()}/meta`)).json();
  assert.equal(sameMeta.ownerPubkey, ownerKey);
  const moved = await publish(
    api,
    at("pod.html"),
    broker.url,
    "--key",
    at("other.pem"),
    "--new-owner",
  );
  assert.equal(moved.code, 0, moved.stderr);
  const movedMeta = await (await fetch(`${moved.stdout.trim()}/meta`)).json();
  assert.equal(movedMeta.ownerPubkey, otherKey);
  // A signed file that no longer verifies is not sent without a key.
  const text = await readFile(at("pod.html"), "utf8");
  await writeFile(at("edited.html"), text.replace("<p>hi", "<p>ho"));
  assertRefused(
    await publish(api, at("edited.html"), broker.url),
    /content_mismatch.*sign it again with --key FILE/,
  );
  assert.equal(registry.size, 2);
});

test("keys are never lost: every signing writes createdAt (sign, build --key, publish with a key or a fresh one)", async (api) => {
  await using broker = await startServer(api);
  const { dir, at } = await authorFolder(api);
  await using _ = dir;
  await writeFile(at("page.html"), "<!doctype html><title>t</title><p>hi");
  const before = Date.now() - 1000;
  const createdAt = async (file: string) => {
    const verified = await runCli(api, ["verify", file]);
    assert.equal(verified.code, 0, verified.stderr);
    return JSON.parse(verified.stdout).createdAt as string | null;
  };
  const signed = await runCli(api, [
    "sign",
    "--key",
    at("author.pem"),
    "--out",
    at("signed.html"),
    at("page.html"),
  ]);
  assert.equal(signed.code, 0, signed.stderr);
  const built = await runCli(api, [
    "build",
    at("page.html"),
    "--key",
    at("author.pem"),
    "--out",
    at("built.html"),
  ]);
  assert.equal(built.code, 0, built.stderr);
  for (const file of ["signed.html", "built.html"]) {
    const time = await createdAt(at(file));
    assert.ok(time !== null && Date.parse(time) >= before, `${file}: ${time}`);
  }
  for (const key of [["--key", at("author.pem")], []]) {
    const run = await publish(api, at("page.html"), broker.url, ...key);
    assert.equal(run.code, 0, run.stderr);
    const meta = await (await fetch(`${run.stdout.trim()}/meta`)).json();
    assert.ok(
      meta.createdAt !== null && Date.parse(meta.createdAt) >= before,
      `publish ${key.join(" ")}: ${meta.createdAt}`,
    );
  }
  // What publish --help says is what it does.
  const help = await runCli(api, ["publish", "--help"]);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /signed already is sent as it is/);
  assert.match(help.stdout, /--new-owner/);
  assert.match(help.stdout, /--key is\s+needed/);
});
