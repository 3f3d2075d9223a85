// A private coturn (`turnserver`, Debian's coturn) for the TURN tests: one
// config file in a temp dir (the secret is in the file, never in argv, so it
// is not in the process list), a free port, stopped by PID.
import { existsSync } from "node:fs";
import { freePort, waitForPort, waitForStun } from "./ports.ts";
import { stopChild } from "./child_stop.ts";

/** Debian's coturn binaries. */
export const TURNSERVER = "/usr/bin/turnserver";
/** coturn's own test client. */
export const UCLIENT = "/usr/bin/turnutils_uclient";

/** Whether coturn is installed; prints a loud notice when it is not. */
export function haveCoturn(): boolean {
  const have = existsSync(TURNSERVER) && existsSync(UCLIENT);
  if (!have) {
    const inCi = Boolean(Deno.env.get("CI"));
    console.error(
      `\n!!! ${TURNSERVER} is missing: the TURN tests ${
        inCi ? "FAIL in CI" : "are SKIPPED"
      }.\n!!! Install Debian's coturn: sudo apt-get install -y coturn\n`,
    );
  }
  return have;
}

/** A running coturn. */
export interface Coturn extends AsyncDisposable {
  /** Its listening port (UDP and TCP). */
  port: number;
  /** What it logged so far. */
  log(): Promise<string>;
  /** Stops it (SIGTERM, then SIGKILL) and removes its directory. */
  stop(): Promise<void>;
}

/** Options of {@linkcode startCoturn}. */
export interface CoturnOptions {
  /** The shared secret of `use-auth-secret`. */
  secret: string;
  /** Address to listen and relay on. @default {"127.0.0.1"} */
  ip?: string;
  /** Relaying to loopback peers, needed when everything is on 127.0.0.1. */
  allowLoopbackPeers?: boolean;
  /** The port to listen on (a coturn started again at the same URL). @default {a free one} */
  port?: number;
  /**
   * A whole configuration instead of the test one, given the port and the
   * temp dir; the harness appends its own `log-file`, `pidfile`, `userdb`
   * and `verbose`, and waits for TCP on `ip:port`.
   */
  config?: (port: number, dir: string) => string | Promise<string>;
}

/** Starts `turnserver` and waits until it listens. */
export async function startCoturn(options: CoturnOptions): Promise<Coturn> {
  const ip = options.ip ?? "127.0.0.1";
  const dir = await Deno.makeTempDir({ prefix: "coturn-" });
  const port = options.port ?? await freePort({ udp: true, host: ip });
  const logFile = `${dir}/turn.log`;
  const own = [
    `log-file=${logFile}`,
    "simple-log",
    "verbose",
    `pidfile=${dir}/turn.pid`,
    `userdb=${dir}/turndb`,
  ];
  const config = options.config
    ? [await options.config(port, dir), ...own].join("\n")
    : [
      `listening-ip=${ip}`,
      `listening-port=${port}`,
      `relay-ip=${ip}`,
      "min-port=40000",
      "max-port=44999",
      "use-auth-secret",
      `static-auth-secret=${options.secret}`,
      "realm=pod-broker.test",
      ...(options.allowLoopbackPeers ? ["allow-loopback-peers"] : []),
      "no-cli",
      "no-tls",
      "no-dtls",
      "fingerprint",
      "no-multicast-peers",
      ...own,
    ].join("\n");
  await Deno.writeTextFile(`${dir}/turnserver.conf`, config + "\n", {
    mode: 0o600,
  });
  const child = new Deno.Command(TURNSERVER, {
    args: ["-c", `${dir}/turnserver.conf`],
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  const log = () => Deno.readTextFile(logFile).catch(() => "");
  let stopped: Promise<void> | undefined;
  const stop = () => {
    stopped ??= (async () => {
      await stopChild(child, "SIGTERM", 3_000);
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    })();
    return stopped;
  };
  // Listening once a TCP connection to the port is accepted and a STUN
  // Binding over UDP is answered: coturn may open its TCP listener before
  // its UDP one, and a client's first UDP packet then meets "Connection
  // refused".
  const ready = async () => {
    await waitForPort(port, "coturn", { host: ip });
    await waitForStun(port, "coturn", { host: ip });
  };
  await ready().catch(async (error) => {
    const text = await log();
    await stop();
    throw new Error(`${error.message}: ${text.slice(-2000)}`);
  });
  return { port, log, stop, [Symbol.asyncDispose]: stop };
}

/**
 * Runs `turnutils_uclient` against `ip:port` with these credentials: two
 * clients allocate and relay to each other; `flags` adds to that (`-S -t`:
 * TLS over TCP).
 */
export async function allocate(
  ip: string,
  port: number,
  username: string,
  password: string,
  flags: string[] = [],
): Promise<{ ok: boolean; output: string }> {
  const { code, stdout, stderr } = await new Deno.Command(UCLIENT, {
    // -y: two clients relaying to each other through their allocations;
    // -n 3 messages; -m 1 client pair.
    args: [
      "-u",
      username,
      "-w",
      password,
      "-p",
      String(port),
      "-n",
      "3",
      "-m",
      "1",
      "-y",
      ...flags,
      ip,
    ],
    stdin: "null",
    signal: AbortSignal.timeout(20_000),
  }).output();
  const text = new TextDecoder();
  return {
    ok: code === 0,
    output: text.decode(stdout) + text.decode(stderr),
  };
}
