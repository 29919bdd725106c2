// A progress bar on a terminal, silence elsewhere (cron mail and CI logs stay clean).
import cliProgress from 'cli-progress';

export interface Progress {
  start(total: number, label: string): void;
  tick(count?: number): void;
  stop(): void;
}

export const silentProgress: Progress = { start() {}, tick() {}, stop() {} };

export function terminalProgress(stream: NodeJS.WriteStream = process.stdout): Progress {
  if (!stream.isTTY) return silentProgress;
  let bar: cliProgress.SingleBar | null = null;
  return {
    start(total, label) {
      bar?.stop();
      bar = new cliProgress.SingleBar(
        {
          format: `${label.padEnd(10)} [{bar}] {value}/{total} {percentage}% eta {eta_formatted}`,
          stream,
          hideCursor: true,
        },
        cliProgress.Presets.shades_classic,
      );
      bar.start(total, 0);
    },
    tick(count = 1) {
      bar?.increment(count);
    },
    stop() {
      bar?.stop();
      bar = null;
    },
  };
}
