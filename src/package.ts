// efsync's own package: its root folder and its version, found from this module's place (src/ when
// run from source, dist/src/ when built), so that both read the same package.json.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The first folder up from this module with a package.json; the filesystem's root if none has one. */
export function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir);
  return dir;
}

/** The version in efsync's package.json, as `efsync --version` prints it. */
export function packageVersion(): string {
  const { version } = JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string };
  return version;
}
