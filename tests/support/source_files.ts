// The TypeScript files of a folder, for the tests that hold the layout of
// src/: file and function lengths, and the layers.
import { readdir } from "node:fs/promises";
import { join } from "node:path";

/** Every `.ts` file below `dir`, as paths that start with `dir`. */
export async function tsFiles(dir: string): Promise<string[]> {
  const files: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) files.push(...await tsFiles(path));
    else if (entry.name.endsWith(".ts")) files.push(path);
  }
  return files;
}
