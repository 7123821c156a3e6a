/**
 * The Statistics charts' y-axis steps and labels (public/stats-ticks.js, run as it ships):
 * counts step in whole numbers, durations in whole ms or seconds with the decimals their step
 * needs, and no two ticks of an axis ever read the same.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { runInNewContext } from 'node:vm';

type Labels = (values: number[], step: number) => string[];
interface Kind {
  incrs: number[];
  labels: Labels;
}
interface Ticks {
  axisFor(kind: string): {
    incrs: number[];
    values: (u: unknown, splits: number[], i: number, space: number, step: number) => string[];
  };
  decimalsOf(step: number): number;
  timeIncrs(step: number): number[];
  count: Kind;
  duration: Kind;
  money: Kind;
  percent: Kind;
}

const FILE = join(dirname(fileURLToPath(import.meta.url)), '..', 'public', 'stats-ticks.js');
const sandbox: { gwStatsTicks?: Ticks } = {};
runInNewContext(readFileSync(FILE, 'utf8'), sandbox);
const ticks = sandbox.gwStatsTicks!;

/** The splits uPlot makes for [0, max] with a step: 0, step, 2·step, … up to max. */
const splits = (max: number, step: number) =>
  Array.from({ length: Math.floor(max / step + 1e-9) + 1 }, (_, i) => +(i * step).toFixed(6));

test('counts: whole steps only, so 2 calls read 0, 1, 2 and never 2, 2, 1, 1, 0', () => {
  assert.ok(
    ticks.count.incrs.every((s) => Number.isInteger(s) && s >= 1),
    'whole steps',
  );
  assert.equal(ticks.count.incrs[0], 1);
  assert.deepEqual(ticks.count.labels([0, 1, 2], 1), ['0', '1', '2']);
  assert.deepEqual(ticks.count.labels([0, 20, 40, 60], 20), ['0', '20', '40', '60']);
  assert.deepEqual(ticks.count.labels([0, 500, 1000, 1500], 500), ['0', '0.5k', '1.0k', '1.5k']);
  assert.deepEqual(ticks.count.labels([1000, 1050, 1100], 50), ['1.00k', '1.05k', '1.10k']);
  assert.deepEqual(ticks.count.labels([0, 2e6, 4e6], 2e6), ['0', '2M', '4M']);
});

test('durations: whole ms under a second, seconds with the decimals the step needs above', () => {
  assert.ok(
    ticks.duration.incrs.every((s) => Number.isInteger(s) && s >= 1),
    'the call log keeps whole ms',
  );
  assert.deepEqual(ticks.duration.labels([0, 1], 1), ['0 ms', '1 ms']);
  assert.deepEqual(ticks.duration.labels([0, 200, 400, 600, 800], 200), [
    '0 ms',
    '200 ms',
    '400 ms',
    '600 ms',
    '800 ms',
  ]);
  assert.deepEqual(ticks.duration.labels([0, 500, 1000, 1500], 500), ['0 s', '0.5 s', '1.0 s', '1.5 s']);
  assert.deepEqual(ticks.duration.labels([0, 2000, 4000], 2000), ['0 s', '2 s', '4 s']);
  assert.deepEqual(ticks.duration.labels([0, 15_000, 30_000], 15_000), ['0 s', '15 s', '30 s']);
});

test('money and hit rate: decimals from the step', () => {
  assert.deepEqual(ticks.money.labels([0, 0.002, 0.004], 0.002), ['$0', '$0.002', '$0.004']);
  assert.deepEqual(ticks.money.labels([0, 0.5, 1], 0.5), ['$0', '$0.50', '$1.00']);
  assert.deepEqual(ticks.percent.labels([0, 20, 40], 20), ['0 %', '20 %', '40 %']);
  assert.equal(ticks.decimalsOf(0.05), 2);
  assert.equal(ticks.decimalsOf(20), 0);
});

test('whatever the range and step uPlot picks, no two ticks of an axis read the same', () => {
  const maxima = [1, 1.1, 2, 2.2, 3, 7, 13, 99, 999, 1001, 1234, 9999, 65_000, 2.5e6, 123e6];
  for (const [name, kind] of Object.entries({
    count: ticks.count,
    duration: ticks.duration,
    money: ticks.money,
    percent: ticks.percent,
  })) {
    for (const max of maxima) {
      for (const step of kind.incrs.filter((s) => s <= max && max / s <= 50)) {
        const values = splits(max, step);
        const labels = kind.labels(values, step);
        assert.equal(new Set(labels).size, labels.length, `${name} max ${max} step ${step}: ${labels.join(', ')}`);
      }
    }
  }
});

test('axisFor gives uPlot its incrs and a values(u, splits, axisIdx, space, step) function', () => {
  const axis = ticks.axisFor('duration');
  assert.equal(axis.incrs, ticks.duration.incrs);
  assert.deepEqual(axis.values(null, [0, 1, 2], 1, 30, 1), ['0 ms', '1 ms', '2 ms']);
  assert.deepEqual(ticks.axisFor('count').values(null, [0, 1, 2], 1, 30, 1), ['0', '1', '2']);
});

test('time axis: no tick finer than the data step, so a per-day chart never reads 16:00, 00:00, 08:00', () => {
  const DAY = 86_400;
  const daily = ticks.timeIncrs(DAY);
  assert.equal(daily[0], DAY);
  assert.ok(
    daily.every((s) => s % DAY === 0),
    'whole days',
  );
  const hourly = ticks.timeIncrs(3600);
  assert.equal(hourly[0], 3600);
  assert.ok(
    hourly.every((s) => s % 3600 === 0),
    'whole hours',
  );
  assert.ok(hourly.includes(DAY) && hourly.at(-1)! >= 364 * DAY, 'a long range still finds a step');
});
