// Two browsers chat across two brokers (issue 14), run by scaleout_test.ts
// in a child process (inside a loopback-only namespace when it can): one
// PostgreSQL and one Redis, brokers A and B on them, the chat pod uploaded
// through A, one browser opens it through A and the other through B. Each
// page signals through its own broker; the Redis bus joins the session.
// Prints "journey ok" at the end; exits non-zero with the failed assertion.
import { uploadChatPod } from "./chat_pod.ts";
import { chromium, type Page } from "playwright-core";
import { createSignalServer } from "../../src/adapters/deno.ts";
import { silentLogger } from "../../src/_util/log.ts";
import { PostgresRegistry } from "../../src/registries/postgres.ts";
import { createRedisBus } from "../../src/signaling/bus/redis.ts";
import { CHROMIUM, CHROMIUM_FLAGS } from "./chat_journey_config.ts";
import { startPostgres } from "./postgres.ts";
import { startRedis } from "./redis.ts";

const WAIT = { timeout: 20_000 };

await using pg = await startPostgres();
await using redis = await startRedis();
const url = pg.url(await pg.createDatabase());
const brokers = [];
for (let i = 0; i < 2; i++) {
  const registry = await PostgresRegistry.open({ url });
  const bus = await createRedisBus({ url: redis.url });
  const server = await createSignalServer({
    registry,
    bus,
    port: 0,
    hostname: "127.0.0.1",
    logger: silentLogger,
    accessLog: "off",
  });
  brokers.push({ registry, bus, server });
}
const browser = await chromium.launch({
  executablePath: CHROMIUM,
  args: CHROMIUM_FLAGS,
});
try {
  const { id } = await uploadChatPod(
    `http://127.0.0.1:${brokers[0]!.server.port}`,
  );
  const session = `across-${crypto.randomUUID().slice(0, 8)}`;
  const pages: { page: Page; id: string }[] = [];
  for (const { server } of brokers) {
    const context = await browser.newContext();
    // Without a media permission Chromium offers no loopback candidate.
    await context.grantPermissions(["camera", "microphone"]);
    const page = await context.newPage();
    await page.goto(`http://127.0.0.1:${server.port}/${id}#${session}`);
    await page.waitForSelector('#status[data-state="connected"]', WAIT);
    pages.push({ page, id: (await page.locator("#me").textContent())! });
  }
  const [a, b] = pages as [typeof pages[0], typeof pages[0]];
  for (const [self, other] of [[a, b], [b, a]] as const) {
    await self.page.locator(
      `#peers li[data-peer-id="${other.id}"][data-state="open"]`,
    ).waitFor(WAIT);
  }
  for (
    const [from, to, text] of [[a, b, "from A's broker"], [
      b,
      a,
      "from B's broker",
    ]] as const
  ) {
    await from.page.fill("#input", text);
    await from.page.press("#input", "Enter");
    await to.page.locator(`#log .msg[data-from="${from.id}"]`, {
      hasText: text,
    }).waitFor(WAIT);
  }
  console.log("journey ok");
} finally {
  await browser.close();
  for (const { server, bus, registry } of brokers) {
    await server.close();
    await bus.close();
    await registry.close();
  }
}
