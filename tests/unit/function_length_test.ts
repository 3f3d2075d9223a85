// Short functions, kept: no function in src/ is over 120 lines. Counted with
// the TypeScript compiler over function declarations, methods, accessors,
// constructors, arrow functions and function expressions, from the first line
// of the function to its last (leading comments not counted).
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import ts from "typescript";
import { tsFiles } from "../support/source_files.ts";

const SRC = new URL("../../src/", import.meta.url).pathname;
const LIMIT = 120;

/** A function's name as a reader would look for it, or its kind. */
function nameOf(node: ts.FunctionLikeDeclaration, file: ts.SourceFile): string {
  if (node.name) return node.name.getText(file);
  const parent = node.parent;
  if (
    (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) ||
      ts.isPropertyDeclaration(parent)) && parent.name
  ) return parent.name.getText(file);
  return ts.isArrowFunction(node) ? "(arrow)" : "(function)";
}

/** Every function of one file with its length in lines. */
function functionLengths(
  path: string,
  text: string,
): { name: string; line: number; lines: number }[] {
  const file = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
  const found: { name: string; line: number; lines: number }[] = [];
  const visit = (node: ts.Node) => {
    if (
      (ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node) ||
        ts.isArrowFunction(node) || ts.isFunctionExpression(node) ||
        ts.isConstructorDeclaration(node) || ts.isGetAccessor(node) ||
        ts.isSetAccessor(node)) && node.body
    ) {
      const first = file.getLineAndCharacterOfPosition(node.getStart(file));
      const last = file.getLineAndCharacterOfPosition(node.getEnd());
      found.push({
        name: nameOf(node, file),
        line: first.line + 1,
        lines: last.line - first.line + 1,
      });
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

Deno.test("no function in src/ is over 120 lines", async () => {
  const files = await tsFiles(SRC);
  assert.ok(files.length > 50);
  const all: { where: string; lines: number }[] = [];
  for (const path of files) {
    for (const fn of functionLengths(path, await readFile(path, "utf8"))) {
      all.push({
        where: `${path.slice(SRC.length)}:${fn.line} ${fn.name}`,
        lines: fn.lines,
      });
    }
  }
  assert.ok(all.length > 500, "the walk finds the functions");
  const long = all.filter((fn) => fn.lines > LIMIT)
    .sort((a, b) => b.lines - a.lines)
    .map((fn) => `${fn.where}: ${fn.lines} lines`);
  assert.deepEqual(long, []);
});

Deno.test("the function counter counts arrows, methods and expressions", () => {
  const body = (n: number) => "  x();\n".repeat(n);
  const text = `function a() {\n${body(3)}}\n` +
    `const b = () => {\n${body(1)}};\n` +
    `class C {\n  m() {\n${body(2)}  }\n}\n` +
    `const d = function () {\n${body(4)}};\n`;
  assert.deepEqual(
    functionLengths("x.ts", text).map((fn) => [fn.name, fn.lines]),
    [["a", 5], ["b", 3], ["m", 4], ["d", 6]],
  );
});
