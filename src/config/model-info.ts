/** A model as a backend lists it, with its prices: discovered live, cached in the store, priced in the config. */

/** Prices in USD per million tokens. */
export interface ModelPricing {
  input: number;
  output: number;
  cache_read?: number;
  cache_write?: number;
}

export interface ModelInfo {
  /** The id the backend knows the model by. */
  id: string;
  /** The backend's own `created`, when it gave one (unix seconds). */
  created?: number;
  owned_by?: string;
  /** A name for people (Anthropic lists one). */
  display_name?: string;
  pricing?: ModelPricing;
  context_length?: number;
}
