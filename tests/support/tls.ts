// A throwaway private CA and a server certificate it signed, made with
// Debian's openssl in a temp folder, for the tests that speak TLS.
import { join } from "node:path";

/** Debian's openssl. */
export const OPENSSL = "/usr/bin/openssl";

/** The files {@linkcode testCertificates} writes. */
export interface TestCertificates {
  /** The CA's certificate (PEM), for the client to trust. */
  caFile: string;
  /** The server's certificate (PEM). */
  certFile: string;
  /** The server's private key (PEM). */
  keyFile: string;
}

/**
 * Makes a CA valid for a day and a server certificate it signed, for
 * `subjectAltName` (such as `IP:127.0.0.1` or `DNS:localhost`), in `dir`.
 */
export async function testCertificates(
  dir: string,
  commonName: string,
  subjectAltName: string,
): Promise<TestCertificates> {
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"];
  const [caFile, caKey, certFile, keyFile, csr, ext] = [
    "ca.pem",
    "ca.key",
    "cert.pem",
    "key.pem",
    "leaf.csr",
    "leaf.ext",
  ].map((name) => join(dir, name)) as [
    string,
    string,
    string,
    string,
    string,
    string,
  ];
  await Deno.writeTextFile(
    ext,
    `subjectAltName=${subjectAltName}\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n`,
  );
  const ca = ["-subj", "/CN=pod-broker test CA", "-days", "1"];
  const caExtensions = [
    ["-addext", "basicConstraints=critical,CA:TRUE"],
    ["-addext", "keyUsage=critical,keyCertSign"],
  ].flat();
  const steps = [
    ["req", "-x509", ...ec, "-nodes", ...ca, ...caExtensions],
    ["-keyout", caKey, "-out", caFile],
    ["req", ...ec, "-nodes", "-subj", `/CN=${commonName}`],
    ["-keyout", keyFile, "-out", csr],
    ["x509", "-req", "-in", csr, "-CA", caFile, "-CAkey", caKey],
    ["-CAcreateserial", "-days", "1", "-extfile", ext, "-out", certFile],
  ];
  for (let i = 0; i < steps.length; i += 2) {
    const args = [...steps[i]!, ...steps[i + 1]!];
    const made = await new Deno.Command(OPENSSL, {
      args,
      cwd: dir,
      stdout: "null",
      stderr: "piped",
    }).output();
    if (made.code !== 0) {
      throw new Error(
        `openssl ${args[0]} failed: ${new TextDecoder().decode(made.stderr)}`,
      );
    }
  }
  return { caFile, certFile, keyFile };
}
