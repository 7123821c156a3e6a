/**
 * Swap cost (issue 19): the extra time to first token of calls that needed a model load, over
 * what the same call takes warm, learnt per (backend, model) from made-up samples; and loads
 * kept out of the prefill rate and the service time. Pure: no clock, no sockets.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ServiceFigures } from '../src/scheduler/service-time.ts';
import {
  learnSwap,
  meanSwapSeconds,
  nextSwapSeconds,
  swapResidual,
  swapSecondsFor,
  unloadedSeconds,
  type SwapFigures,
} from '../src/scheduler/swap-cost.ts';
import type { SpeedSample } from '../src/scheduler/index.ts';
import { schedulerHarness } from './helpers/scheduler-harness.ts';

const near = (actual: number | undefined, expected: number | undefined, what: string) => {
  if (expected === undefined) return assert.equal(actual, undefined, what);
  assert.ok(actual !== undefined && Math.abs(actual - expected) < 1e-9, `${what}: ${actual} ≠ ${expected}`);
};

/** A stream that needed a load: `ttft` s to its first token, `total` s in all. */
const loadStream = (ttft: number, total: number, more: Partial<SpeedSample> = {}): SpeedSample => ({
  status: 200,
  outputTokens: 21,
  promptTokens: 100,
  seconds: total,
  firstTokenSeconds: ttft,
  neededLoad: true,
  model: 'm',
  ...more,
});

/** A non-stream answer that needed a load, `total` s in all. */
const loadJson = (total: number, more: Partial<SpeedSample> = {}): SpeedSample => ({
  status: 200,
  outputTokens: 40,
  promptTokens: 100,
  seconds: total,
  neededLoad: true,
  model: 'm',
  ...more,
});

const warm: ServiceFigures = { prefillRate: 200, decodeRate: 20, serviceSeconds: 2, samples: 3 };

describe('swap cost: one call', () => {
  const cases: {
    name: string;
    sample: SpeedSample;
    model?: ServiceFigures;
    backend?: ServiceFigures;
    extra: number | undefined;
  }[] = [
    {
      name: 'a stream: its time to first token less its prefill at the learnt rate',
      sample: loadStream(6.5, 8),
      model: warm,
      extra: 6.5 - 100 / 200,
    },
    {
      name: 'a stream with llama.cpp timings: its own prompt_ms is its prefill',
      sample: loadStream(6.5, 8, { timings: { promptN: 100, promptMs: 250 } }),
      model: warm,
      extra: 6.25,
    },
    {
      name: 'a non-stream answer: its time less prefill and decode at the learnt rates',
      sample: loadJson(9),
      model: warm,
      extra: 9 - 100 / 200 - 40 / 20,
    },
    {
      name: 'a non-stream answer with timings: less prompt_ms and predicted_ms',
      sample: loadJson(9, { timings: { promptN: 100, promptMs: 500, predictedN: 40, predictedMs: 2500 } }),
      extra: 6,
    },
    {
      name: "the model's rates first, else the backend's",
      sample: loadStream(5, 6),
      model: { samples: 1, decodeRate: 10 },
      backend: { samples: 5, prefillRate: 50 },
      extra: 5 - 100 / 50,
    },
    {
      name: 'no prefill rate learnt yet: all of the time to first token (an upper bound)',
      sample: loadStream(4, 5),
      extra: 4,
    },
    {
      name: 'a non-stream answer whose decode cannot be told teaches nothing',
      sample: loadJson(9),
      model: { samples: 1, prefillRate: 200 },
      extra: undefined,
    },
    {
      name: 'a non-stream answer without output tokens (embeddings): its time less its prefill',
      sample: loadJson(3, { outputTokens: 0 }),
      model: warm,
      extra: 2.5,
    },
    {
      name: 'faster than predicted: clamped at 0',
      sample: loadStream(0.2, 1),
      model: warm,
      extra: 0,
    },
    { name: 'a call that needed no load: none', sample: loadStream(6, 8, { neededLoad: false }), extra: undefined },
    {
      name: 'a load sent while the box had other calls in flight (it waited for them to drain): none',
      sample: loadStream(6, 8, { busyAtDispatch: true }),
      model: warm,
      extra: undefined,
    },
    { name: 'a failed call: none', sample: loadStream(6, 8, { status: 502 }), model: warm, extra: undefined },
  ];
  for (const c of cases) {
    it(c.name, () => near(swapResidual(c.sample, c.model, c.backend), c.extra, 'extra s'));
  }

  it('what a warm call would take: to its first token (stream), to its end (non-stream)', () => {
    near(unloadedSeconds(loadStream(9, 9), warm), 0.5, 'stream');
    near(unloadedSeconds(loadJson(9), warm), 2.5, 'non-stream');
  });
});

