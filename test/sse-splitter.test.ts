import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { SseSplitter, formatSseData, type SseEvent } from '../src/wire/sse.ts';
import { fixturePath } from './helpers/fixtures.ts';
import { prng } from './helpers/prng.ts';

function chunkAt(input: Buffer, sizes: () => number): Buffer[] {
  const chunks: Buffer[] = [];
  for (let at = 0; at < input.length;) {
    const size = Math.max(1, sizes());
    chunks.push(input.subarray(at, at + size));
    at += size;
  }
  return chunks;
}

function split(chunks: Buffer[]): SseEvent[] {
  const splitter = new SseSplitter();
  const events: SseEvent[] = [];
  for (const chunk of chunks) events.push(...splitter.push(chunk));
  events.push(...splitter.flush());
  return events;
}

function chunkings(input: Buffer): Array<[string, Buffer[]]> {
  const result: Array<[string, Buffer[]]> = [
    ['whole', [input]],
    ['byte by byte', chunkAt(input, () => 1)],
  ];
  for (const seed of [1, 2, 3, 42, 1234]) {
    const random = prng(seed);
    result.push([`random seed ${seed}`, chunkAt(input, () => Math.floor(random() * 97))]);
  }
  return result;
}

function transcripts(): string[] {
  const files: string[] = [];
  for (const dir of ['llm/openai', 'llm/anthropic']) {
    for (const name of readdirSync(fixturePath(dir))) if (name.endsWith('.sse.txt')) files.push(`${dir}/${name}`);
  }
  return files;
}

test('real transcripts split into events whose raw bytes rebuild the input, in any chunking', () => {
  const files = transcripts();
  assert.ok(files.length >= 6, `expected the OpenAI and Anthropic transcripts, found ${files.length}`);
  for (const file of files) {
    const input = readFileSync(fixturePath(file));
    const dataLines = input
      .toString('utf8')
      .split('\n')
      .filter((line) => line.startsWith('data:')).length;
    for (const [how, chunks] of chunkings(input)) {
      const events = split(chunks);
      const label = `${file} (${how})`;
      assert.ok(Buffer.concat(events.map((e) => e.raw)).equals(input), `raw bytes differ: ${label}`);
      const withData = events.filter((e) => e.data !== '');
      assert.equal(withData.length, dataLines, `data events: ${label}`);
      for (const event of events) {
        assert.equal(event.incomplete, undefined, `every event is terminated: ${label}`);
        assert.ok(event.raw.toString('utf8').endsWith('\n\n'), `raw ends with its blank line: ${label}`);
        if (event.data === '[DONE]') continue;
        const payload = JSON.parse(event.data);
        // The reformatted Anthropic / Responses transcripts name each event after its payload type.
        if (event.event !== undefined) assert.equal(event.event, payload.type, label);
      }
    }
  }
});

test('CRLF and CR-only streams give the same events as LF, split at any byte', () => {
  const lf = readFileSync(fixturePath('llm/anthropic/messages_stream_thinking.sse.txt'), 'utf8');
  const expected = split([Buffer.from(lf)]).map((e) => [e.event, e.data]);
  for (const newline of ['\r\n', '\r']) {
    const input = Buffer.from(lf.replaceAll('\n', newline));
    for (const [how, chunks] of chunkings(input)) {
      const events = split(chunks);
      assert.ok(Buffer.concat(events.map((e) => e.raw)).equals(input), `${JSON.stringify(newline)} ${how}`);
      assert.deepEqual(
        events.map((e) => [e.event, e.data]),
        expected,
        `${JSON.stringify(newline)} ${how}`,
      );
      assert.ok(events.every((e) => e.raw.toString().endsWith(newline + newline)));
    }
  }
});

test('a multi-byte UTF-8 character split across chunks decodes intact', () => {
  const input = Buffer.from('data: {"t":"héllo 🌍 世界"}\n\n');
  const events = split(chunkAt(input, () => 1));
  assert.equal(events.length, 1);
  assert.equal(JSON.parse(events[0].data).t, 'héllo 🌍 世界');
});

test('fields: comments, several data lines, data: without space, event, id, unknown fields', () => {
  const input =
    ': ping\n\n' +
    'event: update\nid: 7\ndata:first\ndata: second\nretry: 10\nbogus\n\n' +
    'data:  two spaces keep one\n\n' +
    'data\n\n';
  const events = split([Buffer.from(input)]);
  assert.deepEqual(
    events.map((e) => ({ data: e.data, event: e.event, id: e.id })),
    [
      { data: '', event: undefined, id: undefined },
      { data: 'first\nsecond', event: 'update', id: '7' },
      { data: ' two spaces keep one', event: undefined, id: undefined },
      { data: '', event: undefined, id: undefined },
    ],
  );
  assert.equal(events[0].raw.toString(), ': ping\n\n');
});

test('a CR at the end of a chunk waits for the next byte before deciding the terminator', () => {
  const splitter = new SseSplitter();
  assert.deepEqual(splitter.push(Buffer.from('data: a\r\n\r')), []);
  const events = splitter.push(Buffer.from('\ndata: b\r\r'));
  assert.deepEqual(
    events.map((e) => e.raw.toString()),
    ['data: a\r\n\r\n'],
  );
  const last = splitter.flush();
  assert.deepEqual(
    last.map((e) => [e.raw.toString(), e.data, e.incomplete]),
    [['data: b\r\r', 'b', undefined]],
  );
});

test('flush returns an unterminated tail as an incomplete event; empty chunks and Uint8Array work', () => {
  const splitter = new SseSplitter();
  assert.deepEqual(splitter.push(Buffer.alloc(0)), []);
  const bytes = new TextEncoder().encode('data: {"a":1}\n\ndata: [DONE]\n');
  const events = splitter.push(bytes);
  assert.equal(events.length, 1);
  assert.equal(events[0].data, '{"a":1}');
  const tail = splitter.flush();
  assert.equal(tail.length, 1);
  assert.equal(tail[0].data, '[DONE]');
  assert.equal(tail[0].incomplete, true);
  assert.equal(tail[0].raw.toString(), 'data: [DONE]\n');
  assert.deepEqual(splitter.flush(), [], 'nothing left after a flush');
});

test('a leading byte-order mark is kept in raw but not in the first field name', () => {
  const input = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('data: x\n\n')]);
  const events = split([input]);
  assert.equal(events[0].data, 'x');
  assert.ok(events[0].raw.equals(input));
});

test('formatSseData frames one data event', () => {
  assert.equal(formatSseData('{"a":1}'), 'data: {"a":1}\n\n');
  const events = split([Buffer.from(formatSseData('{"a":1}'))]);
  assert.equal(events[0].data, '{"a":1}');
});
