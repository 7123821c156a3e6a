/**
 * The cluster's parts that live on the HTTP side, wired in one place (`buildApp` calls this once,
 * before the routes, when `cluster` is configured): backend health shared, media jobs reachable
 * from every instance, statistics summed over the instances. Without `cluster` nothing here runs.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { BackendRegistry } from '../backends/registry.ts';
import type { Discovery } from '../backends/discovery.ts';
import type { GatewayConfig } from '../config/types.ts';
import type { MediaJobs } from '../media/service.ts';
import type { CallLog } from '../stats/call-log.ts';
import { selfUrl } from '../responses/internal-call.ts';
import { shareBackendHealth } from './health-share.ts';
import { ClusterMarks } from './internal-auth.ts';
import { forwardJobs } from './jobs-forward.ts';
import type { ClusterNode } from './node.ts';
import { Peers } from './peers.ts';
import { clusterStats, type ClusterStatsView } from './stats-sum.ts';

export interface ClusterAttachment {
  peers: Peers;
  /** The Statistics tab's sum over the instances. */
  stats: ClusterStatsView;
  /** True for a request a peer instance forwarded (its mark verified). */
  fromPeer(req: FastifyRequest): boolean;
}

/** The parts of the gateway the cluster reaches (the Gateway is one; no import of it from here). */
export interface ClusterHost {
  readonly registry: BackendRegistry;
  readonly discovery: Pick<Discovery, 'probe'>;
  readonly media: MediaJobs;
  readonly callLog: Pick<CallLog, 'summary'>;
  config(): Pick<GatewayConfig, 'fast_probe_interval_s'>;
}

export async function attachCluster(app: FastifyInstance, gateway: ClusterHost, node: ClusterNode) {
  const marks = new ClusterMarks(node);
  // a failure here leaves marks that nobody accepts until the reconnect below reads the secret
  await marks.load().catch((err: Error) => app.log.warn({ err: err.message }, 'cluster: no internal secret yet'));
  node.onReconnect(() => void marks.load().catch(() => {}));
  const peers = new Peers(node, marks);
  const forwarded = new WeakSet<FastifyRequest>();
  // first of the onRequest hooks: a peer's request is for its client's address (the owner rule
  // of an open gateway, `ip:<address>`, and the loopback checks read that one, not the peer's)
  app.addHook('onRequest', (req, _reply, done) => {
    const clientIp = marks.read(req.method, req.url, req.headers);
    if (clientIp !== undefined) {
      forwarded.add(req);
      Object.defineProperty(req, 'ip', { value: clientIp, configurable: true });
    }
    done();
  });
  const fromPeer = (req: FastifyRequest) => forwarded.has(req);
  app.addHook('onListen', async () => {
    if (node.advertiseUrl) return;
    const address = app.server.address();
    node.learnUrl(selfUrl(address));
    if (typeof address === 'object' && address && ['0.0.0.0', '::'].includes(address.address)) {
      app.log.warn('cluster: listening on every address but no cluster.advertise_url set; peers are told loopback');
    }
  });
  const stopHealth = shareBackendHealth(node, {
    registry: gateway.registry,
    probe: (name) => void gateway.discovery.probe(name),
    reprobeMs: () => (gateway.config().fast_probe_interval_s || 3) * 1000,
    log: app.log,
  });
  forwardJobs(app, { node, peers, media: () => gateway.media, fromPeer, log: app.log });
  app.addHook('onClose', async () => {
    stopHealth();
    await peers.close();
  });
  const stats = clusterStats(app, { node, peers, fromPeer, summary: (range) => gateway.callLog.summary(range) });
  const attachment: ClusterAttachment = { peers, fromPeer, stats };
  return attachment;
}
