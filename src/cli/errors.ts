/** An error meant for the person at the terminal: printed without a stack, exit code 2. */
export class CliError extends Error {
  readonly code = 'CliError';
  constructor(message: string) {
    super(message);
    this.name = 'CliError';
  }
}

/** Ends a command that already printed its output with a given exit code (`sits lint`: 1 on error findings). */
export class ExitStatus extends Error {
  readonly code = 'ExitStatus';
  constructor(readonly exitCode: number) {
    super(`exit ${exitCode}`);
    this.name = 'ExitStatus';
  }
}
