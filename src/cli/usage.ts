/**
 * Each sub-command's usage, printed by `pod-broker COMMAND --help` (exit 0)
 * and summed up, one line each, in `pod-broker --help`.
 *
 * @module
 */

import { POD_PERMISSIONS } from "../serving/permissions.ts";

/** A sub-command's synopsis (for the summary) and its full usage text. */
export interface CommandUsage {
  /** `pod-broker sign --key FILE ...`: the line of `pod-broker --help`. */
  synopsis: string;
  /** What it does, in one line. */
  summary: string;
  /** The rest of its `--help`: flags, exit codes, an example. */
  details: string;
}

/** A sub-command other than `serve`. */
export type Command =
  | "keygen"
  | "sign"
  | "verify"
  | "publish"
  | "build"
  | "list"
  | "delete";

/** The pod author's and the operator's commands (`serve` has its own help). */
export const COMMANDS: Readonly<Record<Command, CommandUsage>> = {
  keygen: {
    synopsis: "pod-broker keygen [--out FILE]",
    summary: "make an Ed25519 key (PKCS#8 PEM)",
    details:
      `Writes a fresh key to FILE (mode 0600, never over an existing file), or to
standard output without --out; prints its public key on standard error.`,
  },
  sign: {
    synopsis:
      "pod-broker sign --key FILE [--name NAME] [--created-at] [--out FILE] POD.html",
    summary: "sign a page into a pod",
    details:
      `Signs POD.html with the key in FILE (from 'pod-broker keygen --out FILE'),
to --out FILE or standard output. A page signed before keeps its name unless
--name is given; --created-at (or a time in the old manifest) stamps the time
of signing. Warns about remote references (the pod's policy blocks them),
about a page larger than a broker's default limit, and about unknown
permissions in <meta name="pod-permissions"> (dropped: a broker ignores them).`,
  },
  verify: {
    synopsis: "pod-broker verify POD.html",
    summary: "check a signed pod",
    details:
      `Prints the owner key, content digest, name, time and declared permissions
of a valid pod as JSON (exit 0); exit 1 with the reason when it is not a
valid pod.`,
  },
  publish: {
    synopsis:
      "pod-broker publish --broker URL [--key FILE] [--name NAME] [--created-at] [--update ID] POD.html",
    summary: "sign (with a fresh key if none) and upload",
    details:
      `Signs POD.html (a page signed before keeps its name unless --name is given;
the time becomes the time of signing) and uploads it to the broker at URL;
prints the pod's URL. With --update ID it replaces pod ID (PUT /ID) instead:
with --key the file is re-signed with a fresh time, keeping its name (else
the stored pod's); without --key it is sent as signed. Exit 1 when the
broker refuses it.`,
  },
  build: {
    synopsis:
      "pod-broker build ENTRY.html [--out FILE] [--key FILE] [--name NAME] [--created-at] [--permissions LIST]",
    summary: "bundle a page and what it loads into one file",
    details:
      `Writes ENTRY.html and everything it loads (scripts, stylesheets, images,
fonts, media, WebAssembly) as one self-contained HTML file: to FILE with
--out, else to standard output. With --key (a PKCS#8 PEM Ed25519 key, as
'pod-broker keygen' writes) the output is a signed pod; --name and
--created-at set its manifest's name and time. --permissions camera,microphone
writes <meta name="pod-permissions"> first in the head: the features the pod
asks for on its own origin, of
${POD_PERMISSIONS.join(", ")}
(unknown ones are dropped with a warning). Remote references are errors:
download the file into the folder, or npm install the package.`,
  },
  list: {
    synopsis:
      "pod-broker list (--data-dir DIR | --registry postgres [--database-url URL]) [--owner KEY]",
    summary: "the stored pods, one JSON record a line",
    details:
      `Lists the pods of a broker's registry, oldest first: the SQLite registry in
DIR (--registry sqlite is implied by --data-dir), or PostgreSQL (the URL, or
env DATABASE_URL). --owner keeps one owner's pods.`,
  },
  delete: {
    synopsis:
      "pod-broker delete ID (--data-dir DIR | --registry postgres [--database-url URL])",
    summary: "take a pod down: its URL answers 410",
    details:
      `Deletes pod ID from the registry a broker serves (see 'list' for the
flags); the broker answers 410 for it within a second. Exit 0 deleted,
1 no such pod or already deleted.`,
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
