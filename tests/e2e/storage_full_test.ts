// A data directory that fills up or turns read-only: uploads get 500
// storage_failed, what was stored stays byte-exact, no half-stored pod is
// left, and uploads succeed again once space (or writing) returns. The data
// directory is a small tmpfs mounted by the test (root only): outside CI the
// test is skipped loudly when it cannot mount, in CI it fails.
import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { SqliteRegistry } from "../../src/registries/sqlite.ts";
import { signedPod, startServer, upload } from "../support/helpers.ts";

const TMPFS_BYTES = 4 * 1024 * 1024;
const FILLER_BYTES = 2_500_000;
const POD_BYTES = 150 * 1024;

async function run(program: string, args: string[]): Promise<string | null> {
  try {
    const { code, stderr } = await new Deno.Command(program, {
      args,
      stdout: "null",
      stderr: "piped",
    }).output();
    return code === 0 ? null : new TextDecoder().decode(stderr).trim();
  } catch (error) {
    return String(error);
  }
}

/** Mounts a tmpfs of `bytes` at a fresh directory, or says why it cannot. */
async function mountTmpfs(
  bytes: number,
): Promise<{ dir: string } | { skip: string }> {
  const dir = await Deno.makeTempDir({ prefix: "pod_full_" });
  const failed = Deno.uid() !== 0
    ? "not root"
    : await run("mount", ["-t", "tmpfs", "-o", `size=${bytes}`, "tmpfs", dir]);
  if (failed !== null) {
    await Deno.remove(dir);
    return { skip: `cannot mount a tmpfs: ${failed}` };
  }
  return { dir };
}

function skipOrFail(reason: string): void {
  if (Deno.env.get("CI")) throw new Error(`storage_full_test: ${reason}`);
  console.error(
    `\n!!! SKIPPED storage_full_test: ${reason} (run as root; CI fails here)\n`,
  );
}

/** A signed pod of about POD_BYTES, unique by `n`. */
function bigPod(n: number): Promise<Uint8Array<ArrayBuffer>> {
  return signedPod(
    `<!doctype html><html><head><title>${n}</title></head><body><!--${
      String(n).repeat(POD_BYTES)
        .slice(0, POD_BYTES)
    }--></body></html>\n`,
  );
}

/** The stored blobs and records agree one to one; no temp file is left. */
async function assertNothingHalfStored(
  dataDir: string,
  registry: SqliteRegistry,
) {
  const names = readdirSync(join(dataDir, "blobs"));
  assert.deepEqual(names.filter((name) => name.startsWith(".tmp-")), []);
  const ids: string[] = [];
  for await (const record of registry.listPods()) ids.push(record.id);
  assert.deepEqual(names.sort(), ids.sort());
}

async function assertServed(
  url: string,
  stored: Map<string, Uint8Array>,
): Promise<void> {
  for (const [id, pod] of stored) {
    const response = await fetch(`${url}/${id}`);
    assert.equal(response.status, 200, id);
    assert.deepEqual(new Uint8Array(await response.arrayBuffer()), pod);
  }
}

Deno.test("SqliteRegistry on a full data directory: storage_failed, nothing lost, and uploads resume once space returns", async () => {
  const mounted = await mountTmpfs(TMPFS_BYTES);
  if ("skip" in mounted) return skipOrFail(mounted.skip);
  const dataDir = mounted.dir;
  try {
    const registry = new SqliteRegistry({ dataDir });
    try {
      await using server = await startServer({ registry });
      const filler = join(dataDir, "filler");
      await Deno.writeFile(filler, new Uint8Array(FILLER_BYTES));
      const stored = new Map<string, Uint8Array>();
      let failed = 0;
      for (let n = 0; n < 40 && failed < 3; n++) {
        const pod = await bigPod(n);
        const response = await upload(server.url, pod);
        const body = await response.json();
        if (response.status === 201) {
          stored.set(body.id, pod);
        } else {
          assert.equal(response.status, 500);
          assert.equal(body.code, "storage_failed");
          failed++;
        }
      }
      assert.equal(failed, 3, "the data directory never filled up");
      assert.ok(stored.size > 0, "nothing was stored before it filled up");
      await assertServed(server.url, stored);
      await assertNothingHalfStored(dataDir, registry);

      await Deno.remove(filler);
      for (let n = 100; n < 103; n++) {
        const pod = await bigPod(n);
        const response = await upload(server.url, pod);
        const body = await response.json();
        assert.equal(response.status, 201, JSON.stringify(body));
        stored.set(body.id, pod);
      }
      await assertServed(server.url, stored);
      await assertNothingHalfStored(dataDir, registry);
    } finally {
      registry.close();
    }
  } finally {
    const error = await run("umount", [dataDir]);
    assert.equal(error, null, `Cannot unmount ${dataDir}: ${error}`);
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("SqliteRegistry with a read-only blob directory: storage_failed, nothing lost, and uploads resume once it is writable", async () => {
  const mounted = await mountTmpfs(TMPFS_BYTES);
  if ("skip" in mounted) return skipOrFail(mounted.skip);
  const dataDir = mounted.dir;
  const blobs = join(dataDir, "blobs");
  let bound = false;
  try {
    const registry = new SqliteRegistry({ dataDir });
    try {
      await using server = await startServer({ registry });
      const stored = new Map<string, Uint8Array>();
      const pod = await bigPod(1);
      const first = await upload(server.url, pod);
      assert.equal(first.status, 201);
      stored.set((await first.json()).id, pod);
      // Linux refuses to remount a file system read-only while a file on it
      // is open for writing (the database is), so the blob directory goes
      // read-only through a bind mount of its own.
      for (
        const args of [
          ["--bind", blobs, blobs],
          ["-o", "remount,bind,ro", blobs],
        ]
      ) {
        const error = await run("mount", args);
        assert.equal(error, null, `Cannot mount ${args.join(" ")}: ${error}`);
        bound = true;
      }
      for (let n = 2; n < 5; n++) {
        const response = await upload(server.url, await bigPod(n));
        assert.equal(response.status, 500);
        assert.equal((await response.json()).code, "storage_failed");
      }
      await assertServed(server.url, stored);
      await assertNothingHalfStored(dataDir, registry);

      assert.equal(await run("umount", [blobs]), null);
      bound = false;
      const again = await bigPod(5);
      const response = await upload(server.url, again);
      assert.equal(response.status, 201);
      stored.set((await response.json()).id, again);
      await assertServed(server.url, stored);
      await assertNothingHalfStored(dataDir, registry);
    } finally {
      registry.close();
    }
  } finally {
    if (bound) await run("umount", [blobs]);
    const error = await run("umount", [dataDir]);
    assert.equal(error, null, `Cannot unmount ${dataDir}: ${error}`);
    await Deno.remove(dataDir, { recursive: true });
  }
});
