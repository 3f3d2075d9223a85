/**
 * The JavaScript MIME type essences of the HTML standard: a `<script>` whose
 * `type` is one of these (ASCII case-insensitively, whitespace stripped),
 * or empty, is a classic script. Shared by the builder (which scripts to
 * bundle) and the strict script policy (which scripts to hash).
 *
 * @module
 */

/** The JavaScript MIME types a classic `<script>` may name. */
export const JAVASCRIPT_TYPES: ReadonlySet<string> = new Set([
  "application/ecmascript",
  "application/javascript",
  "application/x-ecmascript",
  "application/x-javascript",
  "text/ecmascript",
  "text/javascript",
  "text/javascript1.0",
  "text/javascript1.1",
  "text/javascript1.2",
  "text/javascript1.3",
  "text/javascript1.4",
  "text/javascript1.5",
  "text/jscript",
  "text/livescript",
  "text/x-ecmascript",
  "text/x-javascript",
]);
