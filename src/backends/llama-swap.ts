/**
 * llama-swap's ways: it answers 502 "unable to start process" when the model it was asked to
 * swap in fails to start — the backend's failure for that call, worth failing over.
 */
export const START_FAILURE = /unable to start process/i;
