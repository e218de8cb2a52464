import { BINARY_ENCODING, type IDataObject, type ITriggerFunctions, type ITriggerResponse } from 'n8n-workflow';

import type { KeyStore } from '../../lib/store/contract';
import { inboxItemOf } from '../../lib/webhook/inbox';

/*
 * Starts the inbox's retries (Respond: At Once). n8n runs a node's `trigger()` for a published
 * workflow on the leader main only (active-workflow-manager: triggers and pollers are added where
 * `isLeader`; `n8n webhook` processes and workers never run them), beside the node's webhooks. The
 * store hands each due event to exactly one claimer (a new owner token, fenced like Claim for
 * Replay), so a second main briefly taking the lead cannot start a retry twice. Each claimed event
 * runs as a new execution of this workflow from its kept item; its end settles the key as any run's
 * does, and a failure schedules the next retry in the store.
 */

/** How often the store is asked for due retries while nothing is known to be due sooner. */
export const INBOX_POLL_MS = 2000;
/** Events started per look; the rest wait for the next look, so one look never floods n8n. */
const CLAIMS_PER_LOOK = 20;

export interface InboxRunner {
	openStore: () => Promise<KeyStore>;
	owner: string;
	/** The lease a retry's run gets, as the trigger's Lease gives a delivery. */
	leaseMs: number;
	pollMs?: number;
}

/** Looks for due retries until the workflow is unpublished; never throws into n8n. */
export function runInbox(context: ITriggerFunctions, runner: InboxRunner): ITriggerResponse {
	let timer: NodeJS.Timeout | undefined;
	let closed = false;
	let looking: Promise<void> = Promise.resolve();
	const look = async () => {
		try {
			const store = await runner.openStore();
			// A read first: claiming takes the embedded file's write lock, which deliveries' reservations wait for.
			const due = await store.nextInboxDue(runner.owner);
			if (due === null || due.inMs > 0) return;
			const claims = await store.claimDueInbox({ owner: runner.owner, limit: CLAIMS_PER_LOOK, leaseMs: runner.leaseMs });
			for (const claim of claims) startRetry(context, store, claim);
		} catch (error) {
			// The store did not answer: nothing was claimed, the next look asks again.
			context.logger.warn('Idempotent Webhook could not look for due retries', { error: error instanceof Error ? error.name : 'unknown' });
		}
	};
	const next = () => {
		if (closed) return;
		timer = setTimeout(() => {
			looking = look().finally(next);
		}, runner.pollMs ?? INBOX_POLL_MS);
	};
	looking = look().finally(next);
	return {
		closeFunction: async () => {
			closed = true;
			if (timer) clearTimeout(timer);
			// A look under way finishes its emits: a claimed event is either started or left to its lease.
			await looking;
		},
	};
}

type Claim = Awaited<ReturnType<KeyStore['claimDueInbox']>>[number];

/** Runs one claimed event as a new execution; a kept item that cannot be read is failed (its attempts count on). */
function startRetry(context: ITriggerFunctions, store: KeyStore, claim: Claim): void {
	const idempotency: IDataObject = {
		key: claim.key,
		isNew: true,
		outcome: 'new',
		ownerToken: claim.ownerToken,
		attempts: claim.attempt,
		lockedUntil: claim.leaseEndsAt ? claim.leaseEndsAt.toISOString() : null,
		answeredAtOnce: true,
	};
	const item = inboxItemOf(claim.item, idempotency);
	if (!item) {
		void store
			.fail([{ key: claim.key, ownerToken: claim.ownerToken, leaseEndsAt: claim.leaseEndsAt, error: 'The kept event could not be read.' }])
			.catch(() => undefined);
		return;
	}
	context.emit([
		[{ json: item.json as IDataObject, binary: { data: { data: item.rawBody.toString(BINARY_ENCODING), mimeType: item.mimeType } } }],
	]);
}
