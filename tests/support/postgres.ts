// A private PostgreSQL for the Postgres registry tests: `initdb` in a temp
// dir, `postgres` on a free port of 127.0.0.1 (password auth over TCP, trust
// only on a unix socket inside the temp dir), stopped by PID. As root, the
// server runs as the `postgres` user through `setpriv`, which execs (so the
// PID we hold is the postmaster's). The superuser's password is in a file
// given to initdb, never in argv.
import { existsSync, readdirSync } from "node:fs";
import postgres from "postgres";
import { freePort } from "./ports.ts";
import { stopChild } from "./child_stop.ts";
import {
  PostgresRegistry,
  type PostgresRegistryOptions,
} from "../../src/registries/postgres.ts";

/** Opens a PostgresRegistry that closes when disposed of (`await using`). */
export async function openRegistry(
  options: PostgresRegistryOptions,
): Promise<PostgresRegistry & AsyncDisposable> {
  const registry = await PostgresRegistry.open(options);
  return Object.assign(registry, {
    [Symbol.asyncDispose]: () => registry.close(),
  });
}

/** The directory of Debian's PostgreSQL binaries (the newest version), or null. */
export function postgresBinDir(): string | null {
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return null;
  const versions = readdirSync(root)
    .filter((name) => /^\d+$/.test(name))
    .sort((a, b) => Number(b) - Number(a));
  for (const version of versions) {
    const bin = `${root}/${version}/bin`;
    if (existsSync(`${bin}/initdb`) && existsSync(`${bin}/postgres`)) {
      return bin;
    }
  }
  return null;
}

/** Whether PostgreSQL is installed; prints a loud notice when it is not. */
export function havePostgres(): boolean {
  const have = postgresBinDir() !== null;
  if (!have) {
    const inCi = Boolean(Deno.env.get("CI"));
    console.error(
      `\n!!! PostgreSQL (/usr/lib/postgresql/*/bin) is missing: the Postgres registry tests ${
        inCi ? "FAIL in CI" : "are SKIPPED"
      }.\n!!! Install Debian's postgresql: sudo apt-get install -y postgresql\n`,
    );
  }
  return have;
}

/** A running private PostgreSQL. */
export interface TestPostgres extends AsyncDisposable {
  /** Its port on 127.0.0.1. */
  port: number;
  /** The superuser's password. */
  password: string;
  /** `postgres://postgres:PASSWORD@127.0.0.1:PORT/DATABASE`. */
  url(database?: string): string;
  /** Creates a fresh database and returns its name. */
  createDatabase(): Promise<string>;
  /** Stops the server (fast shutdown: clients are disconnected). */
  stopServer(): Promise<void>;
  /** Starts it again on the same port and data directory. */
  startServer(): Promise<void>;
  /** Stops it for good and removes its directory. */
  stop(): Promise<void>;
}

async function userIds(name: string): Promise<{ uid: number; gid: number }> {
  const id = async (flag: string) => {
    const { stdout, success } = await new Deno.Command("id", {
      args: [flag, name],
      stdout: "piped",
      stderr: "null",
    }).output();
    if (!success) {
      throw new Error(`Cannot start PostgreSQL: no user '${name}' to run it`);
    }
    return Number(new TextDecoder().decode(stdout).trim());
  };
  return { uid: await id("-u"), gid: await id("-g") };
}

async function chownTree(path: string, uid: number, gid: number) {
  await Deno.chown(path, uid, gid);
  for await (const entry of Deno.readDir(path)) {
    const child = `${path}/${entry.name}`;
    if (entry.isDirectory) await chownTree(child, uid, gid);
    else await Deno.chown(child, uid, gid);
  }
}

