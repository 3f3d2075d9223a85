// One HTTP(S) request to 127.0.0.1 with a Host header of the test's choice
// (fetch cannot set Host). Runtime-neutral (it imports `node:` built-ins
// and wait.ts): the contract suite imports it, and tests/contract/node_test.ts
// transpiles it for Node 22.
import { Buffer } from "node:buffer";
import { type IncomingHttpHeaders, request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { WAIT_MS, WaitTimeout } from "./wait.ts";

/** A response read by {@linkcode requestWithHost}. */
export interface HostAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  /** The body as UTF-8 text. */
  body: string;
  /** The body's bytes. */
  bytes: Uint8Array;
}

/** What {@linkcode requestWithHost} sends. */
export interface HostRequestInit {
  method?: string;
  headers?: Record<string, string>;
  body?: Uint8Array;
  /** Over TLS, trusting `ca` and naming the Host's name in SNI. */
  tls?: { ca: string; servername: string };
}

/** One request to 127.0.0.1:`port` for `path`, with `host` as the Host header. */
export function requestWithHost(
  port: number,
  host: string,
  path: string,
  { method = "GET", headers = {}, body, tls }: HostRequestInit = {},
): Promise<HostAnswer> {
  const options = {
    host: "127.0.0.1",
    port,
    path,
    method,
    headers: { ...headers, Host: host },
    agent: false as const,
  };
  return new Promise((resolve, reject) => {
    const req = (tls ? httpsRequest : httpRequest)(
      tls ? { ...options, ...tls } : options,
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => {
          const bytes = Buffer.concat(chunks);
          resolve({
            status: res.statusCode!,
            headers: res.headers,
            body: bytes.toString("utf8"),
            bytes: new Uint8Array(bytes),
          });
        });
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    // A request that gets no answer (or not all of it) fails, naming it.
    req.setTimeout(WAIT_MS, () => {
      req.destroy(new WaitTimeout(`${method} ${path} on ${host}`, WAIT_MS));
    });
    req.end(body);
  });
}
