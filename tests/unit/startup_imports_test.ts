// What starting the broker loads: the entries' static import graph (from
// `deno info`) holds no bundler, no CLI tool, no npm package and no node:
// module; each is one dynamic
// import away, or loaded on first use. The modules a serving start loads
// are held here by name: one joins the set only when serving needs it before
// its first request (deno.json's "lazy-dynamic-imports" keeps every dynamic
// import out of a start until it runs).
import assert from "node:assert/strict";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";

/**
 * The modules of src/ both entries load at start: folder, then the names in
 * it.
 */
const SERVING: [string, string][] = [
  [".", "core version"],
  [
    "_util",
    "encoding hash held_body host id log lru pod_label stall_grace text",
  ],
  ["adapters", "_wiring"],
  [
    "cli",
    "commands flags input io main permission registry runtime_check serve " +
    "serve_flags suggest usage_error",
  ],
  ["config", "errors kinds options resolve row table table_lists"],
  [
    "http",
    "address_rate answers body_buffer broker create_pod find_pod observe " +
    "pipeline pod_host problem request_url router upload_body upload_budget " +
    "upload_pace",
  ],
  ["http/routes", "dialects front health ice peerjs_id pod update upload"],
  [
    "operator",
    "access_line access_log compat_metrics deny_list metrics prometheus",
  ],
  [
    "pod",
    "content_scan ed25519 ed25519_strict errors format keys limits manifest " +
    "sign update verify",
  ],
  // The SQLite registry (like sign and keys) is one of the library's exports.
  ["registries", "_row hit_batcher memory sqlite sqlite_schema types"],
  [
    "serving",
    "permission_cache permissions pod_cache pod_headers pod_origin send_deadline",
  ],
  [
    "signaling",
    "close cluster hub ice keyed membership messages rate_limit socket_hub",
  ],
  ["signaling/bus", "held local_compat mod parked"],
  // The dialects are on unless --compat says otherwise. Their hubs load
  // with the rest: by dynamic imports, only when on, they cost a default
  // start about 6 ms and saved a --compat none start about 2.
  [
    "signaling/compat",
    "base dialects json_checks limits nostr nostr_frames peerjs peerjs_frames " +
    "relays y_webrtc y_webrtc_frames",
  ],
];

/** What each entry loads besides {@linkcode SERVING}: itself and its adapter. */
const ENTRY: Record<string, string[]> = {
  "src/mod.ts": ["mod.ts", "adapters/deno.ts"],
  "src/mod_node.ts": ["mod_node.ts", "adapters/node.ts"].concat(
    ["framing", "http", "idle", "ready", "ws"].map((part) =>
      `adapters/_node_${part}.ts`
    ),
  ),
};

/** The src/ modules a start of `entry` should load, sorted. */
function servingSet(entry: string): string[] {
  const held = SERVING.flatMap(([folder, names]) =>
    names.split(" ").map((name) =>
      folder === "." ? `${name}.ts` : `${folder}/${name}.ts`
    )
  );
  return [...held, ...ENTRY[entry]!].sort();
}

Deno.test("a serving start loads the modules held here and never the bundler: bundler/, esbuild, the CLI's tools, libsodium and every package (srvx on node:http too) are dynamic imports only, and neither entry imports a node: module", async () => {
  for (const entry of ["src/mod.ts", "src/mod_node.ts"]) {
    const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
      args: ["info", "--json", entry],
      cwd: new URL("../..", import.meta.url).pathname,
      // Bounded: a hung `deno info` is killed, and the exit code check fails.
      signal: AbortSignal.timeout(60_000),
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(code, 0, new TextDecoder().decode(stderr));
    const info = JSON.parse(new TextDecoder().decode(stdout)) as {
      roots: string[];
      modules: {
        specifier: string;
        dependencies?: { code?: { specifier: string }; isDynamic?: boolean }[];
      }[];
    };
    const bySpecifier = new Map(info.modules.map((m) => [m.specifier, m]));
    // What the entry loads before running: its static imports, closed.
    const loaded = new Set<string>();
    const visit = (specifier: string) => {
      if (loaded.has(specifier)) return;
      loaded.add(specifier);
      for (const dependency of bySpecifier.get(specifier)?.dependencies ?? []) {
        if (!dependency.isDynamic && dependency.code) {
          visit(dependency.code.specifier);
        }
      }
    };
    visit(info.roots[0]!);
    const own = [...loaded].flatMap((s) => {
      const path = /^file:\/\/.*\/src\/(.*)$/.exec(s)?.[1];
      return path === undefined ? [] : [path];
    }).sort();
    assert.deepEqual(own, servingSet(entry), `${entry} loads these modules`);
    // The set above holds no bundler, CLI tool or Nostr signature check;
    // the build command and the other commands' tools are there, one
    // dynamic import away.
    for (const path of ["/src/bundler/mod.ts", "/src/cli/pod_tools.ts"]) {
      assert.ok(info.modules.some((m) => m.specifier.endsWith(path)), path);
    }
    // No package loads with a start: each one (srvx for the first request
    // on node:http that is not answered from parts, ws for the first
    // WebSocket there, libsodium, @noble/curves for /nostr, ioredis,
    // postgres, esbuild, parse5, fflate) is a dynamic import away, loaded
    // when its feature is first used.
    const packages = [...loaded].flatMap((s) => {
      const name = /^npm:\/?(@?[^@/]+(?:\/[^@/]+)?)@/.exec(s)?.[1];
      return name === undefined ? [] : [name];
    });
    assert.deepEqual(
      packages,
      [],
      `${entry} loads these packages statically`,
    );
    // No node: module is imported: on Deno.serve the first one loads Deno's
    // Node layer, and on Node each imported one costs its ESM facade
    // (node:http's loads Node's Fetch implementation); the node:http
    // adapter reaches what it needs through src/_util/host.ts's
    // nodeBuiltin. Type-only imports load nothing.
    const imports = [...loaded].flatMap((s) =>
      (bySpecifier.get(s)?.dependencies ?? []).flatMap((dependency) =>
        dependency.code && !dependency.isDynamic &&
          dependency.code.specifier.startsWith("node:")
          ? [[s.replace(/^.*\/src\//, "src/"), dependency.code.specifier]]
          : []
      )
    );
    assert.deepEqual(
      [...new Set(imports.map(([, module]) => module))].sort(),
      [],
      `${entry} loads these node: modules (${
        imports.map(([by, module]) => `${by}: ${module}`).join(", ")
      })`,
    );
  }
  // No module outside src/bundler/ names esbuild.
  const src = new URL("../../src/", import.meta.url).pathname;
  for (const file of await readdir(src, { recursive: true })) {
    if (!file.endsWith(".ts") || file.startsWith("bundler/")) continue;
    const text = await readFile(join(src, file), "utf8");
    assert.doesNotMatch(text, /["']esbuild["']/, `src/${file} imports esbuild`);
  }
});
