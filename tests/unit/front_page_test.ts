// The front page's policy allows its stylesheet by hash: the hash written in
// src/http/routes/front.ts is that of the stylesheet the page carries.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import {
  createFrontPage,
  FRONT_PAGE_CSP,
} from "../../src/http/routes/front.ts";
import type { RouteRequest } from "../../src/http/router.ts";

Deno.test("the front page's style-src hash is the SHA-256 of its one stylesheet", async () => {
  const page = createFrontPage({ maxBlobBytes: 1024 });
  const input = {
    request: new Request("http://127.0.0.1/", {
      headers: { Accept: "text/html" },
    }),
  } as RouteRequest;
  const html = await page(input).text();
  const styles = [...html.matchAll(/<style>([^<]*)<\/style>/g)];
  assert.equal(styles.length, 1);
  const hash = createHash("sha256").update(styles[0]![1]!).digest("base64");
  assert.match(
    FRONT_PAGE_CSP,
    new RegExp(`style-src 'sha256-${hash.replace(/[+/]/g, "\\$&")}'`),
  );
});
