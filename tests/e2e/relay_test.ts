// Peers on different networks (issue 9), in Debian's Chromium with a real
// coturn: see _relay_journey.ts for what each browser does.
//
// 1. Loopback-only namespace: relay-only browsers chat through coturn with
//    the credentials from `joined`, relay to relay; without TURN they cannot.
//    When the relay goes away mid-chat, an ICE restart recovers.
// 2. Separate networks (root only): two namespaces, each joined by a veth to
//    a third that runs coturn and the broker with forwarding off. The
//    browsers reach the hub but not each other: they chat through the relay.
import assert from "node:assert/strict";
import { supportFile } from "../support/paths.ts";
import { gatedTest } from "../support/gated.ts";
import {
  chromiumNotice,
  hasChromium,
  run,
  runJourney,
} from "../support/browser.ts";
import { haveCoturn } from "../support/coturn.ts";

const JOURNEY = supportFile("relay_journey.ts");
chromiumNotice("the relay browser test");
const have = haveCoturn() && hasChromium;
const isRoot = Deno.uid() === 0;

async function ip(...args: string[]): Promise<void> {
  const result = await run("ip", args);
  assert.equal(result.code, 0, `ip ${args.join(" ")}: ${result.output}`);
}

function results(output: string): Record<string, unknown>[] {
  return [...output.matchAll(/^result (\{.*\})$/gm)].map((m) =>
    JSON.parse(m[1]!)
  );
}

const journey = (...args: string[]) => [
  Deno.execPath(),
  "run",
  "-A",
  JOURNEY,
  ...args,
];

/** Runs the journey's `mode` in a loopback-only namespace (as root). */
async function inLoopback(mode: string): Promise<Record<string, unknown>> {
  const result = await runJourney(JOURNEY, [mode]);
  assert.equal(result.code, 0, result.output);
  assert.match(result.output, /relay journey ok/);
  const [summary] = results(result.output);
  assert.ok(summary, result.output);
  return summary;
}

gatedTest(
  "relay: relay-only browsers chat through coturn with broker-minted credentials, and not without TURN",
  have,
  "Chromium and coturn are needed",
  async () => {
    const summary = await inLoopback("loopback");
    console.log(`relay-only over loopback: ${JSON.stringify(summary)}`);
  },
);

gatedTest(
  "relay: when the relay goes away mid-chat, the offering side restarts ICE and the chat goes on",
  have,
  "Chromium and coturn are needed",
  async () => {
    const summary = await inLoopback("restart");
    console.log(`ICE restart: ${JSON.stringify(summary)}`);
  },
);

gatedTest(
  "relay: browsers on separate networks that cannot reach each other chat through the relay",
  have && isRoot,
  have ? "network namespaces need root" : "Chromium and coturn are needed",
  async () => {
    const cached = await run(Deno.execPath(), ["cache", JOURNEY]);
    assert.equal(cached.code, 0, cached.output);
    const tag = `${Deno.pid % 10000}`;
    const [hubNs, aNs, bNs] = [`pbhub${tag}`, `pba${tag}`, `pbb${tag}`];
    // 10.250.0.1 on the hub's loopback is the service address; each side
    // has a /30 to the hub and a route to that address only.
    const service = "10.250.0.1";
    let hubChild: Deno.ChildProcess | undefined;
    try {
      for (const ns of [hubNs, aNs, bNs]) {
        await ip("netns", "add", ns);
        await ip("-n", ns, "link", "set", "lo", "up");
      }
      await ip("-n", hubNs, "addr", "add", `${service}/32`, "dev", "lo");
      await run("ip", [
        "netns",
        "exec",
        hubNs,
        "sysctl",
        "-qw",
        "net.ipv4.ip_forward=0",
      ]);
      for (const [ns, net] of [[aNs, 1], [bNs, 2]] as const) {
        const [hubEnd, end] = [`h${net}${tag}`, `p${net}${tag}`];
        await ip(
          "link",
          "add",
          hubEnd,
          "netns",
          hubNs,
          "type",
          "veth",
          "peer",
          "name",
          end,
          "netns",
          ns,
        );
        await ip(
          "-n",
          hubNs,
          "addr",
          "add",
          `10.250.${net}.1/30`,
          "dev",
          hubEnd,
        );
        await ip("-n", ns, "addr", "add", `10.250.${net}.2/30`, "dev", end);
        await ip("-n", hubNs, "link", "set", hubEnd, "up");
        await ip("-n", ns, "link", "set", end, "up");
        await ip(
          "-n",
          ns,
          "route",
          "add",
          `${service}/32`,
          "via",
          `10.250.${net}.1`,
        );
      }
      // The two sides cannot reach each other.
      const ping = await run("ip", [
        "netns",
        "exec",
        aNs,
        "ping",
        "-c1",
        "-W1",
        "10.250.2.2",
      ]);
      assert.notEqual(ping.code, 0, "a reached b directly");

      hubChild = new Deno.Command("ip", {
        args: ["netns", "exec", hubNs, ...journey("hub", service)],
        stdin: "piped",
        stdout: "piped",
        stderr: "inherit",
        env: { NO_COLOR: "1" },
      }).spawn();
      const reader = hubChild.stdout.pipeThrough(new TextDecoderStream())
        .getReader();
      let out = "";
      let ready: RegExpExecArray | null = null;
      while (!(ready = /^ready (\S+)$/m.exec(out))) {
        const { done, value } = await reader.read();
        assert.ok(!done, `the hub ended: ${out}`);
        out += value;
      }
      await reader.cancel();
      const url = `${ready[1]}#netns-${tag}`;
      const [a, b] = await Promise.all([
        run("ip", ["netns", "exec", aNs, ...journey("peer", url, "a")]),
        run("ip", ["netns", "exec", bNs, ...journey("peer", url, "b")]),
      ]);
      assert.equal(a.code, 0, a.output);
      assert.equal(b.code, 0, b.output);
      for (const summary of [...results(a.output), ...results(b.output)]) {
        console.log(`separate networks: ${JSON.stringify(summary)}`);
        const pair = summary.pair as { local: string; remote: string };
        assert.equal(summary.route, "relayed");
        assert.ok(
          pair.local === "relay" || pair.remote === "relay",
          JSON.stringify(pair),
        );
      }
    } finally {
      if (hubChild) {
        await hubChild.stdin.close().catch(() => {});
        const timer = setTimeout(() => hubChild?.kill("SIGKILL"), 10_000);
        await hubChild.status;
        clearTimeout(timer);
      }
      for (const ns of [hubNs, aNs, bNs]) {
        await run("ip", ["netns", "del", ns]);
      }
    }
  },
);
