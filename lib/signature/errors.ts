import { IdempotencyError } from '../errors';

/**
 * Base of the signature verifier's errors: one family with the rest of the package, so the nodes'
 * `toNodeError` names them like every other core error. Thrown only for a broken configuration,
 * never for a bad request (those are `VerifySignatureResult` values). Messages never contain
 * secret material.
 */
export class SignatureError extends IdempotencyError {}

/** The verifier was configured wrongly: no usable secret, an undecodable Standard Webhooks secret, a bad option. */
export class SignatureConfigError extends SignatureError {}
