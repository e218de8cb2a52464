/**
 * Base of the signature verifier's errors. Thrown only for a broken configuration, never for a bad
 * request (those are `VerifySignatureResult` values). Messages never contain secret material.
 */
export class SignatureError extends Error {
	constructor(message: string, options?: { cause?: unknown }) {
		super(message, options);
		this.name = new.target.name;
	}
}

/** The verifier was configured wrongly: no secrets, an undecodable Standard Webhooks secret, a bad option. */
export class SignatureConfigError extends SignatureError {}
