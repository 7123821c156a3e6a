/**
 * The Vercel AI SDK's two-step tool loop against a fake LLM: the fake calls `get_weather`
 * once, the SDK runs the tool and sends its result back, the fake answers. Shared by the
 * provider tests (Responses via @ai-sdk/openai, Messages via @ai-sdk/anthropic).
 */
import { generateText, jsonSchema, stepCountIs, tool, type LanguageModel } from 'ai';
import type { FakeBackend } from '../fakes/index.ts';

export interface WeatherLoop {
  /** The city the tool was run with. */
  ran: string;
  /** What the loop returned (its text and its steps). */
  result: { text: string; steps: readonly unknown[] };
  /** The `tool` message the fake received on the second step. */
  toolMessage: { role: string; content: unknown } | undefined;
}

export async function weatherToolLoop(model: LanguageModel, fake: FakeBackend): Promise<WeatherLoop> {
  fake.setKnobs({
    toolCall: true,
    toolCallOnce: true,
    toolCallName: 'get_weather',
    toolCallArguments: '{"city":"Oslo"}',
  });
  try {
    let ran = '';
    const result = await generateText({
      model,
      prompt: 'weather in Oslo?',
      stopWhen: stepCountIs(3),
      tools: {
        get_weather: tool({
          description: 'Weather of a city',
          inputSchema: jsonSchema<{ city: string }>({
            type: 'object',
            properties: { city: { type: 'string' } },
            required: ['city'],
          }),
          execute: async ({ city }) => {
            ran = city;
            return `sunny in ${city}`;
          },
        }),
      },
    });
    const toolMessage = fake.requests.at(-1)!.body.messages.find((m: { role: string }) => m.role === 'tool');
    return { ran, result, toolMessage };
  } finally {
    fake.setKnobs({ toolCall: false, toolCallOnce: false });
  }
}
