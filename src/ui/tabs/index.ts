/** Every tab's routes, registered in navigation order (see list.ts). */
import type { FastifyInstance } from 'fastify';
import type { UiContext } from '../context.ts';
import { dashboardTab } from './dashboard.ts';
import { backendsTab } from './backends.ts';
import { aliasesTab } from './aliases.ts';
import { mappingTab } from './mapping.ts';
import { reasoningTab } from './reasoning.ts';
import { playgroundTab } from './playground.ts';
import { callsTab } from './calls.ts';
import { jobsTab } from './jobs.ts';
import { statsTab } from './stats.ts';
import { usersTab } from './users.ts';
import { serverTab } from './server.ts';

export type TabModule = (app: FastifyInstance, ctx: UiContext) => Promise<void>;

export const TAB_MODULES: readonly TabModule[] = [
  dashboardTab,
  backendsTab,
  aliasesTab,
  mappingTab,
  reasoningTab,
  playgroundTab,
  callsTab,
  jobsTab,
  statsTab,
  usersTab,
  serverTab,
];
