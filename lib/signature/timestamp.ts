import type { SignatureFailureReason } from './types';

/** Whole seconds only, and at most 12 digits: far beyond any real date, far below `Number.MAX_SAFE_INTEGER`. */
const UNIX_SECONDS = /^\d{1,12}$/;

/** Parses a Unix timestamp in seconds as providers send it; `undefined` when it is not one. */
export function parseUnixSeconds(text: string): number | undefined {
	return UNIX_SECONDS.test(text) ? Number(text) : undefined;
}

/**
 * Checks a signed timestamp against the replay window, in both directions: a too-old timestamp is
 * a replay (or a very late retry), one too far ahead means skewed clocks or a forgery that tries
 * to stay valid for longer. The bounds are inclusive.
 */
export function checkTimestamp(timestampSeconds: number, nowSeconds: number, toleranceSeconds: number): SignatureFailureReason | undefined {
	if (nowSeconds - timestampSeconds > toleranceSeconds) return 'timestamp_too_old';
	if (timestampSeconds - nowSeconds > toleranceSeconds) return 'timestamp_in_future';
	return undefined;
}
