// An origin per pod in Debian's Chromium (see pod_domain_journey.ts): with
// `--pod-domain localhost`, each pod has its own origin and its storage. The
// journey runs in a child process, inside a network namespace that has only
// loopback when this is root and `unshare` works.
import { journeyTest } from "../support/browser.ts";

journeyTest(
  "the origin per pod browser test",
  "podDomain localhost: Chromium lands on the pod's origin, keeps its storage apart, refuses service workers, and a 410 clears it",
  "pod_domain_journey.ts",
);
