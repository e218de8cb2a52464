import { storedAnswer, withoutRequestSecrets } from '../../lib/webhook/storedAnswer';

/*
 * Forty-third red-team pass, pure-function rows: the trigger's own configured secrets (`ownSecrets`: its signing
 * secrets, the Header Auth value, the Basic Auth password) kept out of the stored and replayed answer
 * (lib/webhook/storedAnswer.ts storedAnswer, secretsOf, writtenForms) in the written forms an answer realistically
 * carries them. Each row asserts the promise: nothing secret stored or replayed. A failing row is a finding.
 */

/** Every text of a value: its strings and its members' names. */
const textsOf = (value: unknown): string[] =>
	typeof value === 'string'
		? [value]
		: value !== null && typeof value === 'object'
			? Object.entries(value).flatMap(([name, member]) => [name, ...textsOf(member)])
			: [];

/** The forms of the secret still in the answer as storedAnswer keeps it. */
const leaks = (answer: unknown, secret: string, forms: string[] = [secret]) => {
	const kept = textsOf(storedAnswer(answer, { ownSecrets: [secret] }));
	return forms.filter((form) => kept.some((text) => text.includes(form)));
};

describe('red team 43: the trigger’s own secrets in the stored answer (storedAnswer ownSecrets)', () => {
	// Control: the forms the commit covers.
	it('control: the secret raw, in a member name, in a JSON string nested twice, percent-encoded: none kept', () => {
		const secret = 'whsec_rt43ControlKey';
		const answer = {
			secret,
			byName: { [secret]: 'active' },
			nested: JSON.stringify({ body: JSON.stringify({ secret }) }),
			url: `https://example.test/hook?secret=${encodeURIComponent(secret)}`,
			ok: true,
		};
		expect(leaks(answer, secret)).toEqual([]);
		expect(storedAnswer(answer, { ownSecrets: [secret] })).toEqual({ byName: {}, ok: true });
	});

	// A secret with a space (allowed: resolveSecrets keeps it exactly) in a URL an API answers with its query built as
	// a form (URLSearchParams, application/x-www-form-urlencoded: a space is "+"), not with encodeURIComponent.
	it('a Header Auth value with spaces, in a URL whose query is form-encoded (URLSearchParams): not kept', () => {
		const secret = 'my header auth value 2026';
		const url = `https://example.test/hook?${new URLSearchParams({ token: secret }).toString()}`;
		expect(url).toContain('my+header+auth+value+2026');
		expect(leaks({ url, ok: true }, secret, ['my+header+auth+value+2026'])).toEqual([]);
	});

	// A password with characters encodeURIComponent leaves as they are ( ! ' ( ) * ~ ) and URLSearchParams encodes.
	it("a Basic Auth password with ! ' ( ) ~, in a form-encoded query (URLSearchParams): not kept", () => {
		const secret = "Pa$$w0rd!it's(mine)~";
		const encoded = new URLSearchParams({ p: secret }).toString().slice(2);
		expect(leaks({ callback: `https://example.test/cb?p=${encoded}`, ok: true }, secret, [encoded])).toEqual([]);
	});

	// Standard Webhooks / Svix: the HMAC key is the base64 body after `whsec_` (decodeStandardWebhooksSecret); Svix's
	// own API answers the endpoint secret, and dashboards and SDKs show or log the body without its prefix.
	it('a Standard Webhooks secret (whsec_<base64>) whose base64 body, the HMAC key, is echoed without the prefix: not kept', () => {
		const body = 'MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
		const secret = `whsec_${body}`;
		expect(leaks({ endpoint: 'ep_1', key: body }, secret, [body])).toEqual([]);
	});

	// The secret base64-encoded: a step that builds a Basic header with it as the password (user:secret), or an API that
	// answers a credential base64-encoded.
	it('the signing secret base64-encoded (as a Basic header built from it, "user:secret"): not kept', () => {
		const secret = 'whsec_rt43Base64Key';
		const basic = Buffer.from(`hook:${secret}`).toString('base64');
		const alone = Buffer.from(secret).toString('base64');
		expect(leaks({ sentAuth: `Basic ${basic}`, encoded: alone, ok: true }, secret, [basic, alone])).toEqual([]);
	});

	// Generic HMAC secrets are often hex; an API or a log shows hex upper-cased.
	it('a hex signing secret upper-cased by the answer: not kept', () => {
		const secret = '9f86d081884c7d659a2feaa0c55ad015';
		expect(leaks({ signingKey: secret.toUpperCase(), ok: true }, secret, [secret.toUpperCase()])).toEqual([]);
	});

	// A secret containing a quote or a backslash, nested two JSON strings deep (a body kept as text inside a log line
	// kept as text): escaped twice, a form writtenForms does not list.
	it('a secret with a quote, inside a JSON string nested twice: not kept', () => {
		const secret = 'whsec_"rt43\\key';
		const nested = JSON.stringify({ log: JSON.stringify({ secret }) });
		const twice = JSON.stringify(JSON.stringify(secret).slice(1, -1)).slice(1, -1);
		expect(nested).toContain(twice);
		expect(leaks({ nested, ok: true }, secret, [twice])).toEqual([]);
	});

	// The same forms in a failure message (stored with a failed key, answered to the caller): withoutRequestSecrets.
	it('a failure message quoting a secret with spaces form-encoded, or a Standard Webhooks body without its prefix: redacted', () => {
		const spaced = 'my header auth value 2026';
		const body = 'MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
		const message = `POST https://example.test/hook?${new URLSearchParams({ t: spaced }).toString()} failed; key ${body}`;
		const redacted = withoutRequestSecrets(message, { ownSecrets: [spaced, `whsec_${body}`] });
		expect([redacted.includes('my+header+auth+value+2026'), redacted.includes(body)]).toEqual([false, false]);
	});

	// A secret with unicode, percent-encoded and raw: covered (control).
	it('control: a unicode secret, raw and percent-encoded: none kept', () => {
		const secret = 'clé-secrète-ключ-2026';
		expect(
			leaks({ raw: secret, url: `https://x.test/?s=${encodeURIComponent(secret)}` }, secret, [secret, encodeURIComponent(secret)]),
		).toEqual([]);
	});

	// A secret entered with outer spaces (kept: part of the key) echoed trimmed: covered (add trims).
	it('control: a secret entered with a trailing space, echoed trimmed: not kept', () => {
		expect(leaks({ secret: 'whsec_rt43Trailing' }, 'whsec_rt43Trailing ', ['whsec_rt43Trailing'])).toEqual([]);
	});
});
