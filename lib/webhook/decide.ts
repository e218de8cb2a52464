import { ForbiddenKeySourceError, InvalidConfigurationError, MissingKeyError, UnusableKeyError, type IdempotencyError } from '../errors';
import {
	DEFAULT_CORRELATION_HEADER,
	DEFAULT_MAX_PAYLOAD_KB,
	validateEvidenceConfig,
	type EvidenceConfig,
} from '../evidence/replayEvidence';
import type { HeaderBag } from '../headers';
import { deriveKey, keyBody, payloadFingerprint, validateKeyConfig, type KeyConfig, type KeyInput } from '../keys/deriveKey';
import { evidenceOutput, idempotencyOutput } from '../pipeline/idempotencyOutput';
import { keyedEntry, reserveAll, routeOf, type KeyedEntry, type ReservationRoute } from '../pipeline/steps';
import { verifySignature, type GenericHmacOptions, type SignatureScheme } from '../signature';
import type { KeyStore } from '../store/contract';
import type { CompactRecord, DeliveryAnswer, ItemJson, ReservationMode, ReservationResult } from '../types';
import {
	acceptedAnswer,
	answerFor,
	FIRST_EXECUTION_HEADER,
	OUTCOME_HEADER,
	TOO_MANY_EVENTS_STATUS,
	type AnsweredOutcome,
	type WebhookAnswer,
} from './answers';
import { refusedCaller, type AuthenticationSettings } from './authentication';
import { parseBody } from './body';
import { eventKeyRefusal, eventsOf, eventsPathSteps, type DeliveryEvent } from './events';
import { keptInboxItem, type InboxSettings } from './inbox';
import { storedAnswer } from './storedAnswer';

/** One HTTP request as n8n hands it to a trigger's `webhook()`. */
export interface WebhookRequest {
	method: string;
	/** As n8n gives them: names in lower case, a repeated header as an array (or joined with ", "). */
	headers: HeaderBag;
	/** The exact bytes received: signatures and exact numbers are read from them. */
	rawBody: Buffer;
	query: Record<string, unknown>;
}

/**
 * How the request is verified. `none` is a choice the user makes explicitly (a sender that signs
 * nothing); there is no default that skips the check.
 */
export type VerificationSettings =
	| { scheme: 'none' }
	| {
			scheme: SignatureScheme;
			/** Reads the secrets, newest first; may throw (n8n could not read the credential). */
			secrets: () => Promise<readonly string[]> | readonly string[];
			/**
			 * When `secrets` may give a kept copy: after a signature matched none of them, the secrets
			 * read anew, or undefined when the copy is current (the refusal stands). May throw.
			 */
			secretsAfterMismatch?: () => Promise<readonly string[] | undefined>;
			toleranceSeconds?: number;
			generic?: GenericHmacOptions;
	  };

/** How the key is derived and reserved. */
export interface KeySettings {
	key: KeyConfig;
	/** For Key Source Custom Value: the value the node computed. */
	customValue?: unknown;
	mode: ReservationMode;
	leaseSeconds: number;
	retentionSeconds: number;
	/** Store the payload and a correlation id with a new key (off unless given). */
	evidence?: EvidenceConfig;
	/** Fingerprint the payload, so a later copy with other bytes says payloadMismatch. */
	fingerprint?: boolean;
}

export interface DecideInput {
	request: WebhookRequest;
	/** Who may call; none checked when absent. */
	authentication?: AuthenticationSettings;
	verification: VerificationSettings;
	keySettings: KeySettings;
	/** Opens the key store; may throw (an embedded store refused on this host, an unreadable credential). */
	store: () => Promise<KeyStore> | KeyStore;
	/** The time a signed timestamp is judged against. */
	clock: () => Date;
	/** Stored with the key (there is no execution yet: its id is recorded when it settles). */
	workflowId: string;
	instanceId?: string;
	/** Where the events are when a delivery carries several (`body`, `body.events`); empty or absent: the body is one event. */
	eventsPath?: string;
	/** Respond: At Once — a new event is kept with its item and answered before its execution runs. */
	inbox?: InboxSettings & {
		/** Headers that carry the trigger's credential whatever their name (Header Auth's): never kept with the item. */
		credentialHeaders?: () => Promise<readonly string[]>;
	};
}

