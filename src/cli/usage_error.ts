/**
 * The error for bad command-line input or a setup problem the user can fix:
 * the CLI prints its message on one line, with "(see --help)", and exits 2.
 *
 * @module
 */

/** Bad command-line input; `runCli` prints it and exits 2. */
export class UsageError extends Error {
  /**
   * @param message What is wrong, as "Cannot <action>: <state>", and what to
   * do about it when there is a next step.
   */
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}
