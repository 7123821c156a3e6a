/**
 * Speed from every completed call (issue 19): decode rate, prefill rate and mean service time,
 * learnt from streams and non-stream answers alike, short answers weighted by their tokens.
 * Durations are measured on a fake clock the way the proxy measures them: attempt start, first
 * token, end of the answer.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  alphaFor,
  decodeSample,
  learnCall,
  nextRate,
  prefillSample,
  type ServiceFigures,
} from '../src/scheduler/service-time.ts';
import type { CallTimings, SpeedSample } from '../src/scheduler/index.ts';
import { FakeClock } from './helpers/fake-clock.ts';
import { candidates, schedulerHarness } from './helpers/scheduler-harness.ts';

/** One call as the backend runs it, in ms on the fake clock. */
interface Run {
  status?: number;
  stream: boolean;
  promptTokens: number;
  outputTokens: number;
  /** Attempt start → first token. */
  prefillMs: number;
  /** First token → end of the answer. */
  decodeMs: number;
  timings?: CallTimings;
  model?: string;
}

/** Plays a call on the clock and returns the sample the proxy would report for it. */
function play(clock: FakeClock, run: Run): SpeedSample {
  const start = clock.now();
  clock.advance(run.prefillMs);
  const firstToken = clock.now();
  clock.advance(run.decodeMs);
  const sample: SpeedSample = {
    status: run.status ?? 200,
    outputTokens: run.outputTokens,
    promptTokens: run.promptTokens,
    seconds: (clock.now() - start) / 1000,
  };
  if (run.stream) sample.firstTokenSeconds = (firstToken - start) / 1000;
  if (run.timings) sample.timings = run.timings;
  if (run.model) sample.model = run.model;
  return sample;
}

const near = (actual: number | undefined, expected: number | undefined, what: string) => {
  if (expected === undefined) return assert.equal(actual, undefined, what);
  assert.ok(actual !== undefined && Math.abs(actual - expected) < 1e-6, `${what}: ${actual} ≠ ${expected}`);
};

describe('service time: one call at a time', () => {
  const cases: {
    name: string;
    runs: Run[];
    expect: { decode?: number; prefill?: number; service?: number; samples: number };
  }[] = [
    {
      name: 'a non-stream answer without timings: all of its time is decode while no prefill rate is known',
      runs: [{ stream: false, promptTokens: 100, outputTokens: 40, prefillMs: 500, decodeMs: 1500 }],
      expect: { decode: 20, prefill: undefined, service: 2, samples: 1 },
    },
    {
      name: 'a stream: decode is the tokens after the first over the time after it; prefill is prompt over TTFT',
      runs: [{ stream: true, promptTokens: 200, outputTokens: 41, prefillMs: 400, decodeMs: 2000 }],
      expect: { decode: 20, prefill: 500, service: 2.4, samples: 1 },
    },
    {
      name: 'a 5-token stream counts',
      runs: [{ stream: true, promptTokens: 10, outputTokens: 5, prefillMs: 100, decodeMs: 200 }],
      expect: { decode: 20, prefill: 100, service: 0.3, samples: 1 },
    },
    {
      name: 'a one-token stream: no decode rate, but prefill and service time',
      runs: [{ stream: true, promptTokens: 50, outputTokens: 1, prefillMs: 250, decodeMs: 0 }],
      expect: { decode: undefined, prefill: 200, service: 0.25, samples: 1 },
    },
    {
      name: 'llama.cpp timings win over the clock for both rates',
      runs: [
        {
          stream: false,
          promptTokens: 999,
          outputTokens: 999,
          prefillMs: 3000,
          decodeMs: 3000,
          timings: { promptN: 800, promptMs: 200, predictedN: 60, predictedMs: 1500 },
        },
      ],
      expect: { decode: 40, prefill: 4000, service: 6, samples: 1 },
    },
    {
      name: 'a non-stream answer after a stream: the learnt prefill rate is taken off its time (before it learns)',
      runs: [
        { stream: true, promptTokens: 100, outputTokens: 17, prefillMs: 1000, decodeMs: 1000 },
        { stream: false, promptTokens: 100, outputTokens: 32, prefillMs: 1000, decodeMs: 1000 },
      ],
      // stream: decode 16/1 s, prefill 100/1 s; then 32 tokens over 2 s − 100/100 s = 32 tok/s
      expect: { decode: 0.3 * 32 + 0.7 * 16, prefill: 100, service: 2, samples: 2 },
    },
    {
      name: 'prefill never takes more than half of a non-stream call',
      runs: [
        { stream: true, promptTokens: 10, outputTokens: 17, prefillMs: 1000, decodeMs: 1000 },
        { stream: false, promptTokens: 1000, outputTokens: 16, prefillMs: 1000, decodeMs: 1000 },
      ],
      expect: { decode: 0.3 * 16 + 0.7 * 16, prefill: 10, service: 2, samples: 2 },
    },
    {
      name: 'a 3-token answer after a long one moves the decode rate by 3/16 of α',
      runs: [
        { stream: false, promptTokens: 0, outputTokens: 100, prefillMs: 0, decodeMs: 1000 },
        { stream: false, promptTokens: 0, outputTokens: 3, prefillMs: 0, decodeMs: 10 },
      ],
      expect: { decode: alphaFor(3) * 300 + (1 - alphaFor(3)) * 100, service: 0.3 * 0.01 + 0.7 * 1, samples: 2 },
    },
    {
      name: 'failed calls and zero-length calls teach nothing',
      runs: [
        { status: 502, stream: false, promptTokens: 10, outputTokens: 10, prefillMs: 10, decodeMs: 10 },
        { stream: false, promptTokens: 10, outputTokens: 10, prefillMs: 0, decodeMs: 0 },
      ],
      expect: { samples: 0 },
    },
    {
      name: 'a call without output tokens (embeddings) counts for service time only',
      runs: [{ stream: false, promptTokens: 500, outputTokens: 0, prefillMs: 0, decodeMs: 50 }],
      expect: { decode: undefined, prefill: undefined, service: 0.05, samples: 1 },
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const clock = new FakeClock();
      const figures: ServiceFigures = { samples: 0 };
      for (const run of c.runs) learnCall(figures, play(clock, run));
      near(figures.decodeRate, c.expect.decode, 'decode tok/s');
      near(figures.prefillRate, c.expect.prefill, 'prefill tok/s');
      near(figures.serviceSeconds, c.expect.service, 'service s');
      assert.equal(figures.samples, c.expect.samples);
    });
  }
});