/** One new, verified event the execution runs: one item, as Reserve's New output gives it. */
export interface StartedEvent {
	/** The `idempotency` object, as Reserve gives it (key, owner token, outcome, …). */
	idempotency: ItemJson;
	/** The item's JSON: headers, query, parsed body (the event, with an Events Path) and `idempotency`. */
	item: ItemJson;
	/** The event's exact bytes (the request's, or the element's with an Events Path), for the item's binary. */
	rawBody: Buffer;
	mimeType: string;
}

/** What the trigger starts: one execution, one item per new event of the delivery. */
export interface WebhookStart {
	events: StartedEvent[];
	/**
	 * Accepted into the inbox (Respond: At Once): the answer to write before the execution starts.
	 * Absent: the execution's end answers (When the Workflow Ends, or an item too large to keep).
	 */
	acceptedAnswer?: WebhookAnswer;
}

/**
 * An answer the trigger gives by itself, with what its store counts it as and, once the key was
 * derived, the key (for the log line's hash; never sent or logged as it is).
 */
export interface WebhookAnswered {
	answer: WebhookAnswer;
	counted: DeliveryAnswer;
	key?: string;
}

export type WebhookDecision = WebhookAnswered | { start: WebhookStart };

/** Visible ASCII only: any other stored text could not be sent as a header value. */
const HEADER_VALUE = /^[\x21-\x7e]{1,255}$/;

/** A duplicate's body when no stored answer is replayed. */
const DUPLICATE_BODY = { status: 'duplicate' };

/** Evidence when none is asked for: nothing but the source (the provider preset or scope) is stored. */
const NO_EVIDENCE: EvidenceConfig = {
	storePayload: false,
	maxPayloadKb: DEFAULT_MAX_PAYLOAD_KB,
	correlation: 'off',
	correlationHeader: DEFAULT_CORRELATION_HEADER,
};

/**
 * Decides what to do with one webhook request: answer it (a duplicate, a copy in progress, a
 * forgery, a refused key, a store or secret that cannot be used) or start an execution for a new,
 * verified event whose key is now reserved. The signature is checked before anything is read or
 * written. Never throws: anything unexpected is a 503 with a generic body.
 */
export async function decideWebhook(input: DecideInput): Promise<WebhookDecision> {
	try {
		return await decide(input);
	} catch {
		return internalError();
	}
}

/** Anything unexpected. The error may quote the payload or a setting: none of it goes to the sender. */
export function internalError(): WebhookAnswered {
	return { ...answerFor('internal_error', { error: 'internal_error' }), counted: 'internal_error' };
}

/** An answer counted under its own outcome (every outcome but not_reserved, which has two causes). */
function answered(
	outcome: Exclude<AnsweredOutcome, 'not_reserved'>,
	body: unknown,
	key?: string,
	headers?: Record<string, string>,
): WebhookAnswered {
	return { ...answerFor(outcome, body, headers), counted: outcome, ...(key === undefined ? {} : { key }) };
}

async function decide(input: DecideInput): Promise<WebhookDecision> {
	const { request } = input;
	const caller = await refusedCaller(input.authentication ?? { kind: 'none' }, request.headers);
	// The caller's answers (401, 403, 503) are counted under their outcome header.
	if (caller) return { ...caller, counted: caller.answer.headers[OUTCOME_HEADER] as DeliveryAnswer };
	const refused = await verify(input);
	if (refused) return refused;

	const body = parseBody(request.rawBody, request.headers);
	const eventsPath = input.eventsPath?.trim() ?? '';
	if (eventsPath === '') return await decideEvents(input, [{ body, rawBody: request.rawBody }], false);
	let found;
	try {
		const refusal = eventKeyRefusal(input.keySettings.key);
		if (refusal) throw new InvalidConfigurationError(refusal);
		// The events are found where the key of one would be: in the signed bytes' JSON, whatever the unsigned Content-Type says.
		found = eventsOf(
			keyBody({ body, rawBody: request.rawBody, headers: request.headers }),
			request.rawBody,
			eventsPathSteps(eventsPath),
			eventsPath,
		);
	} catch (error) {
		return isKeyRefusal(error) ? keyRefused(error.message) : internalError();
	}
	if ('refused' in found) {
		if (found.refused === 'notAnArray')
			return { ...answerFor('not_reserved', { error: 'events_not_found', reason: found.reason }), counted: 'key_refused' };
		// The same request never carries fewer events: an answer asking for a retry would only repeat it.
		const { answer } = answerFor('not_reserved', { error: 'too_many_events', reason: found.reason });
		return { answer: { ...answer, status: TOO_MANY_EVENTS_STATUS }, counted: 'key_refused' };
	}
	// Nothing to run: answered as a copy is, the sender's job is done.
	if (found.events.length === 0) return answered('duplicate', { status: 'no_events' });
	return await decideEvents(input, found.events, true);
}

