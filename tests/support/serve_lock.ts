/**
 * Makes serve.lock (scripts/lock_serve.ts writes it): the part of deno.lock that serving loads, and nothing
 * else. Its packages are the npm packages that the two server entry points
 * (src/mod.ts and src/mod_node.ts, with every command they can load) reach,
 * with their dependencies, at deno.lock's versions and digests; its
 * workspace section is deno.lock's, so that `--frozen` accepts it with this
 * deno.json.
 *
 * The container and `deno task start` run from it, so that a first start
 * fetches what serving needs and not the tests' browsers and tools.
 *
 * @module
 */

/** The server entry points whose packages serve.lock pins. */
export const SERVE_ENTRY_POINTS = ["src/mod.ts", "src/mod_node.ts"] as const;

/** One package of a lock file (version 5). */
export interface LockedPackage {
  /** The tarball's digest. */
  integrity: string;
  /** Dependencies, by name (or `name@version` when the lock holds several). */
  dependencies?: string[];
  /** Dependencies installed only where they fit (os, cpu). */
  optionalDependencies?: string[];
  [field: string]: unknown;
}

/** A Deno lock file, version 5 (the npm part). */
export interface Lock {
  /** "5". */
  version: string;
  /** Specifier (`npm:ws@8.23.0`) to the resolved version. */
  specifiers: Record<string, string>;
  /** Package id (`ws@8.23.0`) to its entry. */
  npm: Record<string, LockedPackage>;
  /** The deno.json dependencies the lock was made for. */
  workspace?: unknown;
  [field: string]: unknown;
}

/** The package name of an id such as `@types/ws@8.18.2`. */
function nameOf(id: string): string {
  return id.slice(0, id.indexOf("@", 1));
}

/** The id in `lock` that the dependency entry `dep` names. */
function resolveDependency(lock: Lock, dep: string): string {
  if (dep in lock.npm) return dep;
  const ids = Object.keys(lock.npm).filter((id) => nameOf(id) === dep);
  if (ids.length !== 1) {
    throw new Error(`deno.lock names '${dep}' ambiguously: ${ids.join(", ")}`);
  }
  return ids[0]!;
}

/**
 * `entry` with each `name@version` dependency written as `name` where `kept`
 * holds one version of it, as Deno writes it.
 */
function shortNames(entry: LockedPackage, kept: Set<string>): LockedPackage {
  const short = (deps: string[]) =>
    deps.map((dep) => {
      const name = dep.includes("@", 1) ? nameOf(dep) : dep;
      const versions = [...kept].filter((id) => nameOf(id) === name);
      return versions.length === 1 ? name : dep;
    });
  const copy = { ...entry };
  if (copy.dependencies) copy.dependencies = short(copy.dependencies);
  if (copy.optionalDependencies) {
    copy.optionalDependencies = short(copy.optionalDependencies);
  }
  return copy;
}

/**
 * The lock of `roots` (package ids) and everything they depend on, cut from
 * `full`.
 *
 * @param full The whole lock (deno.lock).
 * @param roots The ids of the packages the entry points import.
 * @returns A lock with those packages and the specifiers that name them.
 */
export function cutLock(full: Lock, roots: Iterable<string>): Lock {
  const kept = new Set<string>();
  const pending = [...roots];
  while (pending.length > 0) {
    const id = pending.pop()!;
    if (kept.has(id)) continue;
    const entry = full.npm[id];
    if (entry === undefined) throw new Error(`deno.lock has no ${id}`);
    kept.add(id);
    for (
      const dep of [
        ...(entry.dependencies ?? []),
        ...(entry.optionalDependencies ?? []),
      ]
    ) {
      pending.push(resolveDependency(full, dep));
    }
  }
  const specifiers = Object.fromEntries(
    Object.entries(full.specifiers).filter(([specifier, version]) =>
      kept.has(`${nameOf(specifier.slice("npm:".length))}@${version}`)
    ),
  );
  const npm = Object.fromEntries(
    [...kept].sort().map((id) => [id, shortNames(full.npm[id]!, kept)]),
  );
  const lock: Lock = { version: full.version, specifiers, npm };
  if (full.workspace !== undefined) lock.workspace = full.workspace;
  return lock;
}

/**
 * `lock` as Deno writes a lock file: two-space JSON, with the `os`, `cpu`
 * and `libc` lists on one line.
 */
export function formatLock(lock: Lock): string {
  return JSON.stringify(lock, null, 2).replace(
    /"(os|cpu|libc)": \[\s*([^\]]*?)\s*\]/g,
    (_, field: string, items: string) =>
      `"${field}": [${items.split(/,\s*/).join(", ")}]`,
  ) + "\n";
}

/** The npm package ids that the module graph of `entry` reaches. */
export async function npmRoots(entry: string, root = "."): Promise<string[]> {
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", "--frozen", "--lock=deno.lock", entry],
    cwd: root,
    stderr: "piped",
  }).output();
  if (code !== 0) {
    throw new Error(
      `deno info ${entry}: ${new TextDecoder().decode(stderr)}`,
    );
  }
  const info = JSON.parse(new TextDecoder().decode(stdout)) as {
    modules: { kind: string; npmPackage?: string }[];
  };
  return info.modules.flatMap((module) =>
    module.kind === "npm" && module.npmPackage ? [module.npmPackage] : []
  );
}

/**
 * serve.lock's text as the deno.lock and the entry points of the checkout at
 * `root` make it.
 */
export async function serveLockText(
  root = ".",
): Promise<{ text: string; lock: Lock }> {
  const full = JSON.parse(
    await Deno.readTextFile(`${root}/deno.lock`),
  ) as Lock;
  const roots = (await Promise.all(
    SERVE_ENTRY_POINTS.map((entry) => npmRoots(entry, root)),
  )).flat();
  const lock = cutLock(full, roots);
  return { text: formatLock(lock), lock };
}
