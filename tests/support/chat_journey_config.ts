/** Debian's Chromium; the browser tests never download one. */
export const CHROMIUM = "/usr/bin/chromium";

/** Flags of every browser test: headless, quiet, loopback ICE allowed. */
export const CHROMIUM_FLAGS: string[] = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--allow-loopback-in-peer-connection",
];
