/*
 * Red-team pass 45, pure-function rows: lib/webhook/storedAnswer.ts's SecretMatcher (secrets in any ASCII letter case,
 * upper- and lower-cased beyond ASCII), writtenForms (JSON-escaped twice, form-encoded) and ownSecretForms (base64 /
 * base64url at three alignments, the Standard Webhooks key body). Cost with attacker-sized input, correctness of the
 * case-insensitive match, base64 alignments. Each row asserts the promise (nothing secret stored, calls bounded); a
 * failing row is a finding. Rows that document accepted collateral assert the exact outcome.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';

import { storedAnswer, withoutRequestSecrets } from '../../lib/webhook/storedAnswer';
import { cpuMs } from '../support/cpuTime';

const ROOT = path.join(__dirname, '..', '..');
const MB = 1024 * 1024;
/** Each call on a 64 KB input: generous for a busy 2-core machine. */
const CALL_MS = 2000;

/** Best of two runs of `run` on `make(n)` and on `make(4n)`. */
function growth<T>(make: (n: number) => T, run: (input: T) => unknown, n: number): { small: number; large: number } {
	const smallInput = make(n);
	const largeInput = make(4 * n);
	const small = Math.min(
		cpuMs(() => run(smallInput)),
		cpuMs(() => run(smallInput)),
	);
	const large = Math.min(
		cpuMs(() => run(largeInput)),
		cpuMs(() => run(largeInput)),
	);
	return { small, large };
}

/** Four times the input costing more than ten times the time, and over a second: super-linear. */
function expectNotQuadratic({ small, large }: { small: number; large: number }): void {
	expect({ superLinear: large > 1000 && large / Math.max(small, 2) >= 10, small, large }).toMatchObject({ superLinear: false });
}

function inChild(script: string, timeoutMs: number): { ms: number; timedOut: boolean; stdout: string; stderr: string } {
	const start = Date.now();
	const result = spawnSync(process.execPath, ['-r', './test/support/register-ts.js', '-e', script], {
		cwd: ROOT,
		timeout: timeoutMs,
		encoding: 'utf8',
	});
	return {
		ms: Date.now() - start,
		timedOut: result.error !== undefined || result.signal !== null,
		stdout: result.stdout,
		stderr: result.stderr,
	};
}

/** Every text of a value: its strings and its members' names. */
const textsOf = (value: unknown): string[] =>
	typeof value === 'string'
		? [value]
		: value !== null && typeof value === 'object'
			? Object.entries(value).flatMap(([name, member]) => [name, ...textsOf(member)])
			: [];

/** Whether any text of the stored answer carries the secret, in any letter case. */
const carries = (value: unknown, secret: string) => textsOf(value).some((text) => text.toLowerCase().includes(secret.toLowerCase()));

/** The many-secrets request of the cost rows: a 16-part signature header, long own secrets, owner tokens of many keys. */
const SIGNATURE = Array.from({ length: 16 }, (_, i) => `v1=${String(i).padStart(2, '0')}${'Zz9+/'.repeat(200)}`).join(',');
const OWN = Array.from({ length: 4 }, (_, i) => `whsec_${i}${'Kq3'.repeat(1000)}`);
const TOKENS = Array.from({ length: 500 }, (_, i) => `owner-${i}-${'0123456789abcdef'.repeat(2)}`);
const MANY = {
	headers: { 'stripe-signature': SIGNATURE, authorization: 'Bearer ' + 't'.repeat(4000) },
	ownSecrets: OWN,
	ownerTokens: TOKENS,
};
/** An answer of about `bytes` JSON bytes, of many short strings (each one searched for every secret form). */
const answerOf = (bytes: number) => ({
	items: Array.from({ length: Math.floor(bytes / 100) }, (_, i) => ({ id: i, text: 'zzzzzzzzz '.repeat(8) })),
});

const timings: Record<string, number | string> = {};
afterAll(() => console.log('redteam45 timings (ms):', JSON.stringify(timings, null, 1)));

