/** Debian's Chromium; the browser tests never download one. */
export const CHROMIUM = "/usr/bin/chromium";
