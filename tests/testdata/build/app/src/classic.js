// A classic script: its top-level names stay global, for inline handlers.
// deno-lint-ignore no-unused-vars
function fixtureAnswer() {
  return 6 * 7;
}
document.body.dataset.classic = "done";