/** A key the request cannot give, or a key setting that cannot work: nothing is reserved, and the sender retries. */
function keyRefused(reason: string): WebhookAnswered {
	return { ...answerFor('not_reserved', { error: 'key_refused', reason }), counted: 'key_refused' };
}

/** One event with what its reservation needs: its key, its item, its exact bytes. */
interface PreparedEvent {
	entry: KeyedEntry;
	item: ItemJson;
	rawBody: Buffer;
	mimeType: string;
}

/**
 * Reserves the key of each event (one event: the request's body; several: each element at the
 * Events Path, as if it were the body) and decides: answer by itself, or start one execution with
 * one item per new event. A key refused for any event refuses the whole delivery, nothing reserved.
 */
async function decideEvents(input: DecideInput, events: DeliveryEvent[], several: boolean): Promise<WebhookDecision> {
	const { keySettings } = input;
	const prepared: PreparedEvent[] = [];
	let evidence: EvidenceConfig;
	try {
		validateKeyConfig(keySettings.key);
		evidence = keySettings.evidence ?? NO_EVIDENCE;
		validateEvidenceConfig(evidence);
	} catch (error) {
		return isKeyRefusal(error) ? keyRefused(error.message) : internalError();
	}
	for (const [index, event] of events.entries()) {
		try {
			prepared.push(prepareEvent(input, event, evidence, several));
		} catch (error) {
			if (!isKeyRefusal(error)) return internalError();
			return keyRefused(several ? `Event ${index + 1} of ${events.length}: ${error.message}` : error.message);
		}
	}

	// At Once keeps every event of the delivery, or none: one too large to keep sends the whole delivery the When the Workflow Ends way.
	let kept: Array<string | undefined> = [];
	if (input.inbox) {
		const credentialHeaders = await input.inbox.credentialHeaders?.();
		kept = prepared.map(({ item, rawBody, mimeType }) => keptInboxItem(item, rawBody, mimeType, { credentialHeaders }));
	}
	const inbox = input.inbox && kept.every((text) => text !== undefined) ? input.inbox : undefined;
	if (inbox) {
		prepared.forEach(({ entry }, index) => {
			entry.request.inbox = {
				owner: inbox.owner,
				item: kept[index] as string,
				maxAttempts: inbox.maxAttempts,
				firstRetryMs: inbox.firstRetryMs,
				retryForMs: inbox.retryForMs,
			};
		});
	}

	let store: KeyStore;
	let reserved;
	try {
		store = await input.store();
		reserved = await reserveAll(
			store,
			prepared.map(({ entry }, itemIndex) => ({ itemIndex, value: entry })),
			{
				mode: keySettings.mode,
				leaseSeconds: keySettings.leaseSeconds,
				retentionSeconds: keySettings.retentionSeconds,
				workflowId: input.workflowId,
				instanceId: input.instanceId,
				detail: 'full',
			},
		);
	} catch {
		// Nothing is known to be reserved. Which store, host or file failed is not the sender's business.
		return {
			...answerFor('not_reserved', { error: 'key_store_unavailable' }),
			counted: 'key_store_unavailable',
			key: prepared[0].entry.derived.key,
		};
	}

	const routes = reserved.map(({ result }) => triggerRoute(result as ReservationResult, keySettings.mode));
	if (!several) {
		const { result } = reserved[0];
		if (routes[0] === 'inProgress') return answered('in_progress', { status: 'in_progress' }, result.key);
		if (routes[0] === 'duplicate') return await duplicateAnswer(input, result as ReservationResult);
	}
	const fresh = reserved.flatMap((_, index) => (routes[index] === 'new' ? [index] : []));
	const heldElsewhere = reserved.find((_, index) => routes[index] === 'inProgress');
	if (heldElsewhere && !inbox) {
		// The sender retries the whole delivery: its new events run then, with it, rather than now with an answer that must say "retry".
		await releaseQuietly(
			store,
			fresh.map((index) => reserved[index].result),
		);
		return answered('in_progress', { status: 'in_progress' }, heldElsewhere.result.key);
	}
	// Every event a copy: answered as one, without a stored answer (each event has its own).
	if (fresh.length === 0)
		return answered(
			heldElsewhere ? 'in_progress' : 'duplicate',
			heldElsewhere ? { status: 'in_progress' } : DUPLICATE_BODY,
			reserved[0].result.key,
		);

	const starts: StartedEvent[] = fresh.map((index) => {
		const { entry, item, rawBody, mimeType } = prepared[index];
		const { result } = reserved[index];
		const idempotency: ItemJson = {
			...idempotencyOutput(result, entry.derived, {
				mode: keySettings.mode,
				detail: 'compact',
				fingerprinting: keySettings.fingerprint === true,
			}),
			...evidenceOutput(entry.evidence, result),
		};
		if (entry.evidence.warnings.length > 0) idempotency.warnings = entry.evidence.warnings;
		if (inbox) idempotency.answeredAtOnce = true;
		return { idempotency, item: { ...item, idempotency }, rawBody, mimeType };
	});
	// At Once: the new events are kept, and run by the package whatever the sender hears. An event held by another
	// run (not an accepted one: those are copies) is not: the sender is asked to retry, and its retry finds the others copies.
	const answerFirst = inbox
		? heldElsewhere
			? answerFor('in_progress', { status: 'in_progress' }).answer
			: acceptedAnswer(inbox.acceptedBody)
		: undefined;
	return { start: { events: starts, ...(answerFirst ? { acceptedAnswer: answerFirst } : {}) } };
}

