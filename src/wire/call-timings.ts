/** What llama.cpp's `timings` say of one call: prompt and decode token counts and times. */
export interface CallTimings {
  /** `prompt_n`: prompt tokens evaluated (cache hits not counted). */
  promptN?: number;
  /** `prompt_ms`: time spent evaluating them. */
  promptMs?: number;
  /** `predicted_n`: output tokens decoded. */
  predictedN?: number;
  /** `predicted_ms`: time spent decoding them. */
  predictedMs?: number;
}
