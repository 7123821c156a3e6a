/** What every console module gets: the gateway (its services) and the session table. */
import type { Gateway } from '../gateway.ts';
import type { Sessions } from './sessions.ts';

export interface UiContext {
  gateway: Gateway;
  sessions: Sessions;
}

/** Who is looking at a page. */
export interface Viewer {
  name: string;
  /** The gateway is bootstrap-open (no master key, no users): no login, a banner says so. */
  open: boolean;
}