/** One event's key and reservation request, derived from the event as if it were the request's body. */
function prepareEvent(input: DecideInput, event: DeliveryEvent, evidence: EvidenceConfig, several: boolean): PreparedEvent {
	const { request, keySettings } = input;
	const keyInput: KeyInput = {
		body: event.body,
		headers: request.headers,
		rawBody: event.rawBody,
		sentBytes: request.rawBody,
		customValue: keySettings.customValue,
		item: keySettings.key.strategy === 'field' ? { headers: request.headers, query: request.query, body: event.body } : undefined,
	};
	const derived = deriveKey(keyInput, keySettings.key);
	const payloadHash = keySettings.fingerprint ? payloadFingerprint(keyInput) : null;
	const entry = keyedEntry(derived, payloadHash, keySettings.key, {
		config: evidence,
		// No execution exists yet: a correlation id comes from a request header.
		input: { payload: event.body, rawBody: event.rawBody, headers: request.headers, executionId: '' },
	});
	const item: ItemJson = { headers: request.headers as ItemJson, query: request.query as ItemJson, body: event.body as ItemJson };
	// An event of several runs with its own bytes as the item's raw body (JSON), not the whole delivery's.
	const rawBody = event.rawBody ?? Buffer.from(JSON.stringify(event.body) ?? 'null', 'utf8');
	return { entry, item, rawBody, mimeType: several ? 'application/json' : mimeTypeOf(request.headers) };
}

/** A copy of one event: its stored answer to a verified caller, else {"status":"duplicate"}; At Once never answers with stored data. */
async function duplicateAnswer(input: DecideInput, result: ReservationResult): Promise<WebhookAnswered> {
	// At Once never answers with stored data: the sender's job ended when the event was accepted.
	// Anyone who knows an event's id could read its stored answer: only a verified caller gets it.
	if (input.inbox || !verifiedCaller(input)) return answered('duplicate', DUPLICATE_BODY, result.key);
	// The full record (detail: 'full'): it names the execution that processed the first delivery.
	const { executionId, response } = result.record;
	const headers: Record<string, string> = executionId && HEADER_VALUE.test(executionId) ? { [FIRST_EXECUTION_HEADER]: executionId } : {};
	// A replayed answer is cleaned by the same rule as a stored one, the trigger's own secrets included.
	const replayed = storedAnswer(response ?? undefined, { ownSecrets: await ownSecretsOf(input) });
	return answered('duplicate', replayed ?? DUPLICATE_BODY, result.key, headers);
}

/** The signing secrets each delivery's signature was verified with (verify reads them): its copy's answer is replayed without them. */
const verifiedWith = new WeakMap<DecideInput, readonly string[]>();

/**
 * The trigger's own secrets this delivery has read already, none read again: the signing secrets it was verified
 * with, and the authentication's Header Auth value or Basic Auth password (the node reads each credential once per
 * delivery; the caller's check read it).
 */
