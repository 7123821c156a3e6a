/** The console's tabs, in navigation order. */
export interface Tab {
  id: string;
  path: string;
  title: string;
}

export const TABS: readonly Tab[] = Object.freeze([
  { id: 'dashboard', path: '/ui', title: 'Dashboard' },
  { id: 'backends', path: '/ui/backends', title: 'Backends' },
  { id: 'aliases', path: '/ui/aliases', title: 'Aliases & routing' },
  { id: 'mapping', path: '/ui/mapping', title: 'Mapping' },
  { id: 'reasoning', path: '/ui/reasoning', title: 'Reasoning' },
  { id: 'playground', path: '/ui/playground', title: 'Playground' },
  { id: 'calls', path: '/ui/calls', title: 'LLM calls' },
  { id: 'jobs', path: '/ui/jobs', title: 'Media jobs' },
  { id: 'stats', path: '/ui/stats', title: 'Statistics' },
  { id: 'users', path: '/ui/users', title: 'Users' },
  { id: 'server', path: '/ui/server', title: 'Server' },
]);
