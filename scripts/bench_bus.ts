/**
 * The cost of the signaling bus, measured in one run: relay latency (round
 * trips of `signal` frames between two peers) and relayed messages per
 * second, for two peers on one broker with no bus (in-process) against two
 * peers on two brokers sharing a private redis-server (RedisBus).
 *
 * Usage: `deno run -A scripts/bench_bus.ts [--round-trips N] [--messages N]`
 * Prints a Markdown table. Needs /usr/bin/redis-server.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { createSignalServer } from "../src/adapters/deno.ts";
import { silentLogger } from "../src/_util/log.ts";
import { MemoryRegistry } from "../src/registries/memory.ts";
import type { Bus } from "../src/signaling/bus/mod.ts";
import { createRedisBus } from "../src/signaling/bus/redis.ts";
import type { SignalServer, SignalServerOptions } from "../src/config/types.ts";
import { haveRedis, startRedis } from "../tests/support/redis.ts";

const { values } = parseArgs({
  options: {
    "round-trips": { type: "string", default: "2000" },
    messages: { type: "string", default: "20000" },
    pairs: { type: "string", default: "4" },
  },
});
const ROUND_TRIPS = Number(values["round-trips"]);
const MESSAGES = Number(values.messages);
const PAIRS = Number(values.pairs);
const WINDOW = 100;

const CANDIDATE = {
  candidate: {
    candidate: "candidate:1 1 udp 2122260223 192.0.2.1 50000 typ host",
    sdpMid: "0",
    sdpMLineIndex: 0,
  },
};

async function broker(bus?: Bus): Promise<SignalServer> {
  return await createSignalServer({
    registry: new MemoryRegistry(),
    port: 0,
    hostname: "127.0.0.1",
    logger: silentLogger,
    accessLog: "off",
    // The bench measures relaying, not the per-socket rate limit.
    signaling: { rateLimitBurst: 1_000_000, rateLimitPerSecond: 1_000_000 },
    ...(bus ? { bus } : {}),
  } as SignalServerOptions);
}

interface Peer {
  ws: WebSocket;
  id: string;
  onSignal: () => void;
}

async function peer(port: number, session: string): Promise<Peer> {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/signal`);
  await new Promise((resolve, reject) => {
    ws.onopen = resolve;
    ws.onerror = reject;
  });
  const joined = new Promise<string>((resolve) => {
    ws.onmessage = (event) => {
      const frame = JSON.parse(event.data);
      if (frame.type === "joined") resolve(frame.peerId);
    };
  });
  ws.send(JSON.stringify({ type: "join", session }));
  const self: Peer = { ws, id: await joined, onSignal: () => {} };
  ws.onmessage = (event) => {
    // A frame starting with {"type":"signal" is all the bench waits for.
    if ((event.data as string).startsWith('{"type":"signal"')) {
      self.onSignal();
    }
  };
  return self;
}

function send(from: Peer, to: Peer): void {
  from.ws.send(JSON.stringify({ type: "signal", to: to.id, data: CANDIDATE }));
}

async function closeAll(peers: Peer[]): Promise<void> {
  await Promise.all(peers.map((p) =>
    new Promise((resolve) => {
      p.ws.onclose = resolve;
      p.ws.close();
    })
  ));
}

/** Round-trip times in ms of `ROUND_TRIPS` ping-pongs between a and b. */
async function latency(a: Peer, b: Peer): Promise<number[]> {
  b.onSignal = () => send(b, a);
  const times: number[] = [];
  for (let i = 0; i < ROUND_TRIPS; i++) {
    const start = performance.now();
    await new Promise<void>((resolve) => {
      a.onSignal = resolve;
      send(a, b);
    });
    times.push(performance.now() - start);
  }
  return times.slice(Math.floor(ROUND_TRIPS / 10)); // drop the warm-up
}

/** Messages relayed per second: every sender keeps `WINDOW` in flight. */
async function throughput(pairs: [Peer, Peer][]): Promise<number> {
  const each = Math.ceil(MESSAGES / pairs.length);
  const start = performance.now();
  await Promise.all(pairs.map(([a, b]) =>
    new Promise<void>((resolve) => {
      let sent = 0;
      let received = 0;
      // The receiver acknowledges every WINDOW/2 frames, one frame back.
      let unacked = 0;
      b.onSignal = () => {
        received++;
        if (++unacked === WINDOW / 2 || received === each) {
          unacked = 0;
          send(b, a);
        }
        if (received === each) resolve();
      };
      const pump = () => {
        while (sent < each && sent - received < WINDOW) {
          send(a, b);
          sent++;
        }
      };
      a.onSignal = pump;
      pump();
    })
  ));
  return (pairs.length * each) / ((performance.now() - start) / 1000);
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
}

async function measure(name: string, ports: [number, number]) {
  const [a, b] = [await peer(ports[0], "lat"), await peer(ports[1], "lat")];
  const times = (await latency(a, b)).sort((x, y) => x - y);
  await closeAll([a, b]);
  const pairs: [Peer, Peer][] = [];
  for (let i = 0; i < PAIRS; i++) {
    pairs.push([
      await peer(ports[0], `tp${i}`),
      await peer(ports[1], `tp${i}`),
    ]);
  }
  const rate = await throughput(pairs);
  await closeAll(pairs.flat());
  return {
    name,
    p50: percentile(times, 0.5),
    p99: percentile(times, 0.99),
    rate,
  };
}

if (!haveRedis()) Deno.exit(1);
await using redis = await startRedis();
const results = [];
{
  const one = await broker();
  results.push(
    await measure("in-process (one broker, no bus)", [one.port, one.port]),
  );
  await one.close();
}
{
  const busA = await createRedisBus({ url: redis.url });
  const busB = await createRedisBus({ url: redis.url });
  const [a, b] = [await broker(busA), await broker(busB)];
  results.push(
    await measure("RedisBus (two brokers, peers on each)", [a.port, b.port]),
  );
  await a.close();
  await b.close();
  await busA.close();
  await busB.close();
}

const cpu = (() => {
  try {
    const text = Deno.readTextFileSync("/proc/cpuinfo");
    return /model name\s*:\s*(.*)/.exec(text)?.[1] ?? "unknown CPU";
  } catch {
    return "unknown CPU";
  }
})();
console.log(
  `Deno ${Deno.version.deno}, ${navigator.hardwareConcurrency} cores (${cpu}), ` +
    `redis-server on 127.0.0.1; ${ROUND_TRIPS} round trips, ${MESSAGES} messages over ${PAIRS} pairs\n`,
);
console.log("| path | round trip p50 | round trip p99 | messages/s |");
console.log("|---|---|---|---|");
for (const r of results) {
  console.log(
    `| ${r.name} | ${r.p50.toFixed(3)} ms | ${r.p99.toFixed(3)} ms | ${
      Math.round(r.rate).toLocaleString("en-US")
    } |`,
  );
}
