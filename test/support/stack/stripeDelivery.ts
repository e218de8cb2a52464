// Deliveries to a webhook as Stripe sends them: the body signed with the endpoint secret in a
// Stripe-Signature header. The e2e suite and the demo act as Stripe. Node 20 compatible.
import crypto from 'node:crypto';
import { parseJsonOrUndefined } from './n8nRest';
import { headerValue, requestOnOwnConnection } from './ownConnection';

/**
 * The Stripe endpoint signing secret of the test/demo credential "Webhook Signature Secret". A fixed
 * test value, not a real secret: the e2e suite and the demo act as Stripe and sign with it.
 */
export const TEST_WEBHOOK_SECRET = 'whsec_test_secret_for_e2e';

export interface SignatureOptions {
	/** Defaults to TEST_WEBHOOK_SECRET. */
	secret?: string;
	/** Unix seconds; defaults to now. */
	timestamp?: number;
}

/**
 * A `Stripe-Signature` header value, computed the way Stripe does:
 * `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body bytes>")>`. The secret is used as
 * text, `whsec_` prefix included. For the test client acting as Stripe.
 */
export function stripeSignature(
	raw: string | Buffer,
	{ secret = TEST_WEBHOOK_SECRET, timestamp = Math.floor(Date.now() / 1000) }: SignatureOptions = {},
): string {
	const bytes = Buffer.isBuffer(raw) ? raw : Buffer.from(raw, 'utf8');
	const signed = Buffer.concat([Buffer.from(`${timestamp}.`, 'utf8'), bytes]);
	const v1 = crypto.createHmac('sha256', secret).update(signed).digest('hex');
	return `t=${timestamp},v1=${v1}`;
}

export interface DeliverOptions extends SignatureOptions {
	sign?: boolean;
	timeoutMs?: number;
}

/** One delivery's answer; `json` is the body parsed (undefined when it is not JSON), of the shape `T` the caller expects. */
export interface Delivery<T = unknown> {
	status: number;
	outcome: string | null;
	firstExecution: string | null;
	json: T;
	text: string;
	ms: number;
	raw: string;
	signature: string | null;
}

/**
 * One HTTP delivery; returns status, the template's x-idempotency-outcome header, the first
 * delivery's execution a copy is told of (x-idempotency-first-execution), the body and the
 * Stripe-Signature header sent. Signed like Stripe with the test secret unless `sign: false`;
 * `secret` and `timestamp` change the signature; a `stripe-signature` in `headers` replaces it.
 * With `timeoutMs` the sender gives up after that long (the promise rejects with a TimeoutError).
 */
export async function deliver<T = unknown>(
	url: string,
	body: unknown,
	headers: Record<string, string> = {},
	{ sign = true, secret, timestamp, timeoutMs }: DeliverOptions = {},
): Promise<Delivery<T>> {
	const raw = typeof body === 'string' ? body : JSON.stringify(body);
	// Header names are case-insensitive: a caller's header replaces the one set here.
	const sent: Record<string, string> = { 'content-type': 'application/json' };
	if (sign) sent['stripe-signature'] = stripeSignature(raw, { secret, timestamp });
	for (const [name, value] of Object.entries(headers)) sent[name.toLowerCase()] = value;
	const started = Date.now();
	const { status, headers: answered, text } = await requestOnOwnConnection(url, { headers: sent, body: raw, timeoutMs });
	return {
		status,
		outcome: headerValue(answered, 'x-idempotency-outcome'),
		firstExecution: headerValue(answered, 'x-idempotency-first-execution'),
		json: parseJsonOrUndefined<T>(text) as T,
		text,
		ms: Date.now() - started,
		raw,
		signature: sent['stripe-signature'] ?? null,
	};
}
