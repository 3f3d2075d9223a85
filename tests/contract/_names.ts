// Display names that a text column, a driver or a JSON encoder may change:
// NUL and other control characters, line and paragraph separators, lone
// surrogates (a JSON string may hold one: "\ud800"), non-BMP characters,
// quotes and backslashes. Deterministic (no fast-check: the contract suite
// runs on Node too); the Deno registry tests draw from the same characters
// with fast-check.

/** Characters a store or an encoder may change, one string each. */
export const TRICKY_CHARACTERS: readonly string[] = [
  "\u0000",
  "\u0001",
  "\u0008",
  "\t",
  "\n",
  "\r",
  "\u001b",
  "\u001f",
  "\u007f",
  "\u0080",
  "\u0085",
  "\u00a0",
  "\u2028",
  "\u2029",
  "\ufeff",
  "\ufffd",
  "\ufffe",
  "\uffff",
  "\ud800",
  "\udbff",
  "\udc00",
  "\udfff",
  "\u{1f600}",
  "\u{1d11e}",
  "\u{10ffff}",
  '"',
  "\\",
  "'",
  "<",
  "a",
  "é",
  "中",
];

/** Names every run checks, whatever the seed. */
export const FIXED_NAMES: readonly string[] = [
  "a\u0000b",
  "\u0000",
  "\ud800",
  "x\udfffy",
  "line\u2028break",
  "\u{1f600}\u{10ffff}",
  "\u0000".repeat(200),
];

/**
 * FIXED_NAMES and `count` more names of 1 to 40 characters drawn from
 * TRICKY_CHARACTERS by xorshift32 from `seed`.
 */
export function trickyNames(count: number, seed: number): string[] {
  let x = seed >>> 0 || 1;
  const next = () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
  const names = [...FIXED_NAMES];
  for (let i = 0; i < count; i++) {
    const length = 1 + Math.floor(next() * 40);
    let name = "";
    for (let j = 0; j < length; j++) {
      name += TRICKY_CHARACTERS[Math.floor(next() * TRICKY_CHARACTERS.length)];
    }
    names.push(name);
  }
  return names;
}
