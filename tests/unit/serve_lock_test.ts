// serve.lock is exactly what `deno task lock:serve` cuts from deno.lock for
// the two server entry points: the container and `deno task start` fetch
// those packages and no others.
import assert from "node:assert/strict";
import {
  cutLock,
  formatLock,
  type Lock,
  serveLockText,
} from "../support/serve_lock.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

Deno.test("serve.lock is deno.lock cut to what src/mod.ts and src/mod_node.ts load (deno task lock:serve remakes it)", async () => {
  const { text } = await serveLockText(ROOT);
  assert.equal(
    await Deno.readTextFile(`${ROOT}serve.lock`),
    text,
    "serve.lock is stale: run deno task lock:serve",
  );
});

Deno.test("cutLock keeps the roots' dependency closure, optional ones too, and only the specifiers naming them", () => {
  const full: Lock = {
    version: "5",
    specifiers: { "npm:a@1": "1.0.0", "npm:z@1": "1.0.0" },
    npm: {
      "a@1.0.0": {
        integrity: "sha512-a",
        dependencies: ["b@2.0.0"],
        optionalDependencies: ["c"],
      },
      "b@1.0.0": { integrity: "sha512-b1" },
      "b@2.0.0": { integrity: "sha512-b2" },
      "c@1.0.0": { integrity: "sha512-c", os: ["linux"], cpu: ["x64"] },
      "z@1.0.0": { integrity: "sha512-z" },
    },
    workspace: { dependencies: ["npm:a@1", "npm:z@1"] },
  };
  const lock = cutLock(full, ["a@1.0.0"]);
  assert.deepEqual(Object.keys(lock.npm), ["a@1.0.0", "b@2.0.0", "c@1.0.0"]);
  assert.deepEqual(lock.specifiers, { "npm:a@1": "1.0.0" });
  // One b left: written by name, as Deno writes it.
  assert.deepEqual(lock.npm["a@1.0.0"]!.dependencies, ["b"]);
  assert.deepEqual(lock.workspace, full.workspace);
  assert.match(formatLock(lock), /"os": \["linux"\],\n\s+"cpu": \["x64"\]/);
  assert.throws(() => cutLock(full, ["missing@1.0.0"]), /no missing@1\.0\.0/);
});
