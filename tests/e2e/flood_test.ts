// A client that floods one socket reads why it was cut off (issue 11): the
// `rate_limited` error frame, then close code 1008 with the flood rule's
// reason, in every run, on both adapters (the Node one runs here on Deno's
// node:http).
//
// The rule is a token bucket refilled with time, so a flood closes a socket
// only if its frames reach the broker faster than the refill. The broker
// here refills one token a second, and the client sends its whole flood at
// once, from a full bucket: reading it takes the broker milliseconds, which
// refill nothing, however busy the machine. (At the default 50 a second, a
// loaded machine that read a paced flood in slices refilled the bucket
// between them, and the socket was rightly never closed.)
import assert from "node:assert/strict";
import { createSignalServer as onDeno } from "../../src/adapters/deno.ts";
import { createSignalServer as onNode } from "../../src/adapters/node.ts";
import { silentLogger } from "../../src/_util/log.ts";
import { MemoryRegistry } from "../../src/registries/memory.ts";
import { nextEvent } from "../support/wait.ts";

const RUNS = 20;
const BURST = 20;
/**
 * A join, then the rest of a bucket's worth accepted, one `rate_limited`,
 * then more dropped in a row than the burst closes the socket; and a few
 * more, read and dropped while it closes.
 */
const FLOOD = BURST + 1 + BURST + 10;

for (const [name, create] of [["Deno", onDeno], ["Node", onNode]] as const) {
  Deno.test(`flood on the ${name} adapter: rate_limited, then 1008, ${RUNS} runs of ${RUNS}`, async () => {
    const server = await create({
      registry: new MemoryRegistry(),
      port: 0,
      hostname: "127.0.0.1",
      logger: silentLogger,
      signaling: { rateLimitBurst: BURST, rateLimitPerSecond: 1 },
    });
    try {
      const seen: string[] = [];
      for (let run = 0; run < RUNS; run++) seen.push(await flood(server.port));
      assert.deepEqual(
        seen,
        Array(RUNS).fill("1008 Rate limit exceeded+rate_limited"),
      );
    } finally {
      await server.close();
    }
  });
}

/** One flooded socket: its close code and reason, and whether it was told. */
async function flood(port: number): Promise<string> {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/signal`);
  const closed = nextEvent<CloseEvent>(
    ws,
    "close",
    "the flooded socket to close",
  );
  await nextEvent(ws, "open", "the socket to open", { failOn: ["close"] });
  const told = new Set<string>();
  ws.addEventListener("message", (event) => {
    const frame = JSON.parse(event.data);
    told.add(frame.code ?? frame.type);
  });
  // The whole flood at once, then silence: a client that floods on after
  // the broker's close frame is reset at the broker's close deadline, and
  // the reset loses the close frame by design. Its first frame joins, so
  // that the join deadline is out of the race.
  for (let sent = 0; sent < FLOOD; sent++) {
    ws.send('{"type":"join","session":"flood"}');
  }
  const { code, reason } = await closed;
  assert.ok(told.has("joined"), [...told].join());
  return `${code} ${reason}${told.has("rate_limited") ? "+rate_limited" : ""}`;
}
