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
 * Watches the answer to the request whose key `held` was reserved: when it ends with a 5xx while
 * no execution of this process took the key, the key is marked failed. A sender that hangs up first
 * leaves the key to its execution or, if none starts, to its lease.
 */
export function failIfExecutionNeverStarts(response: ServerResponse, held: HeldKey, openStore: () => Promise<KeyStore>): void {
	unstarted.add(held.ownerToken);
	response.once('close', () => {
		const neverStarted = unstarted.delete(held.ownerToken);
		if (!neverStarted || !response.writableFinished || response.statusCode < 500) return;
		const error = `n8n answered ${response.statusCode} before the execution started: it could not start it. Nothing ran; the key is marked failed so that a retry runs the event.`;
		void openStore()
			.then(async (store) => await store.fail([{ key: held.key, ownerToken: held.ownerToken, leaseEndsAt: held.leaseEndsAt, error }]))
			.catch(() => {
				// The store could not be reached: the lease ends the reservation instead.
			});
	});
}
