/**
 * Who is calling: the master key, a user key, or nobody (only while the gateway is
 * bootstrap-open: no master key and no users). A verdict is kept per request (its headers
 * object) only while the master key and the users are unchanged, so the route's check after
 * the request guard's costs no second digest, and a new master key or user still locks the
 * gateway on the very next request, even one whose body was still uploading.
 */
import { GatewayError } from '../errors.ts';
import type { User, UsersRepo } from '../store/users-repo.ts';
import { extractKey, type HeaderBag } from './extract-key.ts';
import { keyMatcher } from '../store/keys.ts';
import { isLocalRequest } from './loopback.ts';

export interface Caller {
  kind: 'master' | 'user' | 'anonymous';
  user?: User;
  /**
   * Master key, admin users, and anonymous callers while bootstrap-open. Not enough on its
   * own for admin actions: `authenticateAdmin` also limits open-mode callers to local requests.
   */
  isAdmin: boolean;
  /** Allow-list; empty = everything. */
  allow: string[];
}

/** A request's caller, valid while the users' `generation` and the master key are the ones it was made under. */
interface Verdict {
  caller: Caller;
  key: string | undefined;
  generation: number;
  masterKey: string | undefined;
}

export interface AuthenticatorDeps {
  users: Pick<UsersRepo, 'findByKey' | 'count'> & Partial<Pick<UsersRepo, 'generation'>>;
  /** The effective master key right now (see `effectiveMasterKey`). */
  masterKey: () => string | undefined;
}

export class Authenticator {
  private readonly deps: AuthenticatorDeps;
  private master?: { key: string; matches: (candidate: string) => boolean };
  private readonly verdicts = new WeakMap<HeaderBag, Verdict>();

  constructor(deps: AuthenticatorDeps) {
    this.deps = deps;
  }

  /**
   * True while there is no master key and no user: anyone may call the model endpoints, and
   * loopback callers the admin API (see `authenticateAdmin`).
   */
  isOpen(): boolean {
    return !this.deps.masterKey() && this.deps.users.count() === 0;
  }

  /** Resolves the caller or throws 401 (missing/wrong key, disabled user). */
  authenticate(headers: HeaderBag): Caller {
    const generation = this.deps.users.generation?.();
    if (generation === undefined) return this.resolve(headers);
    const masterKey = this.deps.masterKey();
    const key = extractKey(headers);
    const kept = this.verdicts.get(headers);
    if (kept && kept.key === key && kept.generation === generation && kept.masterKey === masterKey) return kept.caller;
    const caller = this.resolve(headers);
    this.verdicts.set(headers, { caller, key, generation, masterKey });
    return caller;
  }

  private resolve(headers: HeaderBag): Caller {
    // while open there is nothing a key could match (clients that insist on a placeholder key
    // get in too): skip the digest and the lookup entirely
    if (this.isOpen()) return anonymous();
    const key = extractKey(headers);
    if (key === undefined) {
      throw unauthorized(
        "You didn't provide an API key. You need to provide your API key in an Authorization " +
          'header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the ' +
          'x-api-key header.',
      );
    }

    const master = this.deps.masterKey();
    if (master && this.isMasterKey(key, master)) return { kind: 'master', isAdmin: true, allow: [] };

    const user = this.deps.users.findByKey(key);
    if (user) {
      if (!user.enabled) throw unauthorized('This API key belongs to a disabled user.');
      return { kind: 'user', user, isAdmin: user.role === 'admin', allow: user.allow };
    }

    throw unauthorized('Incorrect API key provided.');
  }

  /** Constant-time comparison against the master key, whose digest is computed once. */
  private isMasterKey(key: string, master: string): boolean {
    if (this.master?.key !== master) this.master = { key: master, matches: keyMatcher(master) };
    return this.master.matches(key);
  }

  /**
   * Like `authenticate`, but also throws 403 unless the caller may use the admin API. While the
   * gateway is open only local requests may (`isLocalRequest`: a loopback `clientIp`, i.e.
   * req.ip, unknown counting as remote; a Host naming this host; no foreign Origin): anyone else
   * reaching an open gateway bound to 0.0.0.0, or a web page rebinding its own name to
   * 127.0.0.1, could otherwise create the first admin and lock its owner out.
   */
  authenticateAdmin(headers: HeaderBag, clientIp?: string): Caller {
    if (this.isOpen() && !isLocalRequest(clientIp, headers)) throw openAdminRemote();
    const caller = this.authenticate(headers);
    if (!caller.isAdmin) {
      throw new GatewayError({ status: 403, code: 'admin_required', message: 'This action requires an admin key.' });
    }
    return caller;
  }
}

/**
 * The master key in force, from the effective config's `api_key` (config.yaml merged with the
 * store, where a store setting wins). A blank value (e.g. an unset `${ENV}`) is no key.
 */
export function effectiveMasterKey(apiKey: string | undefined): string | undefined {
  const trimmed = apiKey?.trim();
  return trimmed ? trimmed : undefined;
}

function anonymous(): Caller {
  return { kind: 'anonymous', isAdmin: true, allow: [] };
}

function openAdminRemote(): GatewayError {
  return new GatewayError({
    status: 403,
    code: 'admin_loopback_only',
    message:
      'This gateway is open (no api_key and no users), so its admin API answers only callers on ' +
      'its own host (loopback), addressed as localhost, 127.0.0.1 or [::1] and not from a web page of another site. ' +
      'Lock it first: set api_key in config.yaml, or create an admin user from the gateway host ' +
      '(POST http://127.0.0.1:<port>/admin/api/users with {"name":"admin","role":"admin"}); ' +
      'then call the admin API with that key.',
  });
}

function unauthorized(message: string): GatewayError {
  return new GatewayError({ status: 401, code: 'invalid_api_key', type: 'authentication_error', message });
}
