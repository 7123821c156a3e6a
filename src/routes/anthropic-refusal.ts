/**
 * A Messages request a chat backend cannot be sent, refused before it takes a slot, in
 * Anthropic's shape. Where the bridge names the real API's `error_code`, it goes out as
 * `error.details.error_code`, which the SDKs read to recover (a message thread refused with
 * `thread_unsupported_request`: the tool runner sends the full history without `thread`).
 */
import { GatewayError } from '../errors.ts';
import type { BridgeError } from '../bridges/anthropic/types.ts';

class DetailedRefusal extends GatewayError {
  constructor(
    problem: BridgeError,
    private readonly errorCode: string,
  ) {
    super({ status: problem.status, code: errorCode, param: problem.param ?? null, message: problem.message });
  }

  override toAnthropic(): { type: 'error'; error: { type: string; message: string } } {
    const body = super.toAnthropic();
    return { ...body, error: { ...body.error, details: { error_code: this.errorCode } } as typeof body.error };
  }
}

export function translationRefusal(problem: BridgeError): GatewayError {
  if (problem.errorCode) return new DetailedRefusal(problem, problem.errorCode);
  const { status, message } = problem;
  return new GatewayError({ status, code: 'invalid_request', param: problem.param ?? null, message });
}
