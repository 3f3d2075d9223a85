// What one relayed message costs the broker, dialect by dialect: one sender
// and one receiver on loopback, N messages (each an ICE candidate) in
// windows of 50, through /y-webrtc, /peerjs and /nostr (whose events are
// signed beforehand, so the client's signing is not timed); the broker's
// CPU is read from /proc/PID/stat. The broker runs on its node:http adapter
// with the per-socket limits lifted (launch_node_adapter.ts). Also prints
// what checking one Nostr event's id and signature costs in this process.
//   deno run -A scripts/bench_compat/relay_cost.ts [N]
import { schnorr } from "@noble/curves/secp256k1.js";
import { encodeHex } from "../../src/_util/encoding.ts";
import { sha256 } from "../../src/_util/hash.ts";
import type { NostrEvent } from "../../src/signaling/compat/nostr_frames.ts";
import { eventFault } from "../../src/signaling/compat/nostr_verify.ts";

const N = Number(Deno.args[0] ?? 3_000);
const WINDOW = 50;
const WARM_UP = 200;
/** Clock ticks a second, as /proc counts CPU time (USER_HZ). */
const HZ = 100;
const CANDIDATE = {
  candidate:
    "candidate:1 1 udp 2122260223 127.0.0.1 50000 typ host generation 0 ufrag abcd network-id 1",
  sdpMid: "0",
  sdpMLineIndex: 0,
};

/** A socket whose received frames queue up for `next()`. */
interface Client {
  ws: WebSocket;
  next(): Promise<string>;
}

/** One dialect's sender and receiver, ready. */
interface Pair {
  send(i: number): void;
  /** Resolves once message `i`'s frames arrived. */
  received(): Promise<void>;
  close(): void;
}

function cpuSeconds(pid: number): number {
  const fields = Deno.readTextFileSync(`/proc/${pid}/stat`).split(") ")[1]!
    .split(" ");
  return (Number(fields[11]) + Number(fields[12])) / HZ;
}

async function open(url: string): Promise<Client> {
  const ws = new WebSocket(url);
  const queue: string[] = [];
  const waiters: ((text: string) => void)[] = [];
  ws.onmessage = (event) => {
    const waiter = waiters.shift();
    if (waiter) waiter(event.data);
    else queue.push(event.data);
  };
  // bounded: a benchmark run by hand, on loopback
  await new Promise((resolve, reject) => {
    ws.onopen = resolve;
    ws.onerror = reject;
  });
  return {
    ws,
    next: () =>
      queue.length > 0
        ? Promise.resolve(queue.shift()!)
        : new Promise((resolve) => waiters.push(resolve)),
  };
}

async function measure(name: string, pid: number, pair: Pair): Promise<void> {
  for (let i = 0; i < WARM_UP; i++) {
    pair.send(i);
    await pair.received();
  }
  const cpu = cpuSeconds(pid);
  const start = performance.now();
  for (let i = WARM_UP; i < WARM_UP + N; i += WINDOW) {
    for (let k = 0; k < WINDOW; k++) pair.send(i + k);
    for (let k = 0; k < WINDOW; k++) await pair.received();
  }
  const used = cpuSeconds(pid) - cpu;
  const wall = (performance.now() - start) / 1000;
  console.log(
    `${name}: ${(used / N * 1e6).toFixed(0)} µs of broker CPU per message ` +
      `(${N} messages in ${wall.toFixed(2)} s)`,
  );
  pair.close();
}

function signedEvents(count: number): NostrEvent[] {
  const secret = schnorr.utils.randomSecretKey();
  const pubkey = encodeHex(schnorr.getPublicKey(secret));
  const events: NostrEvent[] = [];
  for (let i = 0; i < count; i++) {
    const event = {
      pubkey,
      created_at: Math.floor(Date.now() / 1000),
      kind: 20_001,
      tags: [["x", "room"]],
      content: JSON.stringify({ candidate: CANDIDATE, n: i }),
    };
    const id = sha256(new TextEncoder().encode(JSON.stringify([
      0,
      event.pubkey,
      event.created_at,
      event.kind,
      event.tags,
      event.content,
    ])));
    events.push({
      ...event,
      id: encodeHex(id),
      sig: encodeHex(schnorr.sign(id, secret)),
    });
  }
  return events;
}

