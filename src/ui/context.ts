/** What every console module gets: the services it works through (never the gateway) and the session table. */
import type { UiServices } from './services.ts';
import type { ThrottleStore } from './login-throttle.ts';
import type { SessionStore } from './sessions.ts';

export interface UiContext {
  services: UiServices;
  /** In memory (`Sessions`), or the cluster's Redis in cluster mode. */
  sessions: SessionStore;
  /** Failed logins: the cluster's count in cluster mode; absent = this process's (`LoginThrottle`). */
  throttle?: ThrottleStore;
}

/** Who is looking at a page. */
export interface Viewer {
  name: string;
  /** The gateway is bootstrap-open (no master key, no users): no login, a banner says so. */
  open: boolean;
}