describe('service time: the weighting', () => {
  const cases: { tokens: number; alpha: number }[] = [
    { tokens: 0, alpha: 0 },
    { tokens: 1, alpha: 0.3 / 16 },
    { tokens: 8, alpha: 0.15 },
    { tokens: 16, alpha: 0.3 },
    { tokens: 500, alpha: 0.3 },
  ];
  for (const c of cases) it(`α for ${c.tokens} tokens is ${c.alpha}`, () => near(alphaFor(c.tokens), c.alpha, 'α'));

  it('the first sample is taken as is, whatever its size', () => {
    assert.equal(nextRate(undefined, { rate: 7, tokens: 1 }), 7);
  });

  it('timings with zero counts fall back to the clock', () => {
    const sample: SpeedSample = {
      status: 200,
      outputTokens: 11,
      promptTokens: 20,
      seconds: 2,
      firstTokenSeconds: 1,
      timings: { promptN: 0, promptMs: 0, predictedN: 0, predictedMs: 0 },
    };
    assert.deepEqual(decodeSample(sample, undefined), { rate: 10, tokens: 10 });
    assert.deepEqual(prefillSample(sample), { rate: 20, tokens: 20 });
  });
});

describe('service time: through the scheduler', () => {
  it('a backend measured only by non-stream calls is measured, and ranks by its rate', () => {
    const { clock, scheduler } = schedulerHarness([{ name: 'json-only' }, { name: 'fast' }, { name: 'new' }]);
    const record = (backend: string, run: Run) => scheduler.recordSpeed(backend, play(clock, run));
    record('fast', { stream: true, promptTokens: 10, outputTokens: 101, prefillMs: 10, decodeMs: 1000 });
    record('json-only', { stream: false, promptTokens: 10, outputTokens: 20, prefillMs: 0, decodeMs: 1000 });
    const order = scheduler.order(candidates('json-only/m', 'fast/m', 'new/m')).map((c) => c.backend);
    assert.deepEqual(order, ['new', 'fast', 'json-only']);
  });

  it('the snapshot carries the figures per backend and per model', () => {
    const { clock, scheduler } = schedulerHarness([{ name: 'a' }]);
    const record = (run: Run) => scheduler.recordSpeed('a', play(clock, run));
    record({ stream: true, promptTokens: 100, outputTokens: 21, prefillMs: 500, decodeMs: 1000, model: 'm1' });
    record({ stream: false, promptTokens: 0, outputTokens: 50, prefillMs: 0, decodeMs: 1000, model: 'm2' });
    record({ status: 500, stream: false, promptTokens: 0, outputTokens: 50, prefillMs: 0, decodeMs: 9, model: 'm3' });
    const a = scheduler.snapshot().backends[0]!;
    assert.equal(a.service?.samples, 2);
    near(a.speed, 0.3 * 50 + 0.7 * 20, 'speed = decode rate');
    near(a.service?.decodeRate, a.speed, 'decode');
    assert.deepEqual(Object.keys(a.serviceByModel ?? {}), ['m1', 'm2']);
    assert.deepEqual(a.serviceByModel!.m1, { decodeRate: 20, prefillRate: 200, serviceSeconds: 1.5, samples: 1 });
    assert.deepEqual(a.serviceByModel!.m2, { decodeRate: 50, serviceSeconds: 1, samples: 1 });
  });

  it('a backend never measured has no figures', () => {
    const { scheduler } = schedulerHarness([{ name: 'a' }]);
    scheduler.recordSpeed('a', { status: 503, outputTokens: 10, seconds: 1 });
    const a = scheduler.snapshot().backends[0]!;
    assert.equal(a.service, undefined);
    assert.equal(a.speed, undefined);
  });
});