async function yWebrtc(base: string): Promise<Pair> {
  const [a, b] = [
    await open(`${base}/y-webrtc`),
    await open(`${base}/y-webrtc`),
  ];
  for (const client of [a, b]) {
    client.ws.send(JSON.stringify({ type: "subscribe", topics: ["room"] }));
  }
  b.ws.send(JSON.stringify({
    type: "publish",
    topic: "room",
    data: { type: "announce", from: "b" },
  }));
  await a.next();
  await b.next();
  const frame = JSON.stringify({
    type: "publish",
    topic: "room",
    data: {
      type: "signal",
      from: "a",
      to: "b",
      signal: { type: "candidate", candidate: CANDIDATE },
    },
  });
  return {
    send: () => a.ws.send(frame),
    received: async () => void await b.next(),
    close: () => [a, b].forEach((client) => client.ws.close()),
  };
}

async function peerJs(base: string): Promise<Pair> {
  const url = (id: string) =>
    `${base}/peerjs?key=peerjs&id=${id}&token=t-${id}`;
  const [a, b] = [await open(url("pa")), await open(url("pb"))];
  await a.next();
  await b.next();
  const frame = JSON.stringify({
    type: "CANDIDATE",
    dst: "pb",
    payload: { candidate: CANDIDATE, type: "data", connectionId: "dc_1" },
  });
  return {
    send: () => a.ws.send(frame),
    received: async () => void await b.next(),
    close: () => [a, b].forEach((client) => client.ws.close()),
  };
}

async function nostr(base: string, events: NostrEvent[]): Promise<Pair> {
  const [a, b] = [await open(`${base}/nostr`), await open(`${base}/nostr`)];
  b.ws.send(JSON.stringify(["REQ", "s", { kinds: [20_001], "#x": ["room"] }]));
  await b.next();
  const frames = events.map((event) => JSON.stringify(["EVENT", event]));
  return {
    send: (i) => a.ws.send(frames[i]!),
    // The receiver's EVENT and the sender's OK.
    received: async () => {
      await b.next();
      await a.next();
    },
    close: () => [a, b].forEach((client) => client.ws.close()),
  };
}

const port = 20_000 + Math.floor(Math.random() * 20_000);
const broker = new Deno.Command(Deno.execPath(), {
  args: [
    "run",
    "-A",
    new URL("launch_node_adapter.ts", import.meta.url).pathname,
    String(port),
  ],
  stdout: "piped",
  stderr: "inherit",
}).spawn();
try {
  const lines = broker.stdout.pipeThrough(new TextDecoderStream()).getReader();
  for (let text = ""; !text.includes("listening");) {
    const { value, done } = await lines.read();
    if (done) throw new Error("The broker stopped before it listened");
    text += value;
  }
  lines.releaseLock();
  const events = signedEvents(WARM_UP + N);
  for (const event of events.slice(0, 100)) eventFault(event);
  const start = performance.now();
  for (const event of events.slice(100, 1_100)) {
    if (eventFault(event) !== null) throw new Error("A bad event");
  }
  const checked = Math.min(1_000, events.length - 100);
  console.log(
    `checking a Nostr event (SHA-256 id, @noble/curves schnorr.verify): ${
      ((performance.now() - start) / checked * 1000).toFixed(0)
    } µs`,
  );
  const base = `ws://127.0.0.1:${port}`;
  await measure("/y-webrtc signal", broker.pid, await yWebrtc(base));
  await measure("/peerjs CANDIDATE", broker.pid, await peerJs(base));
  await measure("/nostr EVENT", broker.pid, await nostr(base, events));
} finally {
  broker.kill("SIGTERM");
  await broker.status;
}
