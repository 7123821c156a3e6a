/** JSON calls to a test gateway: the admin API (any method, a key or none) and a chat call. */

export interface ApiAnswer {
  status: number;
  text: string;
  json: any;
}

/** `api(method, path, body?, key?)` against `base()`; `key: null` sends none. */
export function adminApi(base: () => string, defaultKey: string) {
  return async (method: string, path: string, body?: unknown, key: string | null = defaultKey): Promise<ApiAnswer> => {
    const headers: Record<string, string> = {};
    if (key) headers.authorization = `Bearer ${key}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(base() + path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, text, json: text ? JSON.parse(text) : undefined };
  };
}

/** A one-message chat completion with `key`. */
export function chatCall(base: () => string, key: string) {
  return (model: string, stream = false): Promise<Response> =>
    fetch(`${base()}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ model, stream, messages: [{ role: 'user', content: 'hi' }] }),
    });
}
