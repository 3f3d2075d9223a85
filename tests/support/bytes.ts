// Bytes for the tests: one concatenation.

/** `parts` one after the other; a string counts as its UTF-8 bytes. */
export function concatBytes(
  ...parts: (Uint8Array | string)[]
): Uint8Array<ArrayBuffer> {
  const bytes = parts.map((part) =>
    typeof part === "string" ? new TextEncoder().encode(part) : part
  );
  const out = new Uint8Array(bytes.reduce((n, part) => n + part.length, 0));
  let at = 0;
  for (const part of bytes) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}
