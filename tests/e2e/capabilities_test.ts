// What a pod may do (docs/authors/capabilities.md), tried in Debian's
// Chromium from inside a pod, on a broker's host and on a pod's own origin
// (see tests/support/capabilities_journey.ts). The journey runs in a child
// process, inside a network namespace that has only loopback when this is
// root and `unshare` works.
import { journeyTest } from "../support/browser.ts";

journeyTest(
  "the capabilities browser test",
  "a pod's capabilities in Chromium are those docs/authors/capabilities.md lists, on both hosts",
  "capabilities_journey.ts",
);
