/** llama.cpp answers 503 "Loading model" until the model is in memory: not a broken backend. */
export const LOADING_MODEL = /loading model/i;