describe('red team 45: cost with attacker-sized input', () => {
	it('a 64 KB answer × many secrets (16-part signature, 4 long own secrets, 500 owner tokens): under 2 s, linear', () => {
		const answer = answerOf(60 * 1024);
		const took = cpuMs(() => expect(storedAnswer(answer, MANY)).toEqual(answer));
		timings['64KB answer × many secrets'] = Math.round(took);
		expect(took).toBeLessThan(CALL_MS);
		const g = growth(answerOf, (a) => storedAnswer(a, MANY), 16 * 1024);
		timings['answer 16KB→64KB'] = `${Math.round(g.small)}→${Math.round(g.large)}`;
		expectNotQuadratic(g);
		// One 60 KB string instead of many.
		const one = { x: 'z'.repeat(60 * 1024) };
		const tookOne = cpuMs(() => expect(storedAnswer(one, MANY)).toEqual(one));
		timings['64KB one string × many secrets'] = Math.round(tookOne);
		expect(tookOne).toBeLessThan(CALL_MS);
	});

	// The cap is checked after the replacer has searched every string for every secret form: a 10 MB answer (n8n
	// accepts 16 MB bodies; an Edit Fields node can echo one) is searched in full before it is refused. Measured on
	// Node 24: 37.9 s with the many-secrets request; the pre-4284d92 `includes` finder took 2.1 s on the same input.
	it('a 10 MB answer × many secrets: refused (ANSWER_NOT_KEPT) within 10 s (child process)', () => {
		const script = `
			const { storedAnswer } = require('./lib/webhook/storedAnswer.ts');
			const SIGNATURE = Array.from({ length: 16 }, (_, i) => 'v1=' + String(i).padStart(2, '0') + 'Zz9+/'.repeat(200)).join(',');
			const OWN = Array.from({ length: 4 }, (_, i) => 'whsec_' + i + 'Kq3'.repeat(1000));
			const TOKENS = Array.from({ length: 500 }, (_, i) => 'owner-' + i + '-' + '0123456789abcdef'.repeat(2));
			const MANY = { headers: { 'stripe-signature': SIGNATURE, authorization: 'Bearer ' + 't'.repeat(4000) }, ownSecrets: OWN, ownerTokens: TOKENS };
			const answer = { items: Array.from({ length: Math.floor(10 * 1024 * 1024 / 100) }, (_, i) => ({ id: i, text: 'zzzzzzzzz '.repeat(8) })) };
			const t = Date.now(); const kept = storedAnswer(answer, MANY);
			console.log(JSON.stringify(kept)); console.error('ms ' + (Date.now() - t));`;
		const run = inChild(script, 10_000);
		timings['10MB answer × many secrets (child, incl. startup)'] = run.timedOut ? `timed out after ${run.ms}` : run.ms;
		expect({ timedOut: run.timedOut, stdout: run.stdout.trim() }).toEqual({ timedOut: false, stdout: '{"status":"completed"}' });
	});

	it('a failure message of 1 MB × many secrets (and every header value): under 2 s, linear', () => {
		const message = 'failure '.repeat(MB / 8);
		const took = cpuMs(() => expect(withoutRequestSecrets(message, MANY, { everyHeaderValue: true })).toBe(message));
		timings['1MB message × many secrets'] = Math.round(took);
		expect(took).toBeLessThan(CALL_MS);
		const g = growth(
			(n) => 'failure '.repeat(n),
			(m) => withoutRequestSecrets(m, MANY, { everyHeaderValue: true }),
			32 * 1024,
		);
		timings['message 256KB→1MB'] = `${Math.round(g.small)}→${Math.round(g.large)}`;
		expectNotQuadratic(g);
	});

	it('secrets of regex metacharacters: matched literally, each call bounded', () => {
		const secrets = ['.*.*.*.*.*.*.*.*', '(a+)+(a+)+$^', '[^]\\d{1,9}|||', "$&$1$`$'$$abcd", '(?=x)(?!y)\\b\\B'];
		const text = 'a'.repeat(60 * 1024) + ' ' + secrets.join(' ') + ' ' + 'a'.repeat(1000);
		let out = '';
		const took = cpuMs(() => (out = withoutRequestSecrets(text, { ownSecrets: secrets })));
		timings['metacharacter secrets × 64KB'] = Math.round(took);
		expect(took).toBeLessThan(CALL_MS);
		expect(out).toBe('a'.repeat(60 * 1024) + ' ' + secrets.map(() => '[redacted]').join(' ') + ' ' + 'a'.repeat(1000));
		expect(storedAnswer({ filler: 'a'.repeat(60 * 1024), ok: true }, { ownSecrets: secrets })).toEqual({
			filler: 'a'.repeat(60 * 1024),
			ok: true,
		});
	});

	// new RegExp of a literal longer than 32,767 atoms throws "Regular expression too large". ownSecretForms adds base64
	// forms 4/3 as long, writtenForms escaped forms up to 9× (percent-encoded 3-byte characters) as long.
	it('a 1 MB own secret (Header Auth value): an unrelated answer kept, a message redacted, no throw', () => {
		const huge = 'H'.repeat(MB);
		let kept: unknown;
		const tookAnswer = cpuMs(() => (kept = storedAnswer({ status: 'ok', n: 1 }, { ownSecrets: [huge] })));
		let message = '' as string | Error;
		const tookMessage = cpuMs(() => {
			try {
				message = withoutRequestSecrets(`failed: ${huge} end`, { ownSecrets: [huge] });
			} catch (error) {
				message = error instanceof Error ? error : new Error(String(error));
			}
		});
		timings['1MB own secret: answer / message'] = `${Math.round(tookAnswer)} / ${Math.round(tookMessage)}`;
		expect({ kept, message: message instanceof Error ? `throws ${message.message.slice(-30)}` : message }).toEqual({
			kept: { status: 'ok', n: 1 },
			message: 'failed: [redacted] end',
		});
	});

	it('a Header Auth value of 24,576 characters (its base64 form 32,768): an unrelated answer kept, no throw', () => {
		const secret = 'k'.repeat(24_576);
		expect(storedAnswer({ status: 'ok' }, { ownSecrets: [secret] })).toEqual({ status: 'ok' });
		expect(() => withoutRequestSecrets('failed', { ownSecrets: [secret] })).not.toThrow();
	});

	// Reachable by a caller of a trigger without authentication: Node's 16 KB header limit lets a header of 5,462
	// latin1 characters ≥ 0x80 (or of tabs) through, whose percent-encoded form passes 32,767.
	it('a caller’s Authorization header of 5,462 "é" (percent-encoded form over 32,767): no throw, answer kept', () => {
		const value = 'Bearer ' + '\u00e9'.repeat(5462);
		const tabs = 'Bearer a' + '\t'.repeat(10_923) + 'b';
		const outcome = (headers: Record<string, string>) => {
			let message: string;
			try {
				message = withoutRequestSecrets('failed: upstream said no', { headers });
			} catch (error) {
				message = `throws ${(error as Error).message.slice(-30)}`;
			}
			return { answer: storedAnswer({ status: 'ok' }, { headers }), message };
		};
		expect([outcome({ authorization: value }), outcome({ authorization: tabs })]).toEqual([
			{ answer: { status: 'ok' }, message: 'failed: upstream said no' },
			{ answer: { status: 'ok' }, message: 'failed: upstream said no' },
		]);
	});

	it('unicode secrets whose case mapping changes length (İ, ß, ﬁ, ŉ): bounded on 64 KB', () => {
		const secrets = ['İstanbul-İ-key-2026', 'straße-ßß-secret', 'ﬁle-ﬁ-ﬂ-secret-01', 'ŉŉŉŉŉŉŉŉ'];
		const text = 'İßﬁŉ i̇ SS FI ʼN '.repeat(4000);
		const took = cpuMs(() => withoutRequestSecrets(text, { ownSecrets: secrets }));
		const tookAnswer = cpuMs(() => storedAnswer({ text }, { ownSecrets: secrets }));
		timings['unicode secrets × 64KB message / answer'] = `${Math.round(took)} / ${Math.round(tookAnswer)}`;
		expect(Math.max(took, tookAnswer)).toBeLessThan(CALL_MS);
		expect(withoutRequestSecrets(`a ${secrets.join(' ')} b`, { ownSecrets: secrets })).toBe(
			'a [redacted] [redacted] [redacted] [redacted] b',
		);
	});

	it('lone surrogates: 1 MB of them in a message and an answer, bounded and linear', () => {
		const secret = 'secret\uD800value';
		const took = cpuMs(() => withoutRequestSecrets('\uD800\uDC00\uDC00'.repeat(MB / 3), { ownSecrets: [secret] }));
		const tookAnswer = cpuMs(() => storedAnswer({ s: '\uDBFF'.repeat(60 * 1024) }, { ownSecrets: [secret] }));
		timings['lone surrogates 1MB message / 64KB answer'] = `${Math.round(took)} / ${Math.round(tookAnswer)}`;
		expect(took).toBeLessThan(5 * CALL_MS);
		expect(tookAnswer).toBeLessThan(CALL_MS);
		expectNotQuadratic(
			growth(
				(n) => '\uD800x'.repeat(n),
				(m) => withoutRequestSecrets(m, { ownSecrets: [secret] }),
				64 * 1024,
			),
		);
	});

	// A message is redacted before it is repaired (storableErrorMessage repairs later): the secret must be found as
	// written, lone surrogate and all, not only as the store repairs it.
	it('an own secret with a lone surrogate, quoted raw in a failure message: redacted', () => {
		const secret = 'abc\uD800defghij';
		expect(withoutRequestSecrets(`x ${secret} y`, { ownSecrets: [secret] })).toBe('x [redacted] y');
		expect(storedAnswer({ a: `x ${secret} y`, ok: true }, { ownSecrets: [secret] })).toEqual({ ok: true });
	});
});

