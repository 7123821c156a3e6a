/**
 * Media jobs: the list (thumbnails, filters by status, model and count, the refused media
 * requests), one job in detail (inputs with their sha256, the parameter summary, outputs inline,
 * cancel), and the job's files and live events through console routes: the console holds no
 * API key, so its pages read jobs as the console (an admin) behind the session, through the
 * same media service as /v1/jobs.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { THUMB_MAX, MAX_N } from '../../media/jobs/artifacts.ts';
import { JOB_ID_RE } from '../../media/jobs/job-types.ts';
import type { JobView } from '../../media/service-types.ts';
import { sendFile } from '../../routes/media-caller.ts';
import type { UiContext } from '../context.ts';
import { CONSOLE_CALLER } from '../dashboard-model.ts';
import { followJobEvents, type JobStreams } from '../jobs-events.ts';
import { jobDetailModel, jobsListModel, JOB_STATUSES, LIMIT_CHOICES, parseFilters, seconds } from '../jobs-model.ts';
import { renderPage } from '../render.ts';

const N_RE = /^(?:0|[1-9]\d{0,3})$/;
const SIZE_RE = /^[1-9]\d{0,3}$/;

const notFound = (message: string) => Object.assign(new Error(message), { statusCode: 404 });
const badRequest = (message: string) => Object.assign(new Error(message), { statusCode: 400 });

export async function jobsTab(app: FastifyInstance, ctx: UiContext): Promise<void> {
  const media = () => ctx.services.media;
  const streams: JobStreams = { open: 0, max: 32, live: new Set() };
  // a running job's stream would keep the server from closing
  app.addHook('preClose', async () => {
    for (const res of streams.live) res.destroy();
  });

  app.get('/ui/jobs', async (req, reply) => {
    const query = req.query as Record<string, unknown>;
    const { filters, input, errors } = parseFilters(query);
    const model = jobsListModel(ctx.services, filters);
    const cancelled =
      typeof query.cancelled === 'string' && JOB_ID_RE.test(query.cancelled) ? query.cancelled : undefined;
    return renderPage(reply, 'jobs', {
      title: 'Media jobs',
      tab: 'jobs',
      status: Object.keys(errors).length ? 400 : 200,
      errors,
      notice: cancelled ? `Cancel sent for ${cancelled}.` : undefined,
      m: model,
      filters,
      input,
      statuses: JOB_STATUSES,
      limits: LIMIT_CHOICES,
      seconds,
    });
  });

  app.get('/ui/jobs/:id', async (req, reply) => {
    const job = viewOrThrow(ctx, req);
    const query = req.query as Record<string, unknown>;
    const notice =
      query.cancelled === '1'
        ? job.status === 'cancelled'
          ? 'The job is cancelled.'
          : `The job had already ended (${job.status}).`
        : undefined;
    return renderPage(reply, 'job-detail', {
      title: `Job ${job.id.slice(0, 12)}…`,
      tab: 'jobs',
      notice,
      d: jobDetailModel(ctx.services, job),
    });
  });

  app.post('/ui/jobs/:id/cancel', async (req, reply) => {
    const id = jobIdOf(req);
    const view = await media().cancel(id, CONSOLE_CALLER);
    if (!view) throw notFound('There is no such job (or it expired).');
    const back = (req.body as Record<string, unknown> | undefined)?.back;
    return reply.redirect(back === 'list' ? `/ui/jobs?cancelled=${id}` : `/ui/jobs/${id}?cancelled=1`, 303);
  });

  app.get('/ui/jobs/:id/result/:n', async (req, reply) => {
    const job = viewOrThrow(ctx, req);
    const n = fileNumberOf(req);
    const file = await media().result(job.id, n, CONSOLE_CALLER, thumbOf(req));
    if (!file) throw notFound(`This job has no result ${n}.`);
    return sendFile(reply, file, maxAge(job));
  });

  app.get('/ui/jobs/:id/input/:n', async (req, reply) => {
    const job = viewOrThrow(ctx, req);
    const n = fileNumberOf(req);
    const file = await media().input(job.id, n, CONSOLE_CALLER);
    if (!file) throw notFound(`This job has no input ${n}.`);
    return sendFile(reply, file, maxAge(job));
  });

  app.get('/ui/jobs/:id/preview', async (req, reply) => {
    const job = viewOrThrow(ctx, req);
    const file = media().preview(job.id, CONSOLE_CALLER);
    if (!file) throw notFound('This job has no preview (yet, or any more).');
    return sendFile(reply, file, 0);
  });

  app.get('/ui/jobs/:id/events', async (req, reply) => followJobEvents(ctx, streams, req, reply, jobIdOf(req)));
}

function jobIdOf(req: FastifyRequest): string {
  const id = (req.params as { id?: string }).id;
  if (typeof id !== 'string' || !JOB_ID_RE.test(id)) throw notFound('There is no such job (or it expired).');
  return id;
}

function viewOrThrow(ctx: UiContext, req: FastifyRequest): JobView {
  const job = ctx.services.media.view(jobIdOf(req), CONSOLE_CALLER);
  if (!job) throw notFound('There is no such job (or it expired).');
  return job;
}

function fileNumberOf(req: FastifyRequest): number {
  const n = (req.params as { n?: string }).n;
  if (typeof n !== 'string' || !N_RE.test(n) || Number(n) > MAX_N) throw notFound('This job has no such file.');
  return Number(n);
}

/** `?w=` (1..THUMB_MAX): a webp thumbnail that fits that width; none: the file itself. */
function thumbOf(req: FastifyRequest): { format: 'webp'; w: number } | undefined {
  const w = (req.query as Record<string, unknown>).w;
  if (w === undefined) return undefined;
  if (typeof w !== 'string' || !SIZE_RE.test(w) || Number(w) > THUMB_MAX)
    throw badRequest(`w must be a whole number of pixels from 1 to ${THUMB_MAX}.`);
  return { format: 'webp', w: Number(w) };
}

function maxAge(job: JobView): number {
  return Math.max(0, Math.floor(job.expires_at - Date.now() / 1000));
}
