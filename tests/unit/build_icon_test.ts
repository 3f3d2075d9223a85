// `pod-broker build` adds an empty icon link to a page that has none, so a
// browser asks the pod's host for no /favicon.ico (which the pod policy
// refuses: Firefox logs it on every load), and keeps the author's own.
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { buildPod } from "../../src/bundler/mod.ts";
import { EMPTY_ICON, iconEdit } from "../../src/bundler/icon.ts";
import { applyEdits } from "../../src/bundler/inline.ts";
import { tempDir } from "../contract/_servers.ts";

/** The page with the icon edit applied (unchanged without one). */
function withIcon(html: string): string {
  const edit = iconEdit(html);
  return edit ? applyEdits(html, [edit]) : html;
}

Deno.test("build: a page without an icon link gets an empty data: icon in its head", async () => {
  await using dir = await tempDir("pod-build-icon-");
  const page = join(dir.path, "index.html");
  await writeFile(join(dir.path, "style.css"), "body { color: red }\n");
  await writeFile(
    page,
    '<!doctype html>\n<html><head><link rel="stylesheet" href="style.css"><title>x</title></head><body>hi</body></html>\n',
  );
  const text = new TextDecoder().decode((await buildPod(page)).html);
  assert.equal(text.split(EMPTY_ICON).length, 2, "one icon link");
  assert.match(
    text,
    /<title>x<\/title><link rel="icon" href="data:,"><\/head>/,
  );
  assert.match(text, /<style>[^<]*color/);
});

Deno.test("build: a page with its own icon keeps it and gets no other", async () => {
  await using dir = await tempDir("pod-build-icon-");
  const page = join(dir.path, "index.html");
  await writeFile(
    join(dir.path, "logo.svg"),
    "<svg xmlns='http://www.w3.org/2000/svg'/>",
  );
  await writeFile(
    page,
    '<!doctype html><title>x</title><link rel="icon" href="logo.svg">',
  );
  const text = new TextDecoder().decode((await buildPod(page)).html);
  assert.ok(!text.includes(EMPTY_ICON));
  assert.match(text, /<link rel="icon" href="data:image\/svg\+xml;base64,/);
});

Deno.test("iconEdit: where the link goes, and which links count as an icon", () => {
  const icon = EMPTY_ICON;
  assert.equal(
    withIcon("<head><title>x</title></head><body>"),
    `<head><title>x</title>${icon}</head><body>`,
  );
  // No </head>: after <head>; none at all: after <html>, after the doctype
  // (never before it, which would switch the page to quirks mode), or first.
  assert.equal(
    withIcon("<head><title>x</title>"),
    `<head>${icon}<title>x</title>`,
  );
  assert.equal(
    withIcon("<html><title>x</title>"),
    `<html>${icon}<title>x</title>`,
  );
  assert.equal(
    withIcon("<!doctype html>\n<title>x</title>"),
    `<!doctype html>${icon}\n<title>x</title>`,
  );
  assert.equal(withIcon("<title>x</title>"), `${icon}<title>x</title>`);
  // Any link whose rel has the token "icon", wherever it is.
  for (
    const link of [
      '<link rel="icon" href="data:,">',
      '<link rel="shortcut icon" href="a.ico">',
      '<link rel="ICON" href="a.png">',
    ]
  ) {
    assert.equal(iconEdit(`<head></head><body>${link}`), null, link);
  }
  // Not an icon: the browser would still ask for /favicon.ico.
  for (
    const link of [
      '<link rel="apple-touch-icon" href="a.png">',
      '<link rel="stylesheet" href="icon.css">',
      "<!-- <link rel=icon href=a.png> -->",
      '<template><link rel="icon" href="a.png"></template>',
    ]
  ) {
    assert.notEqual(iconEdit(`<head>${link}</head>`), null, link);
  }
});
