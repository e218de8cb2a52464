import { isSecretHeader } from '../keys/forbiddenHeaders';
import { MAX_INBOX_ITEM_BYTES } from '../store/rules';
import type { ItemJson } from '../types';

/*
 * The Idempotent Webhook trigger's inbox (Respond: At Once). An accepted event is reserved with
 * the item its execution starts from, the sender is answered at once, and the package — not the
 * sender — runs the event again from that item when its execution fails or its process dies,
 * until it succeeds or its attempts or age run out (then it is dead-lettered, kept for a replay by
 * hand). What is kept, and for how long, is this file's rule.
 */

/** Retry settings a user can change on the trigger; the store keeps them per event. */
export interface InboxSettings {
	/** Who runs the event's retries: the workflow (inboxOwner). */
	owner: string;
	/** Runs in all, the first included. */
	maxAttempts: number;
	/** The first retry's delay; each next one doubles it (capped by the store, with jitter). */
	firstRetryMs: number;
	/** How long after acceptance a retry may still start. */
	retryForMs: number;
	/** The body every accepted delivery (and every copy of it) is answered with. */
	acceptedBody: unknown;
}

/**
 * Defaults that outlast a typical outage of the API a workflow calls (minutes to a few hours): 12
 * runs, the first retry after 30 s, doubling to the store's one-hour cap, spread over about five and
 * a half hours, never starting after 24 hours — the window in which most providers (Stripe: 3 days,
 * Shopify: 4 hours, GitHub: none) would themselves have given up.
 */
export const INBOX_DEFAULTS = {
	maxAttempts: 12,
	firstRetrySeconds: 30,
	retryForHours: 24,
	acceptedBody: { received: true },
} as const;

/**
 * The largest item kept for a retry is the store's (its JSON text, UTF-8 bytes; the request's raw
 * bytes count twice, as base64 and parsed). A larger delivery is not accepted at once: it runs the
 * way "When the Workflow Ends" runs it, answered when its execution ends, retried by its sender.
 */
export { MAX_INBOX_ITEM_BYTES };

/**
 * The owner of an inbox event: the workflow that accepted it. Not the trigger node: a node deleted
 * and added again, or pasted, gets a new id, and the events it had accepted would never run again.
 * A workflow whose trigger answers At Once has only that one Idempotent Webhook (refused at publish
 * otherwise), so its retries always start through it.
 */
export function inboxOwner(workflowId: string): string {
	return `workflow:${workflowId}`;
}

/** The item as kept: the request as the workflow sees it, without a header that may carry a credential or a signature. */
interface KeptItem {
	json: ItemJson;
	/** The request's exact bytes, base64. */
	rawBody: string;
	mimeType: string;
}

/**
 * The text kept with an accepted event: its item without `idempotency` (made afresh for each run)
 * and without any header or query parameter that may carry a credential or a signature
 * (isSecretHeader, and the header Header Auth checks whatever its name). Undefined when it is over
 * MAX_INBOX_ITEM_BYTES.
 */
export function keptInboxItem(
	item: ItemJson,
	rawBody: Buffer,
	mimeType: string,
	{ credentialHeaders = [] }: { credentialHeaders?: readonly string[] } = {},
): string | undefined {
	const dropped = new Set(credentialHeaders.map((name) => name.trim().toLowerCase()));
	const headers = item.headers !== null && typeof item.headers === 'object' ? (item.headers as Record<string, unknown>) : {};
	const keptHeaders = Object.fromEntries(
		Object.entries(headers).filter(([name]) => !isSecretHeader(name) && !dropped.has(name.toLowerCase())),
	);
	// A query parameter named like a credential (?token=…) is one too: not kept either.
	const query = item.query !== null && typeof item.query === 'object' ? (item.query as Record<string, unknown>) : {};
	const keptQuery = Object.fromEntries(Object.entries(query).filter(([name]) => !isSecretHeader(name)));
	const json: ItemJson = { ...item, headers: keptHeaders, query: keptQuery };
	delete json.idempotency;
	let text: string;
	try {
		text = JSON.stringify({ json, rawBody: rawBody.toString('base64'), mimeType } satisfies KeptItem);
	} catch {
		// A body with no JSON form (a BigInt member): not kept, so not accepted at once.
		return undefined;
	}
	return Buffer.byteLength(text, 'utf8') > MAX_INBOX_ITEM_BYTES ? undefined : text;
}

/** A kept item, read back for a retry with this run's `idempotency`; undefined when the text is not one the package kept. */
export function inboxItemOf(text: string, idempotency: ItemJson): { json: ItemJson; rawBody: Buffer; mimeType: string } | undefined {
	let kept: unknown;
	try {
		kept = JSON.parse(text);
	} catch {
		return undefined;
	}
	if (kept === null || typeof kept !== 'object') return undefined;
	const { json, rawBody, mimeType } = kept as Partial<KeptItem>;
	if (json === null || typeof json !== 'object' || typeof rawBody !== 'string') return undefined;
	return {
		json: { ...json, idempotency },
		rawBody: Buffer.from(rawBody, 'base64'),
		mimeType: typeof mimeType === 'string' ? mimeType : 'application/json',
	};
}
