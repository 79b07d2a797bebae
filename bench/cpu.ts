import fs from 'node:fs';

const TICKS_PER_SECOND = 100;

/** CPU seconds (user + system) used so far by each process whose command name matches, summed by label. */
export function cpuSecondsByProcess(labels: Record<string, (comm: string, cmdline: string, pid: number) => boolean>): Record<string, number> {
  const totals: Record<string, number> = Object.fromEntries(Object.keys(labels).map((label) => [label, 0]));
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const seconds = (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
      const cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ');
      for (const [label, matches] of Object.entries(labels)) {
        if (matches(comm, cmdline, Number(entry))) {
          totals[label]! += seconds;
          break;
        }
      }
    } catch {
      // the process ended while we looked
    }
  }
  return totals;
}

export function cpuDelta(before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.keys(after).map((label) => [label, Math.max(0, after[label]! - (before[label] ?? 0))]));
}

/** The processes of a stack that `startBenchStack` starts, and this benchmark's own. */
export const STACK_PROCESSES = {
  // npm start's process: the API, and the worker too unless it runs in a process of its own.
  'start (npm start)': (_comm: string, cmdline: string) => cmdline.includes('src/main/start.ts'),
  api: (_comm: string, cmdline: string) => cmdline.includes('src/main/api.ts'),
  worker: (_comm: string, cmdline: string) => cmdline.includes('src/main/worker.ts'),
  temporal: (comm: string) => comm === 'temporal',
  postgres: (comm: string) => comm === 'postgres',
  'bench client': (_comm: string, _cmdline: string, pid: number) => pid === process.pid,
};