describe('swap cost: the figures', () => {
  it('the first load is taken as is, then an EWMA of α 0.3', () => {
    assert.equal(nextSwapSeconds(undefined, 6), 6);
    near(nextSwapSeconds(6, 10), 0.3 * 10 + 0.7 * 6, 'ewma');
  });

  it("per model, with the backend's mean over its models as the fallback", () => {
    const figures: SwapFigures = {};
    assert.equal(swapSecondsFor(figures, 'a'), undefined, 'nothing learnt');
    learnSwap(figures, 'a', 4);
    learnSwap(figures, 'a', 8); // 0.3·8 + 0.7·4 = 5.2
    learnSwap(figures, 'b', 9);
    near(swapSecondsFor(figures, 'a'), 5.2, 'a');
    near(swapSecondsFor(figures, 'b'), 9, 'b');
    near(swapSecondsFor(figures, 'never-loaded'), (5.2 + 9) / 2, 'mean over models');
    near(meanSwapSeconds(new Map()), undefined, 'empty');
  });
});

describe('swap cost: through the scheduler', () => {
  const record = (scheduler: ReturnType<typeof schedulerHarness>['scheduler'], sample: SpeedSample) =>
    scheduler.recordSpeed('box', sample);
  /** Two warm streams: prefill 200 tok/s (100 tokens in 0.5 s), decode 20 tok/s, 1.5 s a call. */
  const warmUp = (scheduler: ReturnType<typeof schedulerHarness>['scheduler']) => {
    for (let i = 0; i < 2; i++) {
      const sample = { status: 200, outputTokens: 21, promptTokens: 100, seconds: 1.5, firstTokenSeconds: 0.5 };
      record(scheduler, { ...sample, model: 'm' });
    }
  };

  it('a load is learnt as swap cost, not as prefill; its decode and its service net of the load still count', () => {
    const { scheduler } = schedulerHarness([{ name: 'box' }]);
    warmUp(scheduler);
    record(scheduler, loadStream(6.5, 7.5)); // 6 s load + 0.5 s prefill, then 20 tokens in 1 s
    const box = scheduler.snapshot().backends[0]!;
    near(box.swapSeconds?.m, 6, 'swap s');
    near(scheduler.swapSecondsOf('box', 'm'), 6, 'swapSecondsOf');
    near(scheduler.swapSecondsOf('box', 'other'), 6, "another model: the backend's mean");
    near(scheduler.swapSecondsOf('nowhere', 'm'), undefined, 'unknown backend');
    near(box.service?.prefillRate, 200, 'prefill untouched by the load');
    near(box.service?.decodeRate, 20, 'decode after the first token still learnt');
    near(box.service?.serviceSeconds, 1.5, 'service time net of the load');
    assert.equal(box.service?.samples, 3);
    near(box.serviceByModel?.m?.prefillRate, 200, 'per model too');
  });

  it('a non-stream load without timings feeds neither decode nor prefill; with no learnt decode, no swap cost', () => {
    const { scheduler } = schedulerHarness([{ name: 'box' }]);
    record(scheduler, loadJson(9));
    let box = scheduler.snapshot().backends[0]!;
    assert.equal(box.swapSeconds, undefined, 'cannot tell the load from the decode');
    assert.equal(box.speed, undefined, 'still unmeasured: tried again');
    assert.equal(box.service?.serviceSeconds, undefined, "its time is not a warm call's");
    assert.equal(box.service?.samples, 1);
    warmUp(scheduler);
    record(scheduler, loadJson(9)); // 9 − 0.5 − 40/20 = 6.5
    box = scheduler.snapshot().backends[0]!;
    near(box.swapSeconds?.m, 6.5, 'swap s');
    near(box.service?.decodeRate, 20, 'decode untouched');
    near(box.service?.serviceSeconds, 1.5 * 0.7 + 2.5 * 0.3, 'service net of the load');
  });

  it('a load sent to a busy box: no swap cost, no service time, and still not prefill', () => {
    const { scheduler } = schedulerHarness([{ name: 'box' }]);
    warmUp(scheduler);
    record(scheduler, loadStream(12.5, 13.5, { busyAtDispatch: true })); // waited for a drain, then loaded
    const box = scheduler.snapshot().backends[0]!;
    assert.equal(box.swapSeconds, undefined);
    near(box.service?.serviceSeconds, 1.5, 'service time untouched');
    near(box.service?.prefillRate, 200, 'prefill untouched');
    near(box.service?.decodeRate, 20, 'decode after the first token still learnt');
    assert.equal(box.service?.samples, 3);
  });

  it('several loads: an EWMA per model, the mean across models', () => {
    const { scheduler } = schedulerHarness([{ name: 'box' }]);
    warmUp(scheduler);
    record(scheduler, loadStream(4.5, 5.5));
    record(scheduler, loadStream(8.5, 9.5));
    record(scheduler, loadStream(2.5, 3.5, { model: 'small' }));
    const box = scheduler.snapshot().backends[0]!;
    near(box.swapSeconds?.m, 0.3 * 8 + 0.7 * 4, 'm');
    // `small` never ran warm: the backend's prefill rate (200 tok/s) stands in for its own
    near(box.swapSeconds?.small, 2, 'small');
    near(scheduler.swapSecondsOf('box', 'third'), (5.2 + 2) / 2, 'mean');
  });
});
