/**
 * The error for bad command-line input or a setup problem the user can fix:
 * the CLI prints its message on one line and exits 2.
 *
 * @module
 */

/** Bad command-line input; `runCli` prints it and exits 2. */
export class UsageError extends Error {
  /** Whether the line ends with "(see --help)": false when it says what to do. */
  readonly seeHelp: boolean;

  /**
   * @param message What is wrong, as "Cannot <action>: <state>", or what to
   * do about it.
   * @param seeHelp Whether to point at `--help` (false when the message
   * already gives the next step).
   */
  constructor(message: string, seeHelp = true) {
    super(message);
    this.name = "UsageError";
    this.seeHelp = seeHelp;
  }
}
