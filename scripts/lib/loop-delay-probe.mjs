// Loaded with `node --import` into a benchmarked gateway: watches the event loop's delay
// (perf_hooks, 1 ms resolution) and, on SIGUSR2, writes {p99, max, mean} in ms to the file
// named by LOOP_DELAY_OUT and starts over. Plain JavaScript: the bundle runs without tsx.
import { renameSync, writeFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';

const histogram = monitorEventLoopDelay({ resolution: 1 });
histogram.enable();
process.on('SIGUSR2', () => {
  const ms = (ns) => ns / 1e6;
  const out = { p99: ms(histogram.percentile(99)), max: ms(histogram.max), mean: ms(histogram.mean) };
  const file = process.env.LOOP_DELAY_OUT;
  writeFileSync(`${file}.tmp`, JSON.stringify(out));
  renameSync(`${file}.tmp`, file); // the reader never sees half a file
  histogram.reset();
});
