/// <reference lib="dom" />
// The fixture's module script: TypeScript, with an import.
import { greet, type Greeting } from "./greet.ts";

const greeting: Greeting = greet("pod");
document.getElementById("title")!.textContent = greeting.text;
document.getElementById("escape")!.textContent = greeting.tricky;
document.body.dataset.app = "done";
