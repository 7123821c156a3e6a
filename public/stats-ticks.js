// Statistics tab: the y-axis steps and tick labels of the uPlot charts (pure; stats.js uses
// them, test/ui-stats-ticks.test.ts runs this file as it ships). uPlot picks the first step in
// `incrs` that leaves room between ticks, then passes it to the label function: counts step in
// whole numbers, durations, money and percentages print as many decimals as their step needs.
'use strict';
(() => {
  /** 1, 2, 5 × 10^k from `from` to 10^15 (uPlot knows these steps' decimals, so splits stay exact). */
  const steps125 = (fromExp) => {
    const out = [];
    for (let e = fromExp; e <= 15; e++) for (const m of [1, 2, 5]) out.push(+(m * 10 ** e).toFixed(Math.max(0, -e)));
    return out;
  };
  /** Decimals a step needs: 0.05 → 2, 0.5 → 1, 20 → 0. */
  const decimalsOf = (step) => {
    const text = String(+Number(step).toFixed(10));
    const dot = text.indexOf('.');
    return dot < 0 ? 0 : text.length - dot - 1;
  };
  const SECOND = 1000;

  /** `v / unit` with the decimals the step needs, then the suffix: one unit for the whole axis. */
  const scaled = (values, step, unit, suffix, zero = `0${suffix}`) => {
    const decimals = decimalsOf(step / unit);
    return values.map((v) => (v === 0 ? zero : `${(v / unit).toFixed(decimals)}${suffix}`));
  };

  const count = {
    incrs: steps125(0),
    /** Whole steps; 1.2k or 3M once the axis passes a thousand or a million. */
    labels: (values, step) => {
      const top = Math.max(0, ...values.map(Math.abs));
      if (top >= 1e6) return scaled(values, step, 1e6, 'M', '0');
      return top >= 1e3 ? scaled(values, step, 1e3, 'k', '0') : scaled(values, step, 1, '');
    },
  };

  // milliseconds: the call log keeps whole ms, so steps start at 1 ms; then 10 s, 15 s, … an hour
  const duration = {
    incrs: [...steps125(0).filter((s) => s < 10 * SECOND), 10e3, 15e3, 30e3, 60e3, 120e3, 300e3, 600e3, 1800e3, 3600e3],
    /** ms while every tick is under a second, else seconds. */
    labels: (values, step) => (values.some((v) => Math.abs(v) >= SECOND)
      ? scaled(values, step, SECOND, ' s') : scaled(values, step, 1, ' ms')),
  };

  const money = {
    incrs: steps125(-6),
    labels: (values, step) => values.map((v) => (v === 0 ? '$0' : `$${v.toFixed(Math.max(2, decimalsOf(step)))}`)),
  };

  const percent = {
    incrs: steps125(0),
    labels: (values, step) => scaled(values, step, 1, ' %'),
  };

  const HOUR = 3600;
  const DAY = 24 * HOUR;
  /** x-axis steps (seconds) of a time chart whose points are `step` apart: whole points only. */
  const timeIncrs = (step) => [HOUR, 2 * HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR, DAY, 2 * DAY, 7 * DAY, 14 * DAY, 28 * DAY,
    56 * DAY, 91 * DAY, 182 * DAY, 364 * DAY].filter((s) => s >= step);

  /** The y-axis options of one chart kind: uPlot `incrs` and `values`. */
  const KINDS = { count, duration, money, percent };
  const axisFor = (kind) => {
    const def = KINDS[kind] || count;
    return { incrs: def.incrs, values: (u, splits, axisIdx, space, step) => def.labels(splits, step) };
  };

  globalThis.gwStatsTicks = Object.freeze({ axisFor, decimalsOf, timeIncrs, ...KINDS });
})();