describe('red team 45: matches and values an attacker multiplies', () => {
	// A message that quotes the secret many times beside marks already there: every match meets every mark unless both
	// are walked in order; 16 MB of one letter is a match at every position unless a form's overlapping finds are one.
	it('a 1 MB message of "aaaaaaaa[redacted]" repeated, secret "aaaaaaaa": bounded, linear, every copy redacted', () => {
		const message = 'aaaaaaaa[redacted]'.repeat(Math.floor(MB / 18));
		let redacted = '';
		const took = cpuMs(() => (redacted = withoutRequestSecrets(message, { headers: { 'x-api-key': 'aaaaaaaa' } })));
		timings['1MB of secret+marks'] = Math.round(took);
		expect({ bounded: took < 5 * CALL_MS, leftOver: redacted.includes('aaaaaaaa') }).toEqual({ bounded: true, leftOver: false });
		expectNotQuadratic(
			growth(
				(n) => 'aaaaaaaa[redacted]'.repeat(n),
				(m) => withoutRequestSecrets(m, { headers: { 'x-api-key': 'aaaaaaaa' } }),
				8 * 1024,
			),
		);
	});

	it('16 MB of one letter, the secret eight of them: one redaction, bounded', () => {
		let redacted = '';
		const took = cpuMs(() => (redacted = withoutRequestSecrets('a'.repeat(16 * MB), { ownSecrets: ['aaaaaaaa'] })));
		timings['16MB of one letter'] = Math.round(took);
		expect({ bounded: took < 5 * CALL_MS, redacted }).toEqual({ bounded: true, redacted: '[redacted]' });
	});

	// The cap counts every value and member name before they are searched, not only strings.
	it('an answer of a million empty strings, or one member name of 10 MB: not kept, at once', () => {
		let many: unknown;
		let named: unknown;
		const tookMany = cpuMs(() => (many = storedAnswer({ a: Array.from({ length: MB }, () => '') }, MANY)));
		const tookNamed = cpuMs(() => (named = storedAnswer({ ['k'.repeat(10 * MB)]: 1 }, MANY)));
		timings['1M empty strings / 10 MB name'] = `${Math.round(tookMany)} / ${Math.round(tookNamed)}`;
		expect({ many, named, bounded: tookMany < CALL_MS && tookNamed < CALL_MS }).toEqual({
			many: { status: 'completed' },
			named: { status: 'completed' },
			bounded: true,
		});
	});

	it("an object shaped like a Buffer with other members: its members are filtered as any object's", () => {
		expect(storedAnswer({ type: 'Buffer', data: [104, 105], headers: { 'x-custom': 'v' } })).toEqual({ type: 'Buffer', data: [104, 105] });
	});
});

