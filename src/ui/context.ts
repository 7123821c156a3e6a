/** What every console module gets: the services it works through (never the gateway) and the session table. */
import type { UiServices } from './services.ts';
import type { Sessions } from './sessions.ts';

export interface UiContext {
  services: UiServices;
  sessions: Sessions;
}

/** Who is looking at a page. */
export interface Viewer {
  name: string;
  /** The gateway is bootstrap-open (no master key, no users): no login, a banner says so. */
  open: boolean;
}
