/**
 * The process logger: JSON lines for journald and log shippers, human-readable lines on a
 * terminal. `log_format` (restart-only) picks: auto = pretty when stdout is a TTY. pino-pretty
 * runs in-process as a plain stream, not as a worker transport: the esbuild bundle (dist/)
 * cannot resolve a transport's worker file by name, and a terminal is never the bottleneck.
 */
import pino, { type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import pretty from 'pino-pretty';

/** Never logged in clear: client keys in request headers, any `api_key`, `api_keys` or `key` field. */
export const REDACT_PATHS: readonly string[] = Object.freeze([
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers["api-key"]',
  '*.api_key',
  '*.api_keys',
  '*.key',
]);

export interface LoggerEnv {
  /** Whether stdout is a terminal (process.stdout.isTTY). */
  isTTY: boolean;
  /** Where lines go; stdout when absent (tests pass a stream). */
  destination?: DestinationStream | NodeJS.WritableStream;
}

/** The format `log_format` resolves to on this stdout. */
/** The log settings of the config (`log_level`, `log_format`). */
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
export type LogFormat = 'auto' | 'pretty' | 'json';

export function resolveLogFormat(format: LogFormat, isTTY: boolean): 'pretty' | 'json' {
  if (format === 'auto') return isTTY ? 'pretty' : 'json';
  return format;
}

export function createLogger(config: { log_level: LogLevel; log_format: LogFormat }, env: LoggerEnv): Logger {
  const options: LoggerOptions = {
    level: config.log_level,
    redact: { paths: [...REDACT_PATHS], censor: '[redacted]' },
  };
  if (resolveLogFormat(config.log_format, env.isTTY) === 'json') {
    return env.destination ? pino(options, env.destination as DestinationStream) : pino(options);
  }
  return pino(
    options,
    pretty({
      destination: env.destination ?? 1,
      // colours only for a terminal: `log_format: pretty` into a file stays plain text
      colorize: env.isTTY,
      translateTime: 'SYS:HH:MM:ss.l',
      ignore: 'pid,hostname',
      // stdout writes are synchronous, so the last lines before process.exit are not lost
      sync: true,
    }),
  );
}

/**
 * Children of the process logger made before a reload that must follow its level: a pino child
 * keeps the level it was created with, and fastify's app.log is one (made at start-up; the
 * request loggers are its children, created per request, so they follow it at once).
 */
export class LogLevelFollowers {
  private readonly followers = new Set<{ level: string }>();

  add(logger: { level: string }): void {
    this.followers.add(logger);
  }

  /** Sets `level` on every follower and on `log`, saying so when the process logger's level changed. */
  apply(log: { level: string; info(msg: string): void }, level: string): void {
    for (const follower of this.followers) follower.level = level;
    if (log.level === level) return;
    log.level = level;
    log.info(`log level is now ${level}`);
  }
}