describe('red team 45: the case-insensitive match', () => {
	const secret = 'Sk_Live_AbCdEf12';
	it('catches every letter case and every written form (raw, JSON once and twice, percent, form) in a message', () => {
		const tricky = 'p@ss w"rd\\/+&=ÄÖ-2026';
		const forms = [
			tricky,
			tricky.toUpperCase(),
			JSON.stringify(tricky).slice(1, -1),
			JSON.stringify(JSON.stringify(tricky).slice(1, -1)).slice(1, -1),
			encodeURIComponent(tricky),
			encodeURIComponent(tricky).toLowerCase(),
			new URLSearchParams({ s: tricky }).toString().slice(2),
		];
		expect(withoutRequestSecrets(forms.join(' | '), { ownSecrets: [tricky] })).toBe(forms.map(() => '[redacted]').join(' | '));
		for (const form of forms) expect(storedAnswer({ form, ok: 1 }, { ownSecrets: [tricky] })).toEqual({ ok: 1 });
	});

	it('does not touch data that merely shares letters (a prefix, a neighbour, another key)', () => {
		const others = ['sk_live_abcdef1', 'sk_live_abcdef13', 'Sk_Live_AbCdEf1_2', 'sk-live-abcdef12', 'SK_TEST_ABCDEF12'];
		expect(storedAnswer({ others, ok: true }, { ownSecrets: [secret] })).toEqual({ others, ok: true });
		expect(withoutRequestSecrets(others.join(' '), { ownSecrets: [secret] })).toBe(others.join(' '));
		expect(withoutRequestSecrets(`id=SK_LIVE_ABCDEF12x sk_live_abcdef12`, { ownSecrets: [secret] })).toBe('id=[redacted]x [redacted]');
	});

	// Documented collateral: a secret of 8+ characters is found anywhere, so inside a longer word too.
	it('collateral, exact: a secret that is the start of a longer word takes that part of the word', () => {
		expect(withoutRequestSecrets('Order Completed; completeness ok', { ownSecrets: ['complete'] })).toBe(
			'Order [redacted]d; [redacted]ness ok',
		);
		expect(storedAnswer({ a: 'Order Completed', b: 'done' }, { ownSecrets: ['complete'] })).toEqual({ b: 'done' });
	});

	it('a short (4–7) secret in any case only where it stands alone', () => {
		expect(withoutRequestSecrets('PIN 7g3K, pin7g3k, 7G3K.', { ownSecrets: ['7g3k'] })).toBe('PIN [redacted], pin7g3k, [redacted].');
	});

	it('"$&", "$1", "$`", "$\'" in secrets and texts are not replacement patterns', () => {
		const dollar = "$&$1$`$'$$-key-2026";
		expect(withoutRequestSecrets(`before ${dollar} after $& $1`, { ownSecrets: [dollar] })).toBe('before [redacted] after $& $1');
		expect(withoutRequestSecrets('keep $& and $1 and $<n>', { ownSecrets: ['unrelated-key-2026'] })).toBe('keep $& and $1 and $<n>');
		expect(storedAnswer({ a: `x${dollar}`, b: '$&$1' }, { ownSecrets: [dollar] })).toEqual({ b: '$&$1' });
	});

	it('redaction is idempotent, including a secret that is (or is inside) "[redacted]"', () => {
		const cases: Array<[string, string]> = [
			['token sk_live_abcdef12 here', secret],
			['a redacted document', 'redacted'],
			['a REDACTED document', 'Redacted'],
			['x [redacted] y', 'redacted]'],
		];
		const twice = cases.map(([text, s]) => {
			const once = withoutRequestSecrets(text, { ownSecrets: [s] });
			return { once, again: withoutRequestSecrets(once, { ownSecrets: [s] }) };
		});
		expect(twice.map(({ once, again }) => again === once)).toEqual([true, true, true, true]);
	});

	// Two secrets overlapping in a text: redacted as one.
	it('overlapping secrets: both redacted, as one', () => {
		expect(withoutRequestSecrets('AAAABBBBCCCC', { ownSecrets: ['AAAABBBB', 'BBBBCCCC'] })).toBe('[redacted]');
	});

	// The Basic Auth password is an ordinary word. Promise: nothing secret stored; usefulness: the answer still stored.
	describe('a secret equal to a common word (Basic Auth password "completed", "password", "undefined")', () => {
		it('collateral, exact: {"status":"completed"} loses its status, the rest is kept; the secret is not stored', () => {
			const kept = storedAnswer({ status: 'completed', orderId: 'A-1', note: 'Completed at 10:00' }, { ownSecrets: ['completed'] });
			expect(kept).toEqual({ orderId: 'A-1' });
			expect(carries(kept, 'completed')).toBe(false);
			expect(withoutRequestSecrets('Step completed; status COMPLETED', { ownSecrets: ['completed'] })).toBe(
				'Step [redacted]; status [redacted]',
			);
		});

		it('collateral, exact: password "password" drops members named after it; "undefined" drops the text', () => {
			expect(storedAnswer({ passwordChanged: true, user: 'ann' }, { ownSecrets: ['password'] })).toEqual({ user: 'ann' });
			expect(storedAnswer({ reason: 'value was undefined', code: 3 }, { ownSecrets: ['undefined'] })).toEqual({ code: 3 });
		});

		// ANSWER_NOT_KEPT is returned unchecked: with the password "completed", the answer stored and replayed in place of
		// one over the cap is the password.
		it('an answer over the cap, password "completed": what is stored instead does not carry the password', () => {
			const kept = storedAnswer({ big: 'x'.repeat(70 * 1024) }, { ownSecrets: ['completed'] });
			expect({ kept, carries: carries(kept, 'completed') }).toMatchObject({ carries: false });
		});
	});

	// "Any letter case" as the commit promises: an answer that upper-cases a secret with a character whose upper case
	// is longer (ß → SS, ﬁ → FI) or lower-cases İ (→ i̇).
	it('a unicode secret upper- or lower-cased by the answer (ß, ﬁ, İ): not kept', () => {
		const secrets = ['straße-secret-01', 'ﬁnance-secret-01', 'İstanbul-secret-01'];
		const leaked = secrets.flatMap((s) =>
			[s.toUpperCase(), s.toLowerCase()].filter((form) => carries(storedAnswer({ form }, { ownSecrets: [s] }), form)),
		);
		expect(leaked).toEqual([]);
	});
});

