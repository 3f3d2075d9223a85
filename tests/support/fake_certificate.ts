// Deno has no WebRTC, and the browser client takes a peer's id from its
// certificate's fingerprint: a stand-in for the one call it makes.

/**
 * Puts an `RTCPeerConnection` on the global object whose
 * `generateCertificate` gives a certificate with a SHA-256 fingerprint of
 * the 32 bytes `byteAt(0)` to `byteAt(31)`.
 *
 * @param byteAt Each byte of the fingerprint, 0 to 255.
 */
export function fakeCertificate(byteAt: (index: number) => number): void {
  const value = Array.from(
    { length: 32 },
    (_, i) => byteAt(i).toString(16).padStart(2, "0"),
  ).join(":");
  Object.assign(globalThis, {
    RTCPeerConnection: {
      generateCertificate: () =>
        Promise.resolve({
          getFingerprints: () => [{ algorithm: "sha-256", value }],
        }),
    },
  });
}
