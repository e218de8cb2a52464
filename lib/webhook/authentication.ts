import { timingSafeEqual } from 'node:crypto';

import { readHeader, type HeaderBag } from '../headers';
import { answerFor, type WebhookAnswer } from './answers';

/**
 * Who may call the webhook, as n8n's Webhook node offers it: nobody checked, a header with a
 * fixed value, or HTTP Basic. Checked before the signature. The credentials are read by the
 * node (n8n's Header Auth and Basic Auth credentials) and may fail to be read.
 */
export type AuthenticationSettings =
	| { kind: 'none' }
	| { kind: 'header'; credentials: () => Promise<{ name: string; value: string }> }
	| { kind: 'basic'; credentials: () => Promise<{ user: string; password: string }> };

/** The answer for a caller that may not call, as n8n's Webhook node gives it; none when it may. */
export async function refusedCaller(settings: AuthenticationSettings, headers: HeaderBag): Promise<{ answer: WebhookAnswer } | undefined> {
	if (settings.kind === 'none') return undefined;
	let expected;
	try {
		expected = await settings.credentials();
	} catch {
		return answerFor('not_verified', { error: 'authentication_credential_unavailable' });
	}
	if (settings.kind === 'header') {
		const { name, value } = expected as { name: string; value: string };
		const sent = readHeader(headers, name);
		return sent.status === 'present' && sameText(sent.value, value) ? undefined : answerFor('forbidden', { error: 'forbidden' });
	}
	const { user, password } = expected as { user: string; password: string };
	const sent = readHeader(headers, 'authorization');
	const match = sent.status === 'present' ? /^basic\s+(\S+)$/i.exec(sent.value) : null;
	if (!match)
		return answerFor('authorization_required', { error: 'authorization_required' }, { 'www-authenticate': 'Basic realm="Webhook"' });
	const decoded = Buffer.from(match[1], 'base64').toString('utf8');
	const separator = decoded.indexOf(':');
	const ok = separator >= 0 && sameText(decoded.slice(0, separator), user) && sameText(decoded.slice(separator + 1), password);
	return ok ? undefined : answerFor('forbidden', { error: 'forbidden' });
}

/** Compares in time that does not depend on where the texts differ. */
function sameText(sent: string, expected: string): boolean {
	const a = Buffer.from(sent, 'utf8');
	const b = Buffer.from(expected, 'utf8');
	return a.length === b.length && timingSafeEqual(a, b);
}
