// A progress bar on a terminal, silence elsewhere (cron mail and CI logs stay clean). What is
// printed while a bar is drawn (human log lines, a chain step's summary) goes through `printAbove`,
// so the bar stays at the bottom. The bar is a cli-progress MultiBar, even alone: it redraws in
// place with relative cursor moves, where a SingleBar goes back at its end to a cursor position
// saved at its start and would write over the lines printed above it since.
import cliProgress from 'cli-progress';

export interface Progress {
  start(total: number, label: string): void;
  tick(count?: number): void;
  stop(): void;
}

export const silentProgress: Progress = { start() {}, tick() {}, stop() {} };

/** The bar on the terminal now, if any: one at a time per process. */
let drawn: { stream: NodeJS.WriteStream; bar: cliProgress.GenericBar } | null = null;

/**
 * Writes `text` (whole lines) to `stream`; on a terminal with a bar drawn, the bar's line is
 * cleared first and the bar drawn again below the text.
 */
export function printAbove(stream: NodeJS.WritableStream, text: string): void {
  if (drawn === null || !(stream as NodeJS.WriteStream).isTTY) {
    stream.write(text);
    return;
  }
  drawn.stream.write('\r\x1b[2K');
  stream.write(text);
  drawn.bar.render(true);
}

export function terminalProgress(stream: NodeJS.WriteStream = process.stdout): Progress {
  if (!stream.isTTY) return silentProgress;
  let bars: cliProgress.MultiBar | null = null;
  let bar: cliProgress.GenericBar | null = null;
  const stop = () => {
    bars?.stop();
    if (drawn?.bar === bar) drawn = null;
    bars = null;
    bar = null;
  };
  return {
    start(total, label) {
      stop();
      bars = new cliProgress.MultiBar(
        {
          format: `${label.padEnd(10)} [{bar}] {value}/{total} {percentage}% eta {eta_formatted}`,
          stream,
          hideCursor: true,
          // The terminal keeps wrapping long lines (a log line printed above is not cut at its
          // edge); the bar itself is cut to the terminal's width.
          linewrap: true,
        },
        cliProgress.Presets.shades_classic,
      );
      bar = bars.create(total, 0);
      drawn = { stream, bar };
    },
    tick(count = 1) {
      bar?.increment(count);
    },
    stop,
  };
}
