import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { BackupService } from '../admin/backup-service.ts';

export interface AdminBackupOptions {
  backups: BackupService;
  requireAdmin: (req: FastifyRequest) => void;
}

/**
 * `POST /admin/api/backup` (admin only): a consistent copy of the gateway's databases and
 * secret.key into a new folder under `backup_dir`, answered 201 with its manifest. The body is
 * empty or `{ "label": "before-upgrade" }`; 409 while another backup is being written.
 */
export async function adminBackupRoutes(app: FastifyInstance, opts: AdminBackupOptions): Promise<void> {
  app.addHook('onRequest', async (req) => opts.requireAdmin(req));
  app.post('/admin/api/backup', async (req, reply) => {
    const result = await opts.backups.run(req.body);
    return reply.code(201).send(result);
  });
}
