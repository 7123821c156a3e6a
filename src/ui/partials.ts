/**
 * Server-rendered fragments for live updates: `/ui/events` sends them as HTML the page swaps
 * in, so there is one rendering of each part (the template), never a second one in script.
 * Escaping is eta's, as for whole pages.
 */
import { Eta } from 'eta';
import { fmt } from './format.ts';
import { VIEWS_DIR } from './paths.ts';

const eta = new Eta({
  views: VIEWS_DIR,
  autoEscape: true,
  cache: process.env.NODE_ENV !== 'development',
  useWith: false,
});

export function renderPartial(name: string, data: Record<string, unknown>): string {
  return eta.render(`partials/${name}`, { ...data, fmt });
}
