// The table of docs/authors/capabilities.md as the tests read it: each row
// names, in a comment in its first cell (`<!-- probe: localStorage cookie
// -->`), the checks of the probe pod (tests/testdata/capabilities_probe.html)
// or of the journey that try it, and its cells say what each browser does on
// each host, the pod's own origin with and without a declaration of the
// powerful features (`<meta name="pod-permissions">`): `yes`, `no` or `asks`
// (the browser asks the visitor), or one answer per browser (`Chromium no,
// Firefox asks`). The capabilities journey asserts every check against its
// row, so the table cannot drift.

/** What a browser does with a row's capability. */
export type Verdict = "yes" | "no" | "asks";
/** The browsers the table speaks of. */
export type BrowserName = "chromium" | "firefox";
/**
 * The ways a broker serves a pod, as the table's columns name them: on its
 * own host (where a declaration changes nothing), and on a pod's own
 * origin without and with the pod declaring every feature it may ask for.
 */
export type Host =
  | "broker's host"
  | "pod's own origin"
  | "pod's own origin, declared";

/** The browsers and hosts, in the order the tests try them. */
export const BROWSERS: readonly BrowserName[] = ["chromium", "firefox"];
/** The hosts, as the table's headers name them. */
export const HOSTS: readonly Host[] = [
  "broker's host",
  "pod's own origin",
  "pod's own origin, declared",
];

/** One row of the table. */
export interface CapabilityRow {
  /** The first cell, without the comment. */
  what: string;
  /** The checks that try it. */
  probes: string[];
  /** What each browser does on each host. */
  expected: Record<Host, Record<BrowserName, Verdict>>;
}

/** The checks the journey does itself (clicks, downloads, framing). */
export const JOURNEY_PROBES: readonly string[] = [
  "targetBlank",
  "formSend",
  "download",
  "framed",
];

/** The page, relative to the repository's root. */
export const CAPABILITIES_PAGE = "docs/authors/capabilities.md";

const VERDICT = /^(yes|no|asks)$/;
const PER_BROWSER = /^Chromium (yes|no|asks), Firefox (yes|no|asks)$/;
const PROBE = /<!-- probe: ([\w ]+?) -->/;

function cells(line: string): string[] {
  return line.trim().replace(/^\||\|$/g, "").split("|").map((cell) =>
    cell.trim()
  );
}

function verdicts(cell: string, where: string): Record<BrowserName, Verdict> {
  const both = VERDICT.exec(cell);
  if (both) {
    return { chromium: both[1] as Verdict, firefox: both[1] as Verdict };
  }
  const each = PER_BROWSER.exec(cell);
  if (each) {
    return { chromium: each[1] as Verdict, firefox: each[2] as Verdict };
  }
  throw new Error(
    `${where}: '${cell}' is neither yes, no, asks nor 'Chromium X, Firefox Y'`,
  );
}

/**
 * The rows of the page's first table under "## The table".
 *
 * @param markdown The page's text.
 * @returns Its rows, in order.
 * @throws {Error} When the table is missing, a row names no probe, or a
 * cell is not a verdict.
 */
export function capabilityRows(markdown: string): CapabilityRow[] {
  const section = markdown.split(/^## The table$/m)[1]?.split(/^## /m)[0];
  if (section === undefined) throw new Error("no '## The table' section");
  const lines = section.split("\n").filter((line) => line.startsWith("|"));
  const header = cells(lines[0] ?? "");
  const columns = HOSTS.map((host) => header.indexOf(host));
  if (columns.includes(-1)) {
    throw new Error(`the table's header lacks ${HOSTS.join(" or ")}`);
  }
  return lines.slice(2).map((line) => {
    const row = cells(line);
    const what = row[0]!.replace(PROBE, "").trim();
    const probes = PROBE.exec(row[0]!)?.[1]?.split(" ");
    if (!probes) throw new Error(`'${what}' names no probe`);
    const expected = Object.fromEntries(
      HOSTS.map((host, i) => [host, verdicts(row[columns[i]!]!, what)]),
    ) as Record<Host, Record<BrowserName, Verdict>>;
    return { what, probes, expected };
  });
}
