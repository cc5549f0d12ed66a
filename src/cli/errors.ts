/** An error meant for the person at the terminal: printed without a stack, exit code 2. */
export class CliError extends Error {
  readonly code = 'CliError';
  constructor(message: string) {
    super(message);
    this.name = 'CliError';
  }
}
