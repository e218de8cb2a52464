import type { SignatureFailureReason } from './types';

/** One sentence per failure reason, for error messages and logs; says what to check, never a secret. */
export const FAILURE_DESCRIPTIONS: Readonly<Record<SignatureFailureReason, string>> = {
	missing_header: 'The request has no signature header (or lacks another header the scheme requires).',
	malformed_header:
		'The signature header could not be parsed: wrong prefix, unsupported version, bad hex/base64, or sent more than once with different values.',
	missing_timestamp: 'The scheme signs a timestamp, but the request carries none.',
	malformed_timestamp: 'The signed timestamp is not a whole number of Unix seconds, or was sent more than once with different values.',
	signature_mismatch: 'No signature in the request matches any configured secret: wrong secret, or the body was changed.',
	timestamp_too_old: 'The signature is genuine but older than the tolerance: a replay, or a very late delivery.',
	timestamp_in_future: 'The signature is genuine but dated further ahead than the tolerance: check the clocks.',
	multipart_body:
		'The request is multipart/form-data: n8n takes it apart (its files become binary fields) before its bytes could be checked, so no signature over it can be trusted. Providers sign JSON or form bodies.',
};
