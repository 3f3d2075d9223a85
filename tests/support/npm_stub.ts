/**
 * A stand-in for the npm registry on 127.0.0.1 that serves nothing: it
 * answers every request 404 and notes what was asked. Pointed at it
 * (`NPM_CONFIG_REGISTRY`), a Deno with an empty `DENO_DIR` asks it for
 * every package it would download, and nothing leaves the machine.
 *
 * @module
 */

/** The registry stand-in; closed on dispose. */
export interface NpmStub extends AsyncDisposable {
  /** Its URL, with a trailing slash. */
  url: string;
  /**
   * The packages asked for, as `name@version` for a tarball and `name`
   * for a package's metadata.
   */
  asked(): { tarballs: Set<string>; metadata: Set<string> };
}

/** The most requests noted; past it, the rest are answered and not noted. */
const MAX_NOTED = 10_000;

/**
 * `name@version` of a tarball path (`/@scope/name/-/name-1.2.3.tgz`), or
 * null for any other path.
 */
export function tarballOf(path: string): string | null {
  const match = /^\/((?:@[^/]+\/)?[^/]+)\/-\/[^/]+-(\d[^/]*)\.tgz$/.exec(path);
  return match ? `${match[1]}@${match[2]}` : null;
}

/**
 * Starts the stand-in.
 *
 * @returns The running stand-in.
 */
export function startNpmStub(): Promise<NpmStub> {
  const tarballs = new Set<string>();
  const metadata = new Set<string>();
  const { promise, resolve } = Promise.withResolvers<number>();
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    onListen: ({ port }) => resolve(port),
  }, (request) => {
    const path = decodeURIComponent(new URL(request.url).pathname);
    if (tarballs.size + metadata.size < MAX_NOTED) {
      const tarball = tarballOf(path);
      if (tarball) tarballs.add(tarball);
      else metadata.add(path.slice(1));
    }
    return new Response("not here", { status: 404 });
  });
  return promise.then((port) => ({
    url: `http://127.0.0.1:${port}/`,
    asked: () => ({ tarballs, metadata }),
    [Symbol.asyncDispose]: () => server.shutdown(),
  }));
}
