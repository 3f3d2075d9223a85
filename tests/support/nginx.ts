// nginx as the tests run it (tls_front_test.ts, rolling_restart_journey.ts):
// Debian's binary in the foreground, its pid file, temp folders and logs in
// the test's own folder.

/** Debian's nginx (`nginx-light`). */
export const NGINX = "/usr/sbin/nginx";

/**
 * A whole nginx configuration around `http`, the directives of its `http`
 * block (a page's configuration, made to fit the test's ports): one worker,
 * errors on standard error, no access log, everything it writes in `dir`.
 */
export function nginxMain(dir: string, ...http: string[]): string {
  const temp = (name: string) => `${name}_temp_path ${dir}/${name};`;
  return [
    `pid ${dir}/nginx.pid;`,
    "error_log stderr warn;",
    "worker_processes 1;",
    "events { worker_connections 64; }",
    "http {",
    "access_log off;",
    ...["client_body", "proxy", "fastcgi", "uwsgi", "scgi"].map(temp),
    ...http,
    "}",
  ].join("\n");
}
