import { isSecretHeader } from '../keys/forbiddenHeaders';
import { REDACTED, redactedErrorText } from './redactedText';
import { storableText } from '../store/storableValues';
import { isWithheldMember } from '../webhook/storedAnswer';
import { inboxItemOf } from '../webhook/inbox';
import type { StoredKey } from '../types';

/*
 * A short text of an event's payload for a page people read (the dashboard template): enough to
 * recognise the event, never a credential. Members are judged by name, at any depth, with the
 * rules that keep credentials out of stored answers and kept items: the request's headers and the
 * reservation are left out, and a member named like a credential (token, secret, password,
 * authorization, api key, signature, …) shows REDACTED instead of its value, in a text that holds
 * JSON or a form too.
 */

/** The longest preview, in characters; a longer text is cut and ends with PREVIEW_CUT. */
export const PAYLOAD_PREVIEW_CHARS = 400;
export const PREVIEW_CUT = '…';

/** The preview of one value as JSON text; null when there is none (undefined, or no JSON form). */
export function payloadPreview(value: unknown, maxChars: number = PAYLOAD_PREVIEW_CHARS): string | null {
	if (value === undefined) return null;
	let text: string | undefined;
	try {
		text = JSON.stringify(value, (_key, member: unknown) => {
			// A text may hold JSON or a form of its own (a body posted as text/plain, Slack's `payload=`): its
			// credentials are judged by name inside it too.
			if (typeof member === 'string') return redactedErrorText(storableText(member).text);
			if (typeof member === 'bigint') return member.toString();
			if (member === null || typeof member !== 'object' || Array.isArray(member)) return member;
			const shown: Record<string, unknown> = {};
			for (const [name, inner] of Object.entries(member as Record<string, unknown>)) {
				if (isWithheldMember(name)) continue;
				Object.defineProperty(shown, storableText(name).text, {
					value: isSecretHeader(name) ? REDACTED : inner,
					enumerable: true,
					writable: true,
					configurable: true,
				});
			}
			return shown;
		});
	} catch {
		// Circular, or nested deeper than JSON can be written.
		return null;
	}
	if (text === undefined) return null;
	return text.length > maxChars ? text.slice(0, maxChars - PREVIEW_CUT.length) + PREVIEW_CUT : text;
}

/**
 * The preview of a stored key's event: its stored payload (Idempotency Reserve's Store Payload), else
 * the body of the item the Idempotent Webhook kept (read with Get Key's `inboxItem`), else null.
 */
export function storedKeyPreview(stored: Pick<StoredKey, 'payload' | 'payloadStored' | 'inboxItem'>): string | null {
	if (stored.payloadStored) return payloadPreview(stored.payload);
	if (typeof stored.inboxItem !== 'string') return null;
	const kept = inboxItemOf(stored.inboxItem, {});
	return kept ? payloadPreview(kept.json.body) : null;
}
