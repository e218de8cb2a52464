import type { ServerResponse } from 'node:http';

import type { KeyStore } from '../../lib/store/contract';

/**
 * Keys this process reserved in `webhook()` whose execution has not started here yet, by owner
 * token. In one n8n process (regular mode) the execution of a new event runs in the process that
 * reserved its key, so a 5xx answer sent before `execute()` ran means n8n could not start the
 * execution (its own database did not answer, the workflow could not be loaded): nothing will
 * settle the key, and without this every retry would be answered 409 until the lease ends. The
 * key is marked failed instead, fenced by its owner token, so the provider's retry runs at once.
 * In queue mode the execution runs in another process and this process cannot tell: the lease
 * settles it there.
 */
const unstarted = new Set<string>();

export interface HeldKey {
	key: string;
	ownerToken: string;
	leaseEndsAt: Date | null;
}

/** Called by `execute()`: the execution holding this owner token runs, and settles its key. */
export function executionStarted(ownerToken: string): void {
	unstarted.delete(ownerToken);
}

/**
 * Watches the answer to the request whose keys `held` were reserved (one per new event of the
 * delivery): when it ends with a 5xx while no execution of this process took them, the keys are
 * marked failed. A sender that hangs up first leaves the keys to their execution or, if none
 * starts, to their lease.
 */
export function failIfExecutionNeverStarts(response: ServerResponse, held: HeldKey[], openStore: () => Promise<KeyStore>): void {
	for (const { ownerToken } of held) unstarted.add(ownerToken);
	// One listener for the delivery, however many events it carries.
	response.once('close', () => {
		const neverStarted = held.filter(({ ownerToken }) => unstarted.delete(ownerToken));
		if (neverStarted.length === 0 || !response.writableFinished || response.statusCode < 500) return;
		const error = `n8n answered ${response.statusCode} before the execution started: it could not start it. Nothing ran; the key is marked failed so that a retry runs the event.`;
		void openStore()
			.then(
				async (store) =>
					await store.fail(neverStarted.map(({ key, ownerToken, leaseEndsAt }) => ({ key, ownerToken, leaseEndsAt, error }))),
			)
			.catch(() => {
				// The store could not be reached: the lease ends the reservation instead.
			});
	});
}
