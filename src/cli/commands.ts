/**
 * The one command table: each sub-command's usage, printed by
 * `pod-broker COMMAND --help` (exit 0) and summed up, one line each, in
 * `pod-broker --help`, and how it runs (`runCli` dispatches through it).
 * A command's module is loaded when it runs, so that serving loads none.
 *
 * @module
 */

import { POD_PERMISSIONS } from "../serving/permissions.ts";
import type { CreateSignalServer } from "./server_factory.ts";

/** A sub-command's synopsis (for the summary), usage text and runner. */
export interface CommandUsage {
  /** `pod-broker sign --key FILE ...`: the line of `pod-broker --help`. */
  synopsis: string;
  /** What it does, in one line. */
  summary: string;
  /** The rest of its `--help`: flags, exit codes, an example. */
  details: string;
  /** Runs it with the arguments after its name; resolves to the exit code. */
  run(args: string[], createSignalServer: CreateSignalServer): Promise<number>;
}

/** A sub-command other than `serve`. */
export type Command =
  | "keygen"
  | "sign"
  | "verify"
  | "publish"
  | "build"
  | "import"
  | "init"
  | "trust"
  | "dev"
  | "list"
  | "delete";

/** The pod author's and the operator's commands (`serve` has its own help). */
export const COMMANDS: Readonly<Record<Command, CommandUsage>> = {
  keygen: {
    synopsis: "pod-broker keygen [--out FILE]",
    summary: "make an Ed25519 key (PKCS#8 PEM)",
    details:
      `Writes a fresh key to FILE (mode 0600, never over an existing file) and
prints its public key on standard output: pub=$(pod-broker keygen --out FILE).
Without --out the key itself goes to standard output and its public key to
standard error.`,
    run: async (args) => (await import("./pod_tools.ts")).keygen(args),
  },
  sign: {
    synopsis:
      "pod-broker sign --key FILE [--name NAME] [--new-owner] [--out FILE] POD.html",
    summary: "sign a page into a pod",
    details:
      `Signs POD.html with the key in FILE (from 'pod-broker keygen --out FILE'),
to --out FILE or standard output. The manifest's createdAt is the time of
signing, always (--created-at is accepted and changes nothing). A page signed
before keeps its name unless --name is given. A page signed by another key is
refused unless --new-owner is given: only the key that published a pod can
update it. Warns about remote references (the pod's policy blocks them),
about a page larger than a broker's default limit, and about unknown
permissions in <meta name="pod-permissions"> (dropped: a broker ignores them).`,
    run: async (args) => (await import("./pod_tools.ts")).signCommand(args),
  },
  verify: {
    synopsis: "pod-broker verify POD.html",
    summary: "check a signed pod",
    details:
      `Prints the owner key, content digest, name, time and declared permissions
of a valid pod as JSON (exit 0); exit 1 with the reason when it is not a
valid pod.`,
    run: async (args) => (await import("./pod_tools.ts")).verifyCommand(args),
  },
  publish: {
    synopsis:
      "pod-broker publish --broker URL [--key FILE] [--name NAME] [--new-owner] [--update ID] POD.html|APP.xdc",
    summary: "upload a pod, or replace one",
    details: `Uploads POD.html to the broker at URL and prints the pod's URL.
A file signed already is sent as it is. With --key FILE it is signed (again)
with that key first, with the time of signing as createdAt and its name kept
unless --name is given; a file signed by another key needs --new-owner to be
re-signed. A page never signed, without --key, is signed with the key a
pod folder's deno.json names (the folder of POD.html or one above it), if
'pod-broker init' made that folder or 'pod-broker trust' confirmed it (a
folder that names a key without that is refused), else with a fresh key
that is then thrown away: the pod can never be updated. POD.html may be -
or /dev/stdin (standard input, read once); an empty page is refused.
With --update ID it replaces pod ID (PUT /ID) and keeps its URL: --key is
needed (else the folder's key), the key that published ID. The file is
re-signed with the time of signing (its name kept, else the stored pod's),
and the key signs the
statement that binds the new version to pod ID and to the version stored
now (from /ID/meta). A webxdc app (APP.xdc) is built first as 'import'
builds it, named by its manifest.toml unless --name is given. Exit 1 when
the broker refuses it; exit 2, before anything is uploaded, on bad usage
or an app that 'import' refuses.`,
    run: async (args) => (await import("./pod_tools.ts")).publish(args),
  },
  build: {
    synopsis:
      "pod-broker build ENTRY.html [--out FILE] [--key FILE] [--name NAME] [--permissions LIST]",
    summary: "bundle a page and what it loads into one file",
    details:
      `Writes ENTRY.html and everything it loads (scripts, stylesheets, images,
fonts, media, WebAssembly) as one self-contained HTML file: to FILE with
--out, else to standard output. With --key (a PKCS#8 PEM Ed25519 key, as
'pod-broker keygen' writes), or the key a pod folder's deno.json names
(only in a folder 'pod-broker init' made or 'pod-broker trust' confirmed;
elsewhere such a folder is refused), the output is a signed pod, its createdAt the time of
the build; --name sets its name. --permissions camera,microphone writes
<meta name="pod-permissions"> first in the head: the features the pod asks
for on its own origin, of
${POD_PERMISSIONS.join(", ")}
(unknown ones are dropped with a warning). Remote references are errors: download the
file into the folder, or npm install the package. Nothing outside the page's
folder is read (links resolved) but packages in node_modules, and a key file
is never inlined.`,
    run: // Serving never loads the bundler (esbuild, parse5).
      async (args) => (await import("./build.ts")).runBuild(args),
  },
  import: {
    synopsis:
      "pod-broker import APP.xdc|DIR [--out FILE] [--key FILE] [--name NAME]",
    summary: "build a webxdc app into a pod",
    details:
      `Builds a webxdc app (a .xdc zip, or the folder of its files) as 'build'
builds a page, to FILE with --out, else to standard output: its
<script src="webxdc.js"> becomes the pod's webxdc runtime (updates shared peer
to peer among the visitors of one link), classic scripts are inlined as they
are, and /assets/... paths resolve at the bundle's root. With --key the pod is
signed, named by --name or the manifest.toml's name. The bundle is bounded:
50 MiB inflated, 4,096 entries, no entry outside it, no entry inflating more
than 100 times its size. Exit 2 with one line when it is not a zip, has no
index.html, or breaks a bound.`,
    run: async (args) => (await import("./import.ts")).runImport(args),
  },
  init: {
    synopsis: "pod-broker init [DIR] [--key FILE]",
    summary: "make a pod folder ready for dev and build",
    details:
      `Writes index.html, app.ts, style.css and deno.json into DIR (the current
folder by default; it must be empty or missing). deno.json maps
pod-broker/client to the client build bundles, with its types, so 'deno
check app.ts' works, and names the author key in its "pod" member; the
folder is recorded in the user's configuration folder (folders.json, beside
keys/), so build and publish there sign with that key without --key. The
key lives outside the folder: FILE
with --key, else $XDG_CONFIG_HOME/pod-broker/keys/author.pem
(~/.config/pod-broker/keys/author.pem), made on first use (mode 0600) and
reused after. Exit 2 when DIR is not empty.`,
    run: async (args) => (await import("./init.ts")).init(args),
  },
  trust: {
    synopsis: "pod-broker trust [DIR]",
    summary: "let build and publish sign with the key a pod folder names",
    details:
      `Confirms that DIR (the current folder by default) is your pod folder: build
and publish there then sign with the key its deno.json names in "pod.key",
without --key. A folder 'pod-broker init' made needs no confirming; one you
copied, cloned or downloaded does, since anyone can write a deno.json that
names your key. Prints the key and its public key. The record is
$XDG_CONFIG_HOME/pod-broker/folders.json (~/.config/pod-broker/folders.json),
by the folder's real path: a moved folder needs confirming again. Exit 2
when DIR has no deno.json with a "pod" member naming a key that can be read.`,
    run: async (args) => (await import("./trust.ts")).trust(args),
  },
  dev: {
    synopsis:
      "pod-broker dev [ENTRY.html | APP.xdc | DIR] [--port N] [--hostname H] [--opaque]",
    summary: "serve a pod folder live: rebuilt on save, open tabs reload",
    details:
      `Runs a local broker (memory registry) that builds ENTRY.html (DIR/index.html;
the current folder by default), signs it with a throwaway key made for this
run (never the folder's key: its page could read what that key signed) and
serves it as a published pod, with the same headers: on its
own origin, http://LABEL.localhost:PORT/, or with --opaque at /ID on the
broker's host, as a broker without --pod-domain does. Every save rebuilds
it and open tabs reload; a build error shows in the terminal and in the
page. Two tabs of the printed URL (its #dev fragment names the room) are two
peers of one room. --port defaults to 8787 (0: any free port); --hostname
to 127.0.0.1. A webxdc app (APP.xdc) is built as 'import' builds it, and
again each time the file is written anew; one that 'import' refuses is
refused at the start (exit 2). Stop it with Ctrl-C.`,
    run: async (args, createSignalServer) =>
      (await import("./dev.ts")).dev(args, createSignalServer),
  },
  list: {
    synopsis:
      "pod-broker list (--data-dir DIR | --registry postgres [--database-url URL]) [--owner KEY]",
    summary: "the stored pods, one JSON record a line",
    details:
      `Lists the pods of a broker's registry, oldest first: the SQLite registry in
DIR (--registry sqlite is implied by --data-dir), or PostgreSQL (the URL, or
env DATABASE_URL). --owner keeps one owner's pods.`,
    run: async (args) => (await import("./operator.ts")).listCommand(args),
  },
  delete: {
    synopsis:
      "pod-broker delete ID (--data-dir DIR | --registry postgres [--database-url URL])",
    summary: "take a pod down: its URL answers 410",
    details:
      `Deletes pod ID from the registry a broker serves (see 'list' for the
flags); the broker answers 410 for it within a second. Exit 0 deleted,
1 no such pod or already deleted.`,
    run: async (args) => (await import("./operator.ts")).deleteCommand(args),
  },
};

/** Whether `name` is one of {@linkcode COMMANDS}. */
export function isCommand(name: string | undefined): name is Command {
  return name !== undefined && Object.hasOwn(COMMANDS, name);
}

/** The `--help` text of `command`. */
export function commandHelp(command: Command): string {
  const { synopsis, summary, details } = COMMANDS[command];
  return `Usage: ${synopsis}\n\n${summary[0]!.toUpperCase()}${
    summary.slice(1)
  }.\n\n${details}\n`;
}

/** Whether `args` ask for help (`--help` or `-h` before any `--`). */
export function asksForHelp(args: readonly string[]): boolean {
  const end = args.indexOf("--");
  const flags = end === -1 ? args : args.slice(0, end);
  return flags.includes("--help") || flags.includes("-h");
}
