/**
 * The demo's step for Ollama clients (scripts/demo.ts): the `ollama` npm client pointed at the
 * gateway as if it were an Ollama server, listing the fleet and streaming one chat from a
 * llama.cpp box through the Ollama ⇄ chat bridge, then one call passed through to an Ollama
 * server (`type: ollama`) as it was sent.
 */
import { Ollama } from 'ollama';

export async function ollamaWalkthrough(base: string, say: (text: string) => void, step: number): Promise<void> {
  say(`\n${step}. Ollama clients (Open WebUI, Home Assistant, the ollama libraries) on the native API:`);
  const ollama = new Ollama({ host: base });
  const { version } = await ollama.version();
  const { models } = await ollama.list();
  say(`   GET /api/version → ${version}; GET /api/tags → ${models.length} models (/v1/models' chat models)`);
  const stream = await ollama.chat({
    model: 'fast',
    messages: [{ role: 'user', content: 'Say hello' }],
    stream: true,
    options: { temperature: 0.2, num_predict: 64 },
  });
  process.stdout.write('   POST /api/chat on "fast" (llama.cpp, translated), NDJSON: ');
  let last;
  for await (const part of stream) {
    process.stdout.write(part.message.content);
    last = part;
  }
  const tokPerS = last && last.eval_duration > 0 ? (last.eval_count / last.eval_duration) * 1e9 : 0;
  say(`\n   done_reason ${last?.done_reason}, ${last?.prompt_eval_count} prompt + ${last?.eval_count} eval tokens,`);
  const speed = `${tokPerS.toFixed(1)} tok/s, as \`ollama run --verbose\` computes it`;
  say(`   total_duration ${last?.total_duration} ns (${speed})`);
  const native = await ollama.generate({ model: 'ollama-box/llama3.2:latest', prompt: 'why?', stream: false });
  const said = native.response.slice(0, 40);
  say(`   POST /api/generate on "ollama-box/llama3.2:latest" (type: ollama, passed through as sent): "${said}…"`);
}
