/**
 * Media jobs across the cluster. Job rows and artifacts stay with the instance that ran the
 * job; each job id it makes is registered in Redis (`llmgw:job:<id>` → its instance id, expiring
 * with the job). A status or file request (`/v1/jobs/{id}…`, cancel too) for a job this instance
 * does not hold is forwarded to the owner instance, the caller's key passed along so the
 * owner's usual owner-gating applies, and its answer streamed back unchanged. A job known
 * nowhere gets the usual 404 (the route answers it); a dead owner a 503. The list of jobs
 * (`GET /v1/jobs`) stays this instance's own.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '../errors.ts';
import { JOB_ID_RE } from '../media/jobs/job-types.ts';
import type { MediaJobs } from '../media/service.ts';
import type { ClusterNode } from './node.ts';
import { HOP_BY_HOP, unreachable, type Peers } from './peers.ts';

/** The routes of one job, by fastify's route pattern. */
const JOB_ROUTES: ReadonlySet<string> = new Set([
  'GET /v1/jobs/:id',
  'GET /v1/jobs/:id/result/:n',
  'GET /v1/jobs/:id/input/:n',
  'GET /v1/jobs/:id/preview',
  'GET /v1/jobs/:id/events',
  'HEAD /v1/jobs/:id/result/:n',
  'HEAD /v1/jobs/:id/input/:n',
  'POST /v1/jobs/:id/cancel',
]);

export interface JobsForwardDeps {
  node: ClusterNode;
  peers: Peers;
  media: () => MediaJobs;
  /** True for a request a peer forwarded here (it is answered here, never sent on). */
  fromPeer: (req: FastifyRequest) => boolean;
  log: { warn(obj: object, msg: string): void };
}

export function forwardJobs(app: FastifyInstance, deps: JobsForwardDeps): void {
  const { node } = deps;
  const register = (id: string, expiresAt: number) => {
    if (!node.connected) return;
    const ms = Math.max(1000, expiresAt - Date.now());
    void node.redis.set(node.key('job', id), node.instanceId, 'PX', ms).catch((err: Error) => {
      deps.log.warn({ job: id, err: err.message }, 'could not register the job in the cluster');
    });
  };
  deps.media().jobCreated = register;
  // Redis lost and back (maybe empty): this instance's jobs are registered again (the newest 500)
  node.onReconnect(() => {
    for (const job of deps.media().store.list(null, { limit: 500 }, Date.now())) register(job.id, job.expiresAt);
  });

  app.addHook('preHandler', async (req, reply) => {
    const route = req.routeOptions.url;
    if (!route || !JOB_ROUTES.has(`${req.method} ${route}`) || deps.fromPeer(req)) return;
    const id = (req.params as { id?: string }).id;
    if (typeof id !== 'string' || !JOB_ID_RE.test(id) || deps.media().store.get(id, Date.now())) return;
    let owner: string | null;
    try {
      owner = await node.redis.get(node.key('job', id));
    } catch {
      throw new GatewayError({
        status: 503,
        code: 'cluster_unavailable',
        type: 'api_error',
        retryAfter: 5,
        message: 'This job is not on this instance, and the cluster (Redis) cannot be asked where it is.',
      });
    }
    if (owner === null || owner === node.instanceId) return; // unknown anywhere: the route's 404
    return relay(deps, req, reply, owner);
  });
}

const UNREACHABLE = (owner: string) =>
  `The instance that ran this job (${owner}) is unreachable; its status and files are kept there. Try again later.`;

async function relay(deps: JobsForwardDeps, req: FastifyRequest, reply: FastifyReply, owner: string) {
  let base: string | undefined;
  try {
    base = await deps.peers.urlOf(owner);
  } catch {
    base = undefined;
  }
  if (!base) throw unreachable(UNREACHABLE(owner));
  const abort = new AbortController();
  reply.raw.once('close', () => abort.abort());
  const events = req.routeOptions.url!.endsWith('/events');
  const answer = await deps.peers.send(
    base,
    {
      method: req.method,
      url: req.url,
      headers: req.headers,
      clientIp: req.ip,
      bodyTimeoutMs: events ? 0 : 30_000,
      signal: abort.signal,
    },
    UNREACHABLE(owner),
  );
  reply.code(answer.statusCode);
  for (const [name, value] of Object.entries(answer.headers)) {
    if (value !== undefined && !HOP_BY_HOP.has(name)) reply.header(name, value);
  }
  reply.header('x-gateway-instance', owner);
  answer.body.on('error', () => {}); // a cut stream ends the client's too
  return reply.send(answer.body);
}