async function ownSecretsOf(input: DecideInput): Promise<string[]> {
	const secrets = [...(verifiedWith.get(input) ?? [])];
	const authentication = input.authentication ?? { kind: 'none' };
	try {
		if (authentication.kind === 'header') secrets.push((await authentication.credentials()).value);
		if (authentication.kind === 'basic') secrets.push((await authentication.credentials()).password);
	} catch {
		// Not reached: a credential that cannot be read refuses the caller before any key is reserved.
	}
	return secrets;
}

/** Frees keys this delivery reserved and will not run; a store that fails leaves them to their lease. */
async function releaseQuietly(store: KeyStore, results: Array<ReservationResult<CompactRecord>>): Promise<void> {
	const owned = results.flatMap(({ key, ownerToken, record }) =>
		ownerToken ? [{ key, ownerToken, leaseEndsAt: record.lockedUntil }] : [],
	);
	if (owned.length === 0) return;
	try {
		await store.release(owned);
	} catch {
		// Held until the lease ends: the sender's retry is answered 409 until then, never lost.
	}
}

/** The request's media type as n8n's Webhook node gives the raw body's (JSON when none is said). */
function mimeTypeOf(headers: HeaderBag): string {
	const value = headers['content-type'];
	const text = Array.isArray(value) ? value[0] : value;
	return typeof text === 'string' && text !== '' ? text : 'application/json';
}

/** Whether the caller proved who it is: a signature verified, or authentication passed (both are checked before this is asked). */
function verifiedCaller(input: DecideInput): boolean {
	return input.verification.scheme !== 'none' || (input.authentication?.kind ?? 'none') !== 'none';
}

/**
 * The route of the trigger's reservation. The trigger settles every key it reserves when the
 * execution ends, so a Permanent key (`completed` from its reservation on) that its owner has not
 * completed is not done: its run is still going, or it died — the store keeps no lease for a
 * Permanent key and cannot tell which. Either way the sender must not get a 2xx for it.
 */
function triggerRoute(result: ReservationResult, mode: ReservationMode): ReservationRoute {
	const route = routeOf(result, mode);
	return route === 'duplicate' && mode === 'permanent' && result.record.effectCompleted === false ? 'inProgress' : route;
}

/** The answer for a request that must not go on (forged, stale, or not checkable); none when it is verified. */
async function verify(input: DecideInput): Promise<WebhookAnswered | undefined> {
	const { verification, request } = input;
	if (verification.scheme === 'none') return undefined;
	let secrets: readonly string[];
	try {
		secrets = await verification.secrets();
	} catch {
		return answered('not_verified', { error: 'signing_secret_unavailable' });
	}
	const check = (candidates: readonly string[]) => {
		verifiedWith.set(input, candidates);
		return verifySignature({
			scheme: verification.scheme,
			headers: request.headers,
			rawBody: request.rawBody,
			secrets: candidates,
			toleranceSeconds: verification.toleranceSeconds,
			nowSeconds: Math.floor(input.clock().getTime() / 1000),
			generic: verification.generic,
		});
	};
	let result;
	try {
		result = check(secrets);
	} catch {
		// A configuration the secret does not fit (SignatureConfigError): nothing could be checked.
		return answered('not_verified', { error: 'signing_secret_unusable' });
	}
	if (!result.valid && result.reason === 'signature_mismatch' && verification.secretsAfterMismatch) {
		// A kept copy of the secrets refuses nothing a new read would accept (a secret saved just now).
		let fresh: readonly string[] | undefined;
		try {
			fresh = await verification.secretsAfterMismatch();
		} catch {
			return answered('not_verified', { error: 'signing_secret_unavailable' });
		}
		if (fresh) {
			try {
				result = check(fresh);
			} catch {
				return answered('not_verified', { error: 'signing_secret_unusable' });
			}
		}
	}
	return result.valid ? undefined : answered('invalid_signature', { error: 'invalid_signature', reason: result.reason });
}

/** A key the sender's request cannot give (refused per item by Reserve), or a key setting that cannot work. */
function isKeyRefusal(error: unknown): error is IdempotencyError {
	return (
		error instanceof MissingKeyError ||
		error instanceof UnusableKeyError ||
		error instanceof ForbiddenKeySourceError ||
		error instanceof InvalidConfigurationError
	);
}
