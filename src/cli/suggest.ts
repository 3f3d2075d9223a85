/**
 * "Did you mean …?" for a mistyped flag or command: the nearest known word
 * by edit distance, when it is near enough to be a typo.
 *
 * @module
 */

/** The largest edit distance still read as a typo. */
const MAX_DISTANCE = 2;

/** Words longer than this are not compared (each comparison is quadratic). */
const MAX_LENGTH = 64;

/**
 * The Levenshtein distance between two words (insertions, deletions and
 * substitutions each count one).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { editDistance } from "./suggest.ts";
 *
 * assert.equal(editDistance("prot", "port"), 2);
 * assert.equal(editDistance("port", "port"), 0);
 * ```
 */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(
        previous[j]! + 1,
        current[j - 1]! + 1,
        previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    previous = current;
  }
  return previous[b.length]!;
}

/**
 * The known word nearest to `word`, if it is at most two edits away (the
 * first in `known` order on a tie): a flag (without dashes) or a command.
 *
 * @param word The flag (without dashes) or command given.
 * @param known The flags (without dashes) or commands that exist.
 * @returns The suggestion, or undefined.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { suggest } from "./suggest.ts";
 *
 * assert.equal(suggest("prot", ["port", "hostname"]), "port");
 * assert.equal(suggest("bogus", ["port", "hostname"]), undefined);
 * ```
 */
export function suggest(
  word: string,
  known: readonly string[],
): string | undefined {
  if (word.length > MAX_LENGTH) return undefined;
  let best: string | undefined;
  let bestDistance = MAX_DISTANCE + 1;
  for (const candidate of known) {
    const distance = editDistance(word, candidate);
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}
