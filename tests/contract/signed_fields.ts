// Nothing the author signed is changed on the way in: a pod's name comes
// back from /meta exactly as signed, on the memory registry and on SQLite
// (node:sqlite, on Deno and on Node), also after the registry is reopened.
import assert from "node:assert/strict";
import {
  collect,
  type ContractApi,
  newSeed,
  signedPod,
  startServer,
  tempDir,
  upload,
} from "./_support.ts";
import { trickyNames } from "./_names.ts";

const { cases, test } = collect();

/** Readable in a failure message: every code unit outside ASCII escaped. */
function shown(name: string): string {
  return JSON.stringify(name).replace(
    /[^\x20-\x7e]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/** Uploads one pod per name to `url`; the ids with the names signed. */
async function uploadNamed(
  api: ContractApi,
  url: string,
  names: string[],
): Promise<[string, string][]> {
  const seed = await newSeed(api);
  const stored: [string, string][] = [];
  for (const name of names) {
    const pod = await signedPod(api, undefined, {
      name,
      createdAt: "2026-11-21T12:00:00Z",
    }, seed);
    const response = await upload(url, pod);
    assert.equal(response.status, 201, `${shown(name)}: ${response.status}`);
    stored.push([(await response.json()).id, name]);
  }
  return stored;
}

/** Asserts each pod's /meta gives back the name and createdAt signed. */
async function assertMeta(url: string, stored: [string, string][]) {
  for (const [id, name] of stored) {
    const meta = await (await fetch(`${url}/${id}/meta`)).json();
    assert.ok(meta.name === name, `${shown(meta.name)} !== ${shown(name)}`);
    assert.equal(meta.createdAt, "2026-11-21T12:00:00Z");
  }
}

test("signed fields: /meta gives back a name with NUL, control characters, U+2028, lone surrogates and non-BMP characters exactly as signed (memory and SQLite, after reopening too)", async (api) => {
  const names = trickyNames(24, 0x5eed);
  {
    await using t = await startServer(api, {
      registry: new api.MemoryRegistry(),
    });
    await assertMeta(t.url, await uploadNamed(api, t.url, names));
  }
  await using dir = await tempDir();
  let stored: [string, string][];
  {
    const registry = new api.SqliteRegistry({ dataDir: dir.path });
    await using t = await startServer(api, { registry });
    stored = await uploadNamed(api, t.url, names);
    await assertMeta(t.url, stored);
    await t.server.close();
    registry.close();
  }
  const registry = new api.SqliteRegistry({ dataDir: dir.path });
  try {
    await using t = await startServer(api, { registry });
    await assertMeta(t.url, stored);
  } finally {
    registry.close();
  }
});

/** The signed-fields cases. */
export const SIGNED_FIELD_CASES = cases;
