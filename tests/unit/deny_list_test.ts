// The deny list: its file format, its errors, reloading, and the answers.
import assert from "node:assert/strict";
import { join } from "node:path";
import { encodeBase64Url } from "../../src/_util/encoding.ts";
import {
  DenyList,
  DenyListError,
  parseDenyList,
} from "../../src/operator/deny_list.ts";

function digest(): string {
  return encodeBase64Url(crypto.getRandomValues(new Uint8Array(32)));
}

async function tempFile(text: string): Promise<string> {
  const dir = await Deno.makeTempDir();
  const path = join(dir, "deny.txt");
  await Deno.writeTextFile(path, text);
  return path;
}

Deno.test("parseDenyList() reads keys and digests, comments and blank lines", () => {
  const [key, content] = [digest(), digest()];
  const entries = parseDenyList(
    `\uFEFF# phishing kit, 2026-11-20\r\n\nkey:${key}\n  sha256:${content}   # mirror\n#key:${digest()}\n`,
  );
  assert.deepEqual([...entries.keys], [key]);
  assert.deepEqual([...entries.contents], [content]);
  assert.equal(parseDenyList("").keys.size, 0);
});

Deno.test("parseDenyList() names the first bad line and never echoes it", () => {
  const good = `key:${digest()}`;
  const cases: [string, number, RegExp][] = [
    [`${good}\nowner:${digest()}`, 2, /expected key:<ownerPubkey> or sha256:/],
    [`${good}\n\n# c\nkey:abc`, 4, /43 characters of base64url/],
    [`sha256:${digest()}=`, 1, /43 characters/],
    [`key:${"A".repeat(42)}B`, 1, /32 bytes/], // not canonical: low bits set
    [`key:${"+".repeat(43)}`, 1, /base64url/],
    [`${digest()}`, 1, /expected key:/],
  ];
  for (const [text, line, reason] of cases) {
    assert.throws(() => parseDenyList(text, "'deny.txt'"), (error) => {
      assert.ok(error instanceof DenyListError);
      assert.equal(error.line, line);
      assert.match(
        error.message,
        new RegExp(`^Cannot read 'deny.txt': line ${line}: `),
      );
      assert.match(error.message, reason);
      assert.ok(!error.message.includes("\n"));
      return true;
    });
  }
});

Deno.test("DenyList.load() reads a file; reload() swaps in the new entries, or keeps the old on a bad file", async () => {
  const [key, content, other] = [digest(), digest(), digest()];
  const path = await tempFile(`key:${key}\n`);
  try {
    const denyList = await DenyList.load(path);
    assert.equal(denyList.path, path);
    assert.equal(
      denyList.denies({ ownerPubkey: key, contentSha256: other }),
      "owner_denied",
    );
    assert.equal(
      denyList.denies({ ownerPubkey: other, contentSha256: content }),
      null,
    );

    await Deno.writeTextFile(path, `sha256:${content}\n`);
    assert.equal(await denyList.reload(), 1);
    assert.equal(denyList.deniesKey(key), false);
    assert.equal(
      denyList.denies({ ownerPubkey: other, contentSha256: content }),
      "content_denied",
    );

    await Deno.writeTextFile(path, `sha256:${content}\nkey:oops\n`);
    await assert.rejects(denyList.reload(), /line 2/);
    assert.equal(denyList.deniesContent(content), true, "the old list stays");

    await Deno.remove(path);
    await assert.rejects(denyList.reload(), (error) => {
      assert.ok(error instanceof DenyListError);
      assert.equal(error.line, null);
      assert.match(error.message, /^Cannot read the deny list '.*': ENOENT$/);
      return true;
    });
    assert.equal(denyList.deniesContent(content), true);
  } finally {
    await Deno.remove(join(path, ".."), { recursive: true });
  }
  await assert.rejects(DenyList.load("/no/such/deny.txt"), DenyListError);
});

Deno.test("DenyList in code: the owner is checked first; bad entries are a TypeError", async () => {
  const [key, content] = [digest(), digest()];
  const denyList = new DenyList({ keys: [key], contents: [content] });
  assert.equal(denyList.size, 2);
  assert.equal(
    denyList.denies({ ownerPubkey: key, contentSha256: content }),
    "owner_denied",
  );
  assert.equal(denyList.path, null);
  await assert.rejects(denyList.reload(), TypeError);
  assert.throws(
    () => denyList.replace({ keys: ["nope"] }),
    /Cannot deny the key 'nope'/,
  );
  assert.equal(
    denyList.deniesKey(key),
    true,
    "a refused replace changes nothing",
  );
  denyList.replace({ contents: [content] });
  assert.equal(denyList.deniesKey(key), false);
  assert.equal(denyList.deniesContent(content), true);
  assert.throws(() => new DenyList({ contents: [content + "x"] }), TypeError);
});
