// Mistakes in the files operators edit (capacity and site files), as the commands say them: one
// `file:line:column: rule` line each on stderr, then what they cost; and the same in --json.
import type { InputFileError } from '../yaml.js';

/** Every error on its line, then `N errors in M <noun>s: <consequence>`. */
export function printFileErrors(errors: readonly InputFileError[], noun: string, consequence: string): void {
  for (const error of errors) process.stderr.write(`${error.message}\n`);
  const files = new Set(errors.map((e) => e.file)).size;
  process.stderr.write(
    `${errors.length} error${errors.length === 1 ? '' : 's'} in ${files} ${noun}${files === 1 ? '' : 's'}: ${consequence}\n`,
  );
}

export function fileErrorsJson(errors: readonly InputFileError[]) {
  return errors.map((e) => ({ file: e.file, line: e.line, column: e.column, rule: e.rule }));
}
