import { sha256Hex } from '../keys/sha256';
import type { DeliveryAnswer } from '../types';

/*
 * What the Idempotent Webhook trigger answers by itself, without starting an execution: one row
 * per outcome. The statuses are those of the webhook template (docs/templates.md#answers), so a
 * provider sees the same answers whichever way the workflow is built.
 */

/** The answer the trigger writes to the HTTP response. */
export interface WebhookAnswer {
	status: number;
	/** Header names in lower case. */
	headers: Record<string, string>;
	/** JSON, written as it is. */
	body: unknown;
}

/** Why the trigger answered by itself; also sent as the `x-idempotency-outcome` header. */
export type AnsweredOutcome = Exclude<DeliveryAnswer, 'new' | 'key_refused' | 'key_store_unavailable'> | 'not_reserved';

/** The header that names the outcome, as the webhook template's answers do. */
export const OUTCOME_HEADER = 'x-idempotency-outcome';
/** On a duplicate: the n8n execution that processed the event's first delivery, when the store knows it. */
export const FIRST_EXECUTION_HEADER = 'x-idempotency-first-execution';

interface AnswerRule {
	status: number;
	/** Whether the provider should retry: every 5xx and 409 asks it to. */
	when: string;
}

/** One rule per outcome. */
export const ANSWER_RULES: Readonly<Record<AnsweredOutcome, AnswerRule>> = {
	duplicate: {
		status: 200,
		when: 'the key was completed by an earlier delivery: its stored answer to a verified caller (signature or authentication), else {"status":"duplicate"}',
	},
	in_progress: { status: 409, when: 'an earlier delivery of the event holds the key (lease mode): the provider retries later' },
	authorization_required: { status: 401, when: "Basic authentication is on and the request has none (as n8n's Webhook node answers)" },
	forbidden: { status: 403, when: "the authentication header or Basic credentials are wrong (as n8n's Webhook node answers)" },
	invalid_signature: { status: 401, when: 'the signature does not verify, or its timestamp is outside the tolerance' },
	not_verified: {
		status: 503,
		when: 'the signing secret (or the authentication credential) could not be read or is unusable: nothing was checked',
	},
	not_reserved: { status: 503, when: 'the key store could not be reached, or the key was refused (NUL, lone surrogate, missing id)' },
	internal_error: { status: 503, when: 'anything unexpected: a generic body, never a secret or the payload' },
};

/**
 * A delivery with more events than one delivery may carry (MAX_EVENTS_PER_DELIVERY), answered
 * under not_reserved's outcome header: the same request never carries fewer, so an answer asking
 * for a retry (503) would only repeat it until the sender gives up; 413 tells it to send less.
 */
export const TOO_MANY_EVENTS_STATUS = 413;

/** The answer for an outcome, with the outcome header and any extra headers. */
export function answerFor(outcome: AnsweredOutcome, body: unknown, headers: Record<string, string> = {}): { answer: WebhookAnswer } {
	return {
		answer: {
			status: ANSWER_RULES[outcome].status,
			headers: { 'content-type': 'application/json; charset=utf-8', [OUTCOME_HEADER]: outcome, ...headers },
			body,
		},
	};
}

/**
 * A new event accepted into the inbox (Respond: At Once): 200 with the body the user set, before its
 * execution runs; the package retries the event from then on.
 */
export function acceptedAnswer(body: unknown): WebhookAnswer {
	return { status: 200, headers: { 'content-type': 'application/json; charset=utf-8', [OUTCOME_HEADER]: 'new' }, body };
}

/** The fields of the one log line per delivery: the outcome, the status and a hash of the key; never the payload, headers or a secret. */
export interface DeliveryLogFields {
	outcome: DeliveryAnswer;
	status: number | null;
	/** The first 16 hex digits of the key's SHA-256: enough to find the key's lines, not the key (which may be a body hash or an id). */
	keyHash: string | null;
}

export const DELIVERY_LOG_MESSAGE = 'Idempotent Webhook delivery';

export function deliveryLogFields(outcome: DeliveryAnswer, status: number | null, key: string | undefined): DeliveryLogFields {
	return { outcome, status, keyHash: key === undefined ? null : sha256Hex(key).slice(0, 16) };
}

/** The line's text: the fields in it too, since n8n's default (text) log output leaves the metadata out. */
export function deliveryLogLine(fields: DeliveryLogFields, counted: boolean): string {
	return `${DELIVERY_LOG_MESSAGE}: outcome=${fields.outcome} status=${fields.status ?? '-'} keyHash=${fields.keyHash ?? '-'} counted=${counted}`;
}

/*
 * What an execution answers its webhook from inside (through n8n's sendResponse, the way Respond to
 * Webhook answers), once the package knows what became of the event's keys: the Idempotent
 * Webhook trigger's answer, and Settle's answers for a delivery of several events.
 */

/** An answer sent from inside an execution. */
export interface ExecutionAnswer {
	statusCode: number;
	headers: Record<string, string>;
	body: Record<string, unknown>;
}

/** What became of the delivery's keys, by answer. */
export type SettlementOutcome = 'completed' | 'failed' | 'in_progress' | 'not_settled';

/** One rule per outcome; the outcome header where the webhook template sends one (a completed event's is the trigger's `new`). */
export const SETTLEMENT_ANSWER_RULES: Readonly<Record<SettlementOutcome, AnswerRule & { header?: string }>> = {
	completed: { status: 200, when: "every key of the delivery was completed: the workflow's answer" },
	failed: { status: 500, header: 'failed', when: 'the business step failed for a key of the delivery: the provider retries it' },
	in_progress: {
		status: 409,
		header: 'in_progress',
		when: 'a key of the delivery is held (the execution waits, was stopped mid-call, or other events of it still run): retry later',
	},
	not_settled: { status: 503, when: "the keys could not be settled when the execution ended (the key store's error): retry later" },
};

/** The answer for what became of the delivery's keys, with `body` as it is. */
export function settlementAnswer(outcome: SettlementOutcome, body: Record<string, unknown>): ExecutionAnswer {
	const { status, header } = SETTLEMENT_ANSWER_RULES[outcome];
	return { statusCode: status, headers: header ? { [OUTCOME_HEADER]: header } : {}, body };
}

/** 409 In Progress: the key is held, and the sender should retry later. */
export function inProgressAnswer(message: string, extra: Record<string, unknown> = {}): ExecutionAnswer {
	return settlementAnswer('in_progress', { received: false, inProgress: true, retry: true, ...extra, message });
}

/** 500: the step failed for an event of the delivery, its key is failed, and the sender should retry. */
export function failedAnswer(message: string, extra: Record<string, unknown> = {}): ExecutionAnswer {
	return settlementAnswer('failed', { received: false, retry: true, ...extra, message });
}
