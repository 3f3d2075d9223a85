// A pod's permission declaration: how it is read (the first element of the
// head, bounded), how grants replace members of a policy, and the cache
// that reads each pod version once.
import assert from "node:assert/strict";
import { readDeclaration } from "../../src/serving/permission_declaration.ts";
import { PodPermissionCache } from "../../src/serving/permission_cache.ts";
import {
  DECLARATION_SCAN_BYTES,
  mentionsDeclaration,
  POD_PERMISSIONS,
  withGrants,
} from "../../src/serving/permissions.ts";
import { TABLE } from "../../src/config/table.ts";

const encode = (text: string) => new TextEncoder().encode(text);
const read = (html: string) => readDeclaration(encode(html));

Deno.test("readDeclaration: the first element of the head, its known tokens once, unknown ones listed", () => {
  assert.deepEqual(
    read(
      '<!doctype html><html lang=en><head><meta charset=utf-8><meta name=pod-permissions content="\tautoplay camera\nusb camera Fullscreen">',
    ),
    {
      found: true,
      permissions: ["camera", "autoplay"],
      unknown: ["usb", "Fullscreen"],
      tooLong: false,
    },
  );
  // Implied head, and a meta between </head> and <body> (a browser puts it
  // in the head too).
  assert.deepEqual(
    read("<meta name=pod-permissions content=microphone><p>x").permissions,
    ["microphone"],
  );
  assert.deepEqual(
    read(
      "<head></head><meta name=pod-permissions content=camera><body>",
    ).permissions,
    ["camera"],
  );
  // Without content: found, nothing declared.
  assert.deepEqual(read("<meta name=pod-permissions>"), {
    found: true,
    permissions: [],
    unknown: [],
    tooLong: false,
  });
});

Deno.test("readDeclaration: nothing is read in the body, a template, past 64 KiB or past 256 bytes", () => {
  const none = { found: false, permissions: [], unknown: [], tooLong: false };
  assert.deepEqual(
    read("<title>t</title><p>x<meta name=pod-permissions content=camera>"),
    none,
  );
  assert.deepEqual(
    read(
      "<head><template><meta name=pod-permissions content=camera></template>",
    ),
    none,
  );
  const late = `<head><style>${
    "a{}".repeat(DECLARATION_SCAN_BYTES / 3)
  }</style><meta name=pod-permissions content=camera>`;
  assert.deepEqual(read(late), none);
  const long = `<meta name=pod-permissions content="${"camera ".repeat(37)}">`;
  assert.deepEqual(read(long), {
    found: true,
    permissions: [],
    unknown: [],
    tooLong: true,
  });
  // 256 bytes is still read.
  const exact = `camera${" ".repeat(250)}`;
  assert.equal(exact.length, 256);
  assert.deepEqual(
    read(`<meta name=pod-permissions content="${exact}">`).permissions,
    ["camera"],
  );
  // Unknown tokens listed: at most 8, each cut to 64 characters.
  const many = Array.from({ length: 20 }, (_, i) => `t${i}`).join(" ");
  assert.equal(
    read(`<meta name=pod-permissions content="${many}">`).unknown.length,
    8,
  );
});

Deno.test("mentionsDeclaration: any case, within the first 64 KiB", () => {
  assert.ok(mentionsDeclaration(encode("<META NAME=POD-PERMISSIONS>")));
  assert.ok(!mentionsDeclaration(encode("<meta name=pod-permission>")));
  const late = encode(`${" ".repeat(DECLARATION_SCAN_BYTES)}pod-permissions`);
  assert.ok(!mentionsDeclaration(late));
});

Deno.test("withGrants: a granted feature's member is replaced, the rest kept; on a pod's origin every other token is denied", () => {
  assert.equal(withGrants("camera=(), usb=()", null), "camera=(), usb=()");
  const rest = "display-capture=(), clipboard-write=(), fullscreen=(), " +
    "screen-wake-lock=(), picture-in-picture=(), autoplay=()";
  assert.equal(
    withGrants("camera=(), usb=()", []),
    `camera=(), usb=(), microphone=(), ${rest}`,
  );
  assert.equal(
    withGrants("Camera=(), usb=(),  microphone=()", ["camera"]),
    `usb=(), microphone=(), ${rest}, camera=(self)`,
  );
});

Deno.test("PodPermissionCache: one read per version, shared by concurrent requests; nothing read when nothing is allowed", async () => {
  const cache = new PodPermissionCache({ allowed: ["camera", "microphone"] });
  let loads = 0;
  const head = (html: string) => () => {
    loads++;
    return new Promise<Uint8Array>((resolve) =>
      setTimeout(() => resolve(encode(html)), 5)
    );
  };
  const v1 = head('<meta name="pod-permissions" content="camera autoplay">');
  const answers = await Promise.all(
    [1, 2, 3].map(() => cache.grantsOf({ sha256: "v1" }, v1)),
  );
  assert.deepEqual(answers, [["camera"], ["camera"], ["camera"]]);
  assert.equal(loads, 1);
  assert.deepEqual(await cache.grantsOf({ sha256: "v1" }, v1), ["camera"]);
  assert.equal(loads, 1);
  // A version gone (null) is not kept.
  assert.equal(await cache.grantsOf({ sha256: "v2" }, () => null!), null);
  assert.deepEqual(
    await cache.grantsOf(
      { sha256: "v2" },
      head("<meta name=pod-permissions content=microphone>"),
    ),
    ["microphone"],
  );
  const none = new PodPermissionCache({ allowed: [] });
  assert.deepEqual(
    await none.grantsOf({ sha256: "v1" }, () => {
      throw new Error("not read");
    }),
    [],
  );
});

Deno.test("podPermissions defaults to every token, and its docs say so", () => {
  const row = TABLE.find((row) => row.key === "podPermissions")!;
  assert.deepEqual(row.default, POD_PERMISSIONS);
  assert.equal(row.defaultText, POD_PERMISSIONS.join(","));
});
