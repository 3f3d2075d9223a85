/**
 * WebSockets on Node: `ws` with `noServer` performs the upgrades that the
 * broker admitted, feeds each socket to the hub, and finds dead peers with
 * the same rule as Deno's `idleTimeout`: a socket silent for one ping
 * interval is pinged, and one silent for two is dropped. A socket that
 * broke the protocol (a frame announcing more than the limit) is read no
 * further. `ws` is loaded with the first upgrade: a start (and its first
 * answer on `/health`) does without it.
 *
 * @module
 */

import type { Buffer } from "node:buffer";
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
// @ts-types="@types/ws"
import type { RawData, ServerOptions, WebSocket, WebSocketServer } from "ws";
import type { Admission, Broker } from "../http/broker.ts";
import type { Logger } from "../_util/log.ts";
import { connectSocket } from "./_wiring.ts";
import { CLOSE_DEADLINE_MS } from "../signaling/close.ts";
import { nodeBuiltin } from "../_util/host.ts";

const timers = nodeBuiltin("node:timers");
const { Buffer: NodeBuffer } = nodeBuiltin("node:buffer");

/** How often the heartbeat looks at its next slice of sockets. */
const HEARTBEAT_TICK_MS = 100;

/** What the Node adapter needs of the signaling side. */
export interface NodeSignaling {
  /** Completes an admitted upgrade and hands the socket to the hub. */
  upgrade(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    admission: Admission,
  ): void;
  /** Terminates the sockets still open and stops the heartbeat. */
  close(): void;
}

/** Options of {@linkcode createNodeSignaling}. */
export interface NodeSignalingOptions {
  /** The broker whose hub takes the sockets (and whose metrics count closes). */
  broker: Broker;
  /** Largest frame; `ws` closes larger ones with 1009. */
  maxFrameBytes: number;
  /** The ping interval. */
  pingIntervalMs: number;
  /** Log sink. */
  logger: Logger;
}

/**
 * Starts the WebSocket side of the Node adapter.
 *
 * @param options Hub, limits and logger.
 * @returns Upgrade and close.
 */
export function createNodeSignaling(
  options: NodeSignalingOptions,
): NodeSignaling {
  const { broker, logger, pingIntervalMs } = options;
  const lastSeen = new Map<WebSocket, number>();
  // Sockets this side ended, and the code to report for them: 1001 for
  // silence (as Deno's idleTimeout), the protocol error's for a broken
  // frame; not 1006, a lost connection, whose place the hub keeps.
  const ended = new WeakMap<WebSocket, number>();
  // closeTimeout (ws 8.19+, not yet in @types/ws): a close that ws starts
  // itself (a frame over maxPayload) gets the hub's closing deadline, not
  // ws's 30 s.
  const serverOptions: ServerOptions & { closeTimeout: number } = {
    noServer: true,
    clientTracking: false,
    maxPayload: options.maxFrameBytes,
    closeTimeout: CLOSE_DEADLINE_MS,
  };
  let wss: WebSocketServer | undefined;
  let loading: Promise<WebSocketServer> | undefined;
  const server = (): WebSocketServer | Promise<WebSocketServer> =>
    wss ?? (loading ??= import("ws").then((module) => {
      const Server = module.WebSocketServer as typeof WebSocketServer;
      return wss = new Server(serverOptions);
    }));

  const heartbeat = startHeartbeat(lastSeen, ended, pingIntervalMs);

  function upgrade(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    admission: Admission,
  ): void {
    const ready = server();
    if (!(ready instanceof Promise)) {
      return accept(ready, req, socket, head, admission);
    }
    ready.then(
      (loaded) => accept(loaded, req, socket, head, admission),
      (error) => {
        logger("error", "Cannot load ws for a WebSocket upgrade", { error });
        socket.destroy();
      },
    );
  }

  function accept(
    wss: WebSocketServer,
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    admission: Admission,
  ): void {
    wss.handleUpgrade(req, socket, head, (ws) => {
      const events = connectSocket(broker, {
        send: (text) => ws.send(text),
        close: (code, reason) => ws.close(code, reason),
        bufferedAmount: () => ws.bufferedAmount,
        terminate: () => ws.terminate(),
      }, admission);
      const seen = () => lastSeen.set(ws, Date.now());
      seen();
      ws.on("pong", seen);
      ws.on("message", (data: RawData, isBinary: boolean) => {
        seen();
        events.message(isBinary ? toBytes(data) : toBytes(data).toString());
      });
      ws.on("error", (error) => {
        logger("debug", "WebSocket error", { error });
        const code = (error as { code?: string }).code;
        ended.set(
          ws,
          code === "WS_ERR_UNSUPPORTED_MESSAGE_LENGTH" ? 1009 : 1002,
        );
        // The peer broke the protocol (a frame announcing more than
        // maxFrameBytes, from its header): ws sends the close frame (1009)
        // and would read and drop the rest until the deadline; on Deno's
        // node:net that reading kept what it read (+190 MiB for four 60 MB
        // frames). Nothing more is read: the peer's sending stalls, and the
        // deadline drops the connection. After ws's own resume, which it
        // schedules before telling us.
        timers.setImmediate(() => socket.pause());
      });
      ws.on("close", (code: number) => {
        lastSeen.delete(ws);
        events.closed(ended.get(ws) ?? code);
      });
    });
  }

  function close(): void {
    for (const ws of lastSeen.keys()) ws.terminate();
    timers.clearInterval(heartbeat);
    wss?.close();
  }

  return { upgrade, close };
}

/**
 * Pings the silent sockets of `lastSeen` and drops the dead ones (marked
 * 1001 in `ended`).
 */
function startHeartbeat(
  lastSeen: Map<WebSocket, number>,
  ended: WeakMap<WebSocket, number>,
  pingIntervalMs: number,
): ReturnType<typeof timers.setInterval> {
  // Each socket is looked at once every half interval, so that a silent
  // socket is pinged after one to one and a half intervals and dropped
  // after two to two and a half. The sockets are looked at in slices, one
  // every tick, not all at once: a sweep of every socket pinged thousands
  // together (the sockets that had been silent since a join storm), and it
  // and their pongs held the event loop of every broker started at the
  // same time, every half interval.
  const round = Math.max(1, Math.floor(pingIntervalMs / 2));
  const tick = Math.min(HEARTBEAT_TICK_MS, round);
  let cursor: Iterator<[WebSocket, number]> | undefined;
  const heartbeat = timers.setInterval(() => {
    cursor ??= lastSeen.entries();
    const now = Date.now();
    for (let n = Math.ceil(lastSeen.size * tick / round); n > 0; n--) {
      const next = cursor.next();
      if (next.done) {
        cursor = undefined;
        return;
      }
      const [ws, seen] = next.value;
      const silent = now - seen;
      if (silent >= 2 * pingIntervalMs) {
        ended.set(ws, 1001);
        ws.terminate();
      } else if (silent >= pingIntervalMs) ws.ping();
    }
  }, tick);
  // The listening server keeps the process alive; the heartbeat need not.
  heartbeat.unref();
  return heartbeat;
}

/** The bytes of a `ws` message, whatever shape `ws` gave them. */
function toBytes(data: RawData): Buffer {
  if (NodeBuffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return NodeBuffer.concat(data);
  return NodeBuffer.from(data);
}