describe('red team 45: base64 alignments of the trigger’s own secrets', () => {
	const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
	const variants = (encoded: string) => ({
		padded: encoded,
		unpadded: encoded.replace(/=+$/, ''),
		url: encoded.replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, ''),
	});
	/** Whether a message still carries the secret in some base64 token (decoded as base64 or base64url). */
	const decodesToSecret = (text: string, secret: string) =>
		(text.match(/[A-Za-z0-9+/_-]{4,}={0,2}/g) ?? []).some((token) => {
			const plain = Buffer.from(token.replace(/-/g, '+').replace(/_/g, '/'), 'base64').toString('utf8');
			return plain.includes(secret);
		});
	/** The cases of a secret in base64 that leak through storedAnswer or withoutRequestSecrets. */
	const leaking = (secret: string, plains: string[]) =>
		plains.flatMap((plain) =>
			Object.entries(variants(b64(plain)))
				.filter(
					([, encoded]) =>
						carries(storedAnswer({ encoded }, { ownSecrets: [secret] }), encoded) ||
						decodesToSecret(withoutRequestSecrets(`sent ${encoded} end`, { ownSecrets: [secret] }), secret),
				)
				.map(([kind]) => `${JSON.stringify(plain)} ${kind}`),
		);
	// Secret lengths 12, 13, 14 (each remainder mod 3) behind prefixes of each remainder.
	const secrets = ['sekretpasswo', 'sekretpasswor', 'sekretpassword'];

	it('"user:secret" (the secret ends the text, each alignment), padded, unpadded, base64url: none leak', () => {
		expect(
			secrets.flatMap((s) =>
				leaking(
					s,
					['user:', 'us:', 'u:', 'hook:', ''].map((p) => p + s),
				),
			),
		).toEqual([]);
	});

	it('"secret" alone, padded, unpadded, base64url: none leak', () => {
		expect(secrets.flatMap((s) => leaking(s, [s]))).toEqual([]);
	});

	// ownSecretForms covers "a secret that ends the encoded text": its unpadded base64 ends with a character that
	// encodes the secret's last bits and zero fill; followed by more text, that character differs.
	it('"x:secret:extra" (the secret inside the text, each alignment): none leak', () => {
		expect(
			secrets.flatMap((s) =>
				leaking(
					s,
					['x:', 'us:', 'user:'].flatMap((p) => [`${p}${s}:extra`, `${p}${s}:ex`, `${p}${s}:e`]),
				),
			),
		).toEqual([]);
	});

	// The alignments are taken by UTF-16 characters (secret.slice(offset)), base64 groups bytes.
	it('a non-ASCII secret (é, 日本 first) ending "user:secret": none leak', () => {
		const unicode = ['ésekretpassword', '日本sekretpasswo', 'éésekretpasswor'];
		expect(
			unicode.flatMap((s) =>
				leaking(
					s,
					['user:', 'us:', 'u:'].map((p) => p + s),
				),
			),
		).toEqual([]);
	});

	it('a Standard Webhooks secret: its body (the key) in any form kept out, base64 of the whole too', () => {
		const body = 'MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
		const secret = `whsec_${body}`;
		expect(storedAnswer({ key: body, whole: b64(`u:${secret}`), ok: 1 }, { ownSecrets: [secret] })).toEqual({ ok: 1 });
	});
});
