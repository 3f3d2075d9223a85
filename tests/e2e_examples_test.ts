// The built example pods (examples/file-drop/, examples/chat/) in Debian's
// Chromium (see _examples_journey.ts). The journey runs in a child process,
// inside a network namespace that has only loopback when this is root and
// `unshare` works, so no candidate or packet can leave the machine.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { CHROMIUM } from "./_chat_journey_config.ts";

const JOURNEY = new URL("./_examples_journey.ts", import.meta.url).pathname;
const hasChromium = existsSync(CHROMIUM);
const inCi = Boolean(Deno.env.get("CI"));

if (!hasChromium) {
  console.error(
    `\n!!! ${CHROMIUM} is missing: the examples' browser test ${
      inCi ? "FAILS in CI" : "is SKIPPED"
    }.\n!!! Install Debian's Chromium: sudo apt-get install -y chromium\n`,
  );
}

async function run(
  cmd: string,
  args: string[],
): Promise<{ code: number; output: string }> {
  const { code, stdout, stderr } = await new Deno.Command(cmd, {
    args,
    stdin: "null",
    env: { NO_COLOR: "1" },
  }).output();
  const text = new TextDecoder();
  return { code, output: text.decode(stdout) + text.decode(stderr) };
}

async function canIsolate(): Promise<boolean> {
  if (Deno.uid() !== 0) return false;
  try {
    return (await run("unshare", ["-n", "sh", "-c", "ip link set lo up"]))
      .code === 0;
  } catch {
    return false;
  }
}

Deno.test({
  name:
    "examples: the built file drop sends 3 MB with progress, the built chat talks both ways and without the broker",
  ignore: !hasChromium && !inCi,
  async fn() {
    assert.ok(
      hasChromium,
      `${CHROMIUM} is missing: apt-get install -y chromium`,
    );
    // Fetch every module first: the namespace has no route to any registry.
    const cached = await run(Deno.execPath(), ["cache", JOURNEY]);
    assert.equal(cached.code, 0, cached.output);
    const journey = [Deno.execPath(), "run", "-A", JOURNEY];
    const quoted = journey.map((part) => `'${part.replaceAll("'", `'\\''`)}'`)
      .join(" ");
    const isolated = await canIsolate();
    if (!isolated) {
      console.error(
        "note: running the browser test without a network namespace",
      );
    }
    const result = isolated
      ? await run("unshare", [
        "-n",
        "sh",
        "-c",
        `ip link set lo up && exec ${quoted}`,
      ])
      : await run(journey[0]!, journey.slice(1));
    assert.equal(result.code, 0, result.output);
    assert.match(result.output, /journey ok/);
  },
});
