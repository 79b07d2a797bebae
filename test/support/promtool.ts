import { spawnSync } from 'node:child_process';

/**
 * `promtool check metrics` over a scrape: the problems it reports (names, types, help texts), one a line,
 * empty when there are none. promtool comes with Debian's `prometheus` package, which .ci/run installs.
 */
export function promtoolProblems(text: string): { status: number | null; problems: string } {
  const run = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8', timeout: 30_000 });
  if (run.error) throw new Error(`promtool did not run (${run.error.message}): apt-get install prometheus, as .ci/run does`);
  return { status: run.status, problems: `${run.stdout}${run.stderr}`.trim() };
}
