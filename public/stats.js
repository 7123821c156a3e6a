// Statistics tab: draws the time-series charts with uPlot from the numbers the server rendered
// (a data-json attribute, escaped by the template). The tables on the page hold the same
// numbers, so nothing here is the only way to read them. No markup is built from data.
'use strict';
(() => {
  const holder = document.getElementById('stats-data');
  if (!holder || typeof window.uPlot === 'undefined' || typeof window.gwStatsTicks === 'undefined') return;
  const uPlot = window.uPlot;
  const ticks = window.gwStatsTicks;
  const data = JSON.parse(holder.getAttribute('data-json'));
  const step = data.step === 'hour' ? 3600 : 86400;

  const css = (name) => getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  const int = (v) => (v == null ? '–' : Math.round(v).toLocaleString('en-US'));
  const ms = (v) => (v == null ? '–' : v < 1000 ? `${Math.round(v)} ms` : `${+(v / 1000).toFixed(v < 10000 ? 2 : 1)} s`);
  const usd = (v) => (v == null ? '–' : v === 0 ? '$0' : v < 0.01 ? `$${v.toFixed(4)}` : `$${v.toFixed(2)}`);
  const pct = (v) => (v == null ? '–' : `${v.toFixed(1)} %`);

  const CHARTS = {
    calls: { axis: 'count', series: [
      { label: 'calls', key: 'calls', color: '--s-calls', bars: true, fmt: int },
      { label: 'errors', key: 'errors', color: '--s-errors', bars: true, fmt: int },
    ] },
    tokens: { axis: 'count', series: [
      { label: 'in', key: 'prompt', color: '--s-in', fmt: int },
      { label: 'out', key: 'completion', color: '--s-out', fmt: int },
    ] },
    cost: { axis: 'money', series: [{ label: 'cost', key: 'cost', color: '--s-cost', fill: true, fmt: usd }] },
    duration: { axis: 'duration', series: [
      { label: 'p50', key: 'p50', color: '--s-p50', fmt: ms },
      { label: 'p95', key: 'p95', color: '--s-p95', fmt: ms, dash: [6, 4] },
    ] },
    ttft: { axis: 'duration', series: [
      { label: 'p50', key: 'ttft50', color: '--s-ttft', fmt: ms },
      { label: 'p95', key: 'ttft95', color: '--s-ttft95', fmt: ms, dash: [6, 4] },
    ] },
    hit: { axis: 'percent', range: [0, 100], series: [{ label: 'hit rate', key: 'hit', color: '--s-hit', fill: true, fmt: pct }] },
  };

  const bars = uPlot.paths && uPlot.paths.bars ? uPlot.paths.bars({ size: [0.7, 48], align: 0 }) : null;
  const plots = [];

  function options(def, width) {
    const muted = css('--muted');
    const line = css('--line');
    const axis = { stroke: muted, grid: { stroke: line, width: 1 }, ticks: { stroke: line, width: 1 }, font: '12px system-ui, sans-serif' };
    return {
      width,
      height: width < 500 ? 200 : 220,
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1e3), 'Etc/UTC'),
      cursor: { sync: { key: 'gw-stats' }, points: { size: 7 } },
      // the legend shows the newest period until the pointer picks another
      hooks: {
        ready: [(u) => u.setLegend({ idx: data.t.length - 1 })],
        setCursor: [(u) => { if (u.cursor.idx == null) u.setLegend({ idx: data.t.length - 1 }); }],
      },
      legend: { live: true },
      scales: {
        x: { time: true, range: (u, min, max) => [min - step / 2, max + step / 2] },
        y: def.range ? { range: def.range } : { range: (u, min, max) => [0, max > 0 ? max * 1.1 : 1] },
      },
      axes: [
        // time ticks no finer than the data's step: per-day data gets no 08:00 ticks on a wide chart
        {
          ...axis,
          incrs: ticks.timeIncrs(step),
          values: data.step === 'hour' ? '{HH}:{mm}' : [[86400 * 28, '{MMM}', null], [86400, '{D} {MMM}', null]],
        },
        // whole steps for counts, decimals as the step needs for durations and money (stats-ticks.js)
        { ...axis, size: 62, ...ticks.axisFor(def.axis) },
      ],
      series: [
        { label: 'UTC', value: (u, v) => (v == null ? '–' : new Date(v * 1e3).toISOString().slice(0, data.step === 'hour' ? 16 : 10).replace('T', ' ')) },
        ...def.series.map((s) => {
          const color = css(s.color);
          return {
            label: s.label, stroke: color, width: s.bars ? 0 : 2, dash: s.dash, spanGaps: false,
            fill: s.bars ? color : s.fill ? `${color}33` : undefined,
            paths: s.bars ? bars || undefined : undefined,
            points: { show: !s.bars && data.t.length <= 40, size: 5, fill: color },
            value: (u, v) => s.fmt(v),
          };
        }),
      ],
    };
  }

  function draw() {
    for (const p of plots.splice(0)) p.plot.destroy();
    for (const el of document.querySelectorAll('[data-chart]')) {
      const def = CHARTS[el.getAttribute('data-chart')];
      if (!def) continue;
      const series = [data.t, ...def.series.map((s) => data[s.key])];
      const plot = new uPlot(options(def, Math.max(240, el.clientWidth)), series, el);
      plots.push({ el, plot });
    }
  }

  draw();
  // follow the container's width, and the system's light / dark switch
  let pending = 0;
  const resize = new ResizeObserver(() => {
    cancelAnimationFrame(pending);
    pending = requestAnimationFrame(() => {
      for (const { el, plot } of plots) {
        const width = Math.max(240, el.clientWidth);
        if (Math.abs(width - plot.width) > 1) plot.setSize({ width, height: width < 500 ? 200 : 220 });
      }
    });
  });
  for (const el of document.querySelectorAll('[data-chart]')) resize.observe(el);
  window.matchMedia('(prefers-color-scheme: dark)').addEventListener('change', draw);
})();