/** Starts a private PostgreSQL and waits until it accepts connections. */
export async function startPostgres(): Promise<TestPostgres> {
  const bin = postgresBinDir();
  if (bin === null) throw new Error("Cannot start PostgreSQL: not installed");
  const dir = await Deno.makeTempDir({ prefix: "pg-" });
  const dataDir = `${dir}/data`;
  const socketDir = `${dir}/socket`;
  const password = `pw-${crypto.randomUUID()}`;
  const port = await freePort();
  await Deno.mkdir(socketDir);
  await Deno.writeTextFile(`${dir}/pwfile`, `${password}\n`, { mode: 0o600 });
  // Not as root: initdb and postgres refuse it.
  let asUser: string[] = [];
  if (Deno.uid() === 0) {
    const { uid, gid } = await userIds("postgres");
    await chownTree(dir, uid, gid);
    asUser = [
      "/usr/bin/setpriv",
      `--reuid=${uid}`,
      `--regid=${gid}`,
      "--init-groups",
      "--",
    ];
  }
  const command = (program: string, args: string[]) => {
    const argv = [...asUser, `${bin}/${program}`, ...args];
    return new Deno.Command(argv[0]!, {
      args: argv.slice(1),
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      env: { LC_ALL: "C" },
    });
  };
  try {
    const init = await command("initdb", [
      "-D",
      dataDir,
      "-U",
      "postgres",
      `--pwfile=${dir}/pwfile`,
      "--auth-local=trust",
      "--auth-host=scram-sha-256",
      "-E",
      "UTF8",
      "--no-sync",
      "--no-instructions",
    ]).output();
    if (!init.success) {
      throw new Error(
        `Cannot start PostgreSQL: initdb failed: ${
          new TextDecoder().decode(init.stderr).slice(0, 500)
        }`,
      );
    }
  } catch (error) {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
    throw error;
  }
  await Deno.remove(`${dir}/pwfile`);

  let child: Deno.ChildProcess | null = null;
  const startServer = async () => {
    const running = command("postgres", [
      "-D",
      dataDir,
      "-p",
      String(port),
      "-k",
      socketDir,
      "-c",
      "listen_addresses=127.0.0.1",
      "-c",
      "max_connections=60",
      "-c",
      "shared_buffers=16MB",
      // The tests kill brokers, not this server: its own durability is not
      // under test, and a shared machine is slow enough.
      "-c",
      "fsync=off",
      "-c",
      "full_page_writes=off",
      "-c",
      "logging_collector=on",
      "-c",
      `log_directory=${dir}/log`,
    ]).spawn();
    child = running;
    // Drain the (quiet, thanks to the collector) pipes so they never block.
    const drain = Promise.all([
      running.stdout.pipeTo(new WritableStream()),
      running.stderr.pipeTo(new WritableStream()),
    ]);
    drains.push(drain);
    for (let attempt = 0; attempt < 400; attempt++) {
      const lines = await Deno.readTextFile(`${dataDir}/postmaster.pid`)
        .then((text) => text.split("\n"), () => []);
      if (lines[7]?.trim() === "ready") return;
      const exited = await Promise.race([
        running.status.then(() => true),
        new Promise<false>((resolve) => setTimeout(() => resolve(false), 25)),
      ]);
      if (exited) break;
    }
    await stopServer();
    throw new Error(`Cannot start PostgreSQL: not ready on port ${port}`);
  };
  const drains: Promise<unknown>[] = [];
  const stopServer = async () => {
    const running = child;
    child = null;
    if (running === null) return;
    await stopChild(running, "SIGINT", 10_000); // SIGINT: fast shutdown
    await Promise.all(drains.splice(0));
  };
  const url = (database = "postgres") =>
    `postgres://postgres:${password}@127.0.0.1:${port}/${database}`;
  let databases = 0;
  const createDatabase = async () => {
    const name = `test_${++databases}`;
    const admin = postgres(url(), { max: 1, onnotice: () => {} });
    try {
      await admin.unsafe(`CREATE DATABASE ${name}`);
    } finally {
      await admin.end();
    }
    return name;
  };
  const stop = async () => {
    await stopServer();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  };
  await startServer().catch(async (error) => {
    await stop();
    throw error;
  });
  return {
    port,
    password,
    url,
    createDatabase,
    stopServer,
    startServer,
    stop,
    [Symbol.asyncDispose]: stop,
  };
}

/**
 * One private PostgreSQL for a test file, started when the file loads (so
 * no test owns it) and stopped by the file's last test, `stopTest` (or by
 * `unload` when a filter skips it). Skipped outside CI when not installed.
 */
export async function postgresForFile(): Promise<{
  ignore: boolean;
  server: () => TestPostgres;
  pgTest: (name: string, fn: () => Promise<void>) => void;
  /** The URL of a fresh database on the server. */
  freshUrl: () => Promise<string>;
}> {
  const ignore = !havePostgres() && !Deno.env.get("CI");
  const pg: TestPostgres | null = ignore ? null : await startPostgres();
  globalThis.addEventListener("unload", () => {
    // Synchronous fallback only: the last test normally stopped it.
    if (pg) void pg.stop();
  });
  const server = () => {
    if (pg === null) throw new Error("Cannot test: PostgreSQL is not running");
    return pg;
  };
  const pgTest = (name: string, fn: () => Promise<void>) =>
    Deno.test({ name, ignore, fn });
  const freshUrl = async () => server().url(await server().createDatabase());
  return { ignore, server, pgTest, freshUrl };
}
