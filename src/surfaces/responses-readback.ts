/**
 * Reads of a response a `responses: native` backend stored itself (`GET /v1/responses/{id}`,
 * with `?stream=true` too, `GET …/input_items`, `DELETE`, `POST …/cancel`): sent to the backend
 * that made it with its credential, and its answer relayed as it came (an error's body with the
 * backend's key scrubbed). Cheap reads: no scheduler slot, but a deadline for the head and one
 * for each silence in the body.
 */
import type { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import { credentialHeaders } from '../backends/credentials.ts';
import type { BackendRegistry, BackendState } from '../backends/registry.ts';
import { GatewayError } from '../errors.ts';
import { redactBackendText } from '../backends/secret-scrub.ts';

export interface ReadBackDeps {
  registry: BackendRegistry;
  dispatcherFor: (backend: BackendState) => Dispatcher;
  /** Longest wait for the backend's head, and for each silence in its body (ms). */
  headMs: () => number;
  idleMs: () => number;
}

export interface ReadBackAnswer {
  status: number;
  contentType: string;
  body: Readable | string;
}

export type ReadBackMethod = 'GET' | 'DELETE' | 'POST';

export class NativeReadBack {
  constructor(private readonly deps: ReadBackDeps) {}

  /** `path` with its query (`/v1/responses/resp_…?stream=true`); throws a GatewayError when there is no answer. */
  async send(backendName: string, method: ReadBackMethod, path: string, responseId: string): Promise<ReadBackAnswer> {
    const backend = this.deps.registry.get(backendName);
    if (!backend) {
      throw new GatewayError({
        status: 404,
        code: 'not_found',
        param: 'id',
        message: `Response with id '${responseId}' not found: the backend that stored it is no longer configured.`,
      });
    }
    let res: Dispatcher.ResponseData;
    try {
      res = await this.deps.dispatcherFor(backend).request({
        path: backend.basePath + path,
        method,
        headers: {
          accept: 'application/json, text/event-stream',
          ...credentialHeaders(backend.spec),
          ...(method === 'POST' ? { 'content-type': 'application/json' } : {}),
        },
        body: method === 'POST' ? '{}' : undefined,
        headersTimeout: this.deps.headMs(),
        bodyTimeout: this.deps.idleMs(),
      });
    } catch (err) {
      throw new GatewayError({
        status: 502,
        code: 'backend_unreachable',
        message: `The backend that stored response '${responseId}' did not answer: ${(err as Error).message}`,
      });
    }
    const contentType = String(res.headers['content-type'] ?? 'application/json');
    if (res.statusCode === 200) return { status: 200, contentType, body: res.body };
    const text = await res.body.text().catch(() => '');
    return { status: res.statusCode, contentType, body: redactBackendText(text, backend.spec) };
  }
}
