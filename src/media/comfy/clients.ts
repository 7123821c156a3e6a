/**
 * One ComfyClient per ComfyUI backend, made on first use and kept (with its one progress
 * websocket) while the backend keeps its URL; a backend that leaves or moves gets its client
 * closed. All of them share the gateway's client id, so a box's websocket events for our
 * prompts reach us whichever client submitted them. Each client sends its backend's
 * credential; the prompts given up on while a box did not answer are kept per backend name,
 * so that a client made anew for the box still takes them off it.
 */
import { randomUUID } from 'node:crypto';
import type { Dispatcher } from 'undici';
import { credentialHeaders } from '../../backends/credentials.ts';
import type { BackendState } from '../../backends/registry.ts';
import { comfyKnobs } from '../../config/defaults.ts';
import { ComfyClient, type ComfyClientOptions } from './client.ts';

export interface ComfyClientsDeps {
  dispatcherFor: (backend: BackendState) => Dispatcher;
  log?: ComfyClientOptions['log'];
}

export class ComfyClients {
  /** The gateway's ComfyUI client id: one per process, so a restart never reads an old run's events. */
  readonly clientId = randomUUID();
  private readonly clients = new Map<
    string,
    { url: string; readTimeoutMs: number; credential: string; client: ComfyClient }
  >();
  private readonly abandoned = new Map<string, Set<string>>();

  constructor(private readonly deps: ComfyClientsDeps) {}

  /** The backend's client, its websocket opened. */
  get(backend: BackendState): ComfyClient {
    const readTimeoutMs = comfyKnobs(backend.spec).readTimeoutMs;
    const headers = credentialHeaders(backend.spec);
    const credential = JSON.stringify(headers);
    const known = this.clients.get(backend.name);
    if (
      known &&
      known.url === backend.spec.url &&
      known.readTimeoutMs === readTimeoutMs &&
      known.credential === credential
    )
      return known.client;
    known?.client.close();
    let abandoned = this.abandoned.get(backend.name);
    if (!abandoned || known?.url !== backend.spec.url) this.abandoned.set(backend.name, (abandoned = new Set()));
    const client = new ComfyClient({
      baseUrl: backend.spec.url,
      dispatcher: this.deps.dispatcherFor(backend),
      clientId: this.clientId,
      readTimeoutMs,
      headers,
      abandoned,
      log: this.deps.log,
    });
    client.watch();
    this.clients.set(backend.name, { url: backend.spec.url, readTimeoutMs, credential, client });
    return client;
  }

  /** The backend left the fleet (or changed): close its websocket. */
  forget(name: string): void {
    this.clients.get(name)?.client.close();
    this.clients.delete(name);
    this.abandoned.delete(name);
  }

  closeAll(): void {
    for (const name of [...this.clients.keys()]) this.forget(name);
  }
}
