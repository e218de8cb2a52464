/*
 * Red-team pass 36: attacker-sized inputs (webhook bytes and headers, an upstream API's failure message) against the
 * parsing, key, signature, redaction, preview, stored-answer and storable-value paths. Each row asserts a defined
 * outcome within a generous bound; where growth is measured, n and 4n are timed and the ratio must stay well under
 * quadratic (16); an input that once hung runs in a child process, whose timeout shows a hang.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';

import { isJsonMediaType, mediaTypeOf, readHeader } from '../../lib/headers';
import { assertUsableKeyHeader, isSecretHeader } from '../../lib/keys/forbiddenHeaders';
import { redactedErrorText } from '../../lib/evidence/redactedText';
import { payloadPreview } from '../../lib/evidence/payloadPreview';
import { inexactNumbers, isExactInJavaScript, plainDecimal, parseWithExactNumbers } from '../../lib/evidence/exactNumbers';
import { canonicalJson, TooDeepToHashError } from '../../lib/keys/canonicalJson';
import { deriveKey } from '../../lib/keys/deriveKey';
import { parseFieldPath, valueAtPath } from '../../lib/keys/fieldPath';
import { arrayElementsAt, memberAtPath } from '../../lib/keys/rawJsonMember';
import { parseBody } from '../../lib/webhook/body';
import { eventsOf, eventsPathSteps } from '../../lib/webhook/events';
import { storedAnswer, withoutRequestSecrets } from '../../lib/webhook/storedAnswer';
import { storableErrorMessage, storablePayload, storableText } from '../../lib/store/storableValues';
import { verifySignature } from '../../lib/signature/verify';
import { decodeBase64, decodeHex } from '../../lib/signature/hmac';

const ROOT = path.join(__dirname, '..', '..');
/** A hang, not a busy machine: what once took minutes must end well within this. */
const HANG_MS = 30_000;

function ms(run: () => unknown): number {
	const start = process.hrtime.bigint();
	run();
	return Number(process.hrtime.bigint() - start) / 1e6;
}

/** Times `make(n)` then `make(4n)` through `run`; returns both timings (best of two, to damp a busy machine). */
function growth(make: (n: number) => string, run: (text: string) => unknown, n: number): { small: number; large: number } {
	const smallText = make(n);
	const largeText = make(4 * n);
	const small = Math.min(
		ms(() => run(smallText)),
		ms(() => run(smallText)),
	);
	const large = Math.min(
		ms(() => run(largeText)),
		ms(() => run(largeText)),
	);
	return { small, large };
}

/** Linear-ish: 4× the input costs well under 16× (quadratic); tiny timings are given a floor of 2 ms. */
/** Four times the input costing more than ten times the time, and over a second: super-linear, not the machine's noise. */
function expectNotQuadratic({ small, large }: { small: number; large: number }): void {
	expect({ superLinear: large > 1000 && large / Math.max(small, 2) >= 10, small, large }).toMatchObject({ superLinear: false });
}

/** Runs a script in a child process with a hard timeout (for rows that may hang). */
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

const MB = 1024 * 1024;

describe('red team 36: redactedErrorText (failure messages, payload preview strings)', () => {
	const linearShapes: Array<[string, (n: number) => string]> = [
		['name=value pairs, no value', (n) => 'a='.repeat(n)],
		['name = "unclosed', (n) => ' a = "' + 'x'.repeat(n)],
		['?& separators', (n) => '?&;,'.repeat(n)],
		['spaces then no =', (n) => ' a' + ' '.repeat(n)],
		['Bearer repeated', (n) => 'Bearer '.repeat(n)],
		['Bearer + spaces', (n) => 'Bearer' + ' '.repeat(n) + 'x'],
		['authorization: repeated', (n) => 'authorization: '.repeat(n)],
		['authorization:"Scheme unclosed', (n) => 'authorization:"Bot ' + 'x'.repeat(n)],
		['authorization:"x repeated', (n) => 'authorization:"authorization:"'.repeat(n)],
		// `a-a-a-…` after it is finding 1 (URL_USER_INFO), measured ×22 for ×4 input here: a plain long scheme instead.
		['proxy-authorization: long scheme', (n) => 'proxy-authorization: ' + 'a'.repeat(2 * n)],
		['"a":"unclosed string', (n) => '"a":"' + 'x'.repeat(n)],
		['"a":["unclosed array', (n) => '"a":["x",'.repeat(1) + '"x" ,'.repeat(n)],
		['"a":[ spaces unclosed', (n) => '"a":[' + ' '.repeat(n)],
		['"a": digits', (n) => '"a":1' + 'e'.repeat(n)],
		['escaped member unclosed', (n) => '\\"a\\":\\"' + 'x'.repeat(n)],
		['escaped backslashes', (n) => '\\"a\\":\\"' + '\\\\'.repeat(n)],
		['colon value quoted unclosed', (n) => " a:'" + 'x'.repeat(n)],
		['colon value name: name:', (n) => ' a: '.repeat(n)],
		['colon lookahead long word', (n) => ' a: ' + 'b'.repeat(n) + ' '],
		['(a:(a: no space', (n) => '(a:'.repeat(n)],
		['quote name quote', (n) => "'a'".repeat(n)],
		['url no user info', (n) => 'http://' + 'x'.repeat(n)],
		['url://url:// repeated', (n) => 'a://'.repeat(n)],
		['lone surrogates', (n) => '\uD800'.repeat(n)],
		['newlines', (n) => 'authorization: Bot x\n'.repeat(n)],
	];
	it.each(linearShapes)('%s: 64k vs 256k repetitions grow linearly, 1 MB within 5 s', (_name, make) => {
		expectNotQuadratic(growth(make, (text) => redactedErrorText(text), 64 * 1024));
		const big = make(MB).slice(0, 2 * MB);
		const took = ms(() => expect(typeof redactedErrorText(big)).toBe('string'));
		expect(took).toBeLessThan(HANG_MS);
	});

	// Redaction reads at most MAX_REDACTED_LENGTH characters, and each pattern in time linear in them. Without that,
	// `a.a.a.…` (every word boundary a scheme scanned to the end), ` a:[` repeated (an array value looked for to the
	// end) took quadratic time — 64 KB 2.7 s, 1 MB ~11 minutes — and an 8 MB JSON string value overflowed the regex
	// stack. In a child process: a hang shows as its timeout, not as a test that never ends.
	it('redacts 1 MB of `a.a.…`, of ` a:[` repeated, and an 8 MB JSON string value, at once', () => {
		const script = `
			const { redactedErrorText } = require('./lib/evidence/redactedText.ts');
			const { storableErrorMessage } = require('./lib/store/storableValues.ts');
			redactedErrorText('a.'.repeat(512 * 1024));
			redactedErrorText(' a:['.repeat(256 * 1024));
			storableErrorMessage('"a":"' + 'x'.repeat(8000000) + '"');
			console.log('done');`;
		const run = inChild(script, 30_000);
		expect({ timedOut: run.timedOut, stdout: run.stdout.trim(), stderr: run.stderr.includes('RangeError') }).toEqual({
			timedOut: false,
			stdout: 'done',
			stderr: false,
		});
	});

	it('storableErrorMessage of 4 MB text: cut to 2000 characters', () => {
		const message = storableErrorMessage('Bearer abcdefgh ' + 'x'.repeat(4 * MB));
		expect(message.text.length).toBeLessThanOrEqual(2000);
		expect(message.text).toContain('[redacted]');
	});
});

describe('red team 36: exact numbers (raw body of a stored payload, stored payloads read back)', () => {
	// A long fraction of zeros (`1.000…0001`, which Number() keeps finite) has its trailing zeros trimmed by index: an
	// unanchored /0+$/ tried every zero as the start of the run (80k zeros 4.7 s; a 1 MB body ~14 minutes), in
	// Reserve's Store Payload before any size check and again when a stored payload is read back.
	it('a fraction of 1M zeros: read in a child process at once', () => {
		const script = `
			const { isExactInJavaScript, inexactNumbers } = require('./lib/evidence/exactNumbers.ts');
			const token = '1.' + '0'.repeat(1000000) + '1';
			console.log(JSON.stringify([isExactInJavaScript(token), inexactNumbers('{"a":' + token + '}').length]));`;
		const run = inChild(script, 30_000);
		expect({ timedOut: run.timedOut, stdout: run.stdout.trim() }).toEqual({ timedOut: false, stdout: '[false,1]' });
	});

	it('a 1M-digit integer, exponent and negative: linear, a defined answer', () => {
		const digits = '9'.repeat(MB);
		expect(ms(() => expect(isExactInJavaScript(digits)).toBe(false))).toBeLessThan(HANG_MS);
		expect(ms(() => expect(plainDecimal(digits)).toBeUndefined())).toBeLessThan(HANG_MS);
		expect(plainDecimal('1e999999999999')).toBeUndefined();
		expect(plainDecimal('1e-999999999999')).toBeUndefined();
		expect(plainDecimal('-0.0e5')).toBe('0');
		expectNotQuadratic(
			growth(
				(n) => '[' + '12345678901234567890,'.repeat(n) + '1]',
				(text) => inexactNumbers(text),
				16 * 1024,
			),
		);
		expectNotQuadratic(
			growth(
				(n) => '"' + '\\"'.repeat(n),
				(text) => inexactNumbers(text),
				64 * 1024,
			),
		);
		expectNotQuadratic(
			growth(
				(n) => '-'.repeat(n),
				(text) => inexactNumbers(text),
				64 * 1024,
			),
		);
	});

	it('parseWithExactNumbers of 10k integers beyond 2^53 and of deep nesting', () => {
		const text = '[' + Array.from({ length: 10_000 }, () => '12345678901234567890').join(',') + ']';
		expect((parseWithExactNumbers(text) as unknown[]).length).toBe(10_000);
		expect(() => parseWithExactNumbers('['.repeat(100_000) + '1' + ']'.repeat(100_000))).not.toThrow();
	});
});

describe('red team 36: canonical JSON and keys', () => {
	// canonicalJson recursed once per level: a parsed body nested 10k deep (20 KB of `[`) overflowed the stack. Past
	// MAX_CANONICAL_DEPTH it says why, and what to do.
	it('canonicalJson of a body nested 10k deep: refused with the fix, not a stack overflow', () => {
		const body = JSON.parse('['.repeat(10_000) + ']'.repeat(10_000)) as unknown;
		expect(() => canonicalJson(body)).toThrow(TooDeepToHashError);
		expect(() => canonicalJson(body)).toThrow(/Raw Body/);
		expect(canonicalJson(JSON.parse('['.repeat(999) + ']'.repeat(999)))).toBe('['.repeat(999) + ']'.repeat(999));
	});

	it('deriveKey with the raw body of 100k nested levels: hashes the bytes', () => {
		const raw = '['.repeat(100_000) + ']'.repeat(100_000);
		const body = JSON.parse(raw) as unknown;
		const key = deriveKey({ body, rawBody: Buffer.from(raw), headers: { 'content-type': 'application/json' } }, {
			strategy: 'auto',
			onMissingKey: 'bodyHash',
		} as never);
		expect(key.key).toMatch(/sha256:[0-9a-f]{64}$/);
	});

	// Config-only super-linearity (not attacker-reachable alone): memberAtPath (lib/keys/rawJsonMember.ts:30-40) makes a
	// new Reader over each level's sub-text, so a path of d steps into a body nested d deep costs O(d × size) = O(d²).
	// Measured memberAtPath / deriveKey(field): d=1k 108/75 ms, 2k 167/176 ms, 4k 979/704 ms, 8k 3,753/3,152 ms. The path
	// depth is the workflow's Field Path / Events Path, so a sender alone only gets (path length) × (body size).
	it('deriveKey field path 2k segments deep over a body nested 2k deep, raw body', () => {
		const depth = 2_000;
		const raw = '{"a":'.repeat(depth) + '12345678901234567890' + '}'.repeat(depth);
		const body = JSON.parse(raw) as unknown;
		const fieldPath = 'body' + '.a'.repeat(depth);
		const took = ms(() => {
			const key = deriveKey({ body, rawBody: Buffer.from(raw), headers: { 'content-type': 'application/json' }, item: { body } }, {
				strategy: 'field',
				fieldPath,
				onMissingKey: 'error',
			} as never);
			expect(key.key).toContain('12345678901234567890');
		});
		expect(took).toBeLessThan(HANG_MS);
	});

	it('parseFieldPath: 10k segments, 10k indexes, huge index', () => {
		expect(parseFieldPath('body' + '.a'.repeat(10_000)).length).toBe(10_001);
		expect(parseFieldPath('body.a' + '[0]'.repeat(10_000)).length).toBe(10_002);
		expect(() => parseFieldPath('body.a[' + '9'.repeat(100_000) + ']')).toThrow();
		expect(() => parseFieldPath('body.' + '['.repeat(100_000))).toThrow();
		expect(valueAtPath({}, parseFieldPath('body' + '.a'.repeat(10_000)))).toBeUndefined();
	});

	it('rawJsonMember: 1M-deep skip, unclosed strings, lone surrogates', () => {
		const deep = '{"x":' + '['.repeat(MB) + ']'.repeat(MB) + ',"id":1}';
		expect(memberAtPath(deep, ['id'])?.text).toBe('1');
		expect(memberAtPath('{"x":"' + '\\"'.repeat(MB), ['id'])).toBeUndefined();
		expect(arrayElementsAt('[' + '"\uD800",'.repeat(100_000) + '1]', [])?.length).toBe(100_001);
		expectNotQuadratic(
			growth(
				(n) => '{"x":' + '['.repeat(n),
				(text) => memberAtPath(text, ['id']),
				64 * 1024,
			),
		);
	});

	it('header key names: isSecretHeader / assertUsableKeyHeader on a 1 MB name', () => {
		const name = 'x-' + 'a-'.repeat(MB / 2);
		expect(ms(() => expect(isSecretHeader(name)).toBe(false))).toBeLessThan(HANG_MS);
		expect(() => assertUsableKeyHeader(name + 'sig')).toThrow(/cannot be an idempotency key/);
		expect(isSecretHeader('-'.repeat(MB) + 'token')).toBe(true);
	});
});

describe('red team 36: headers, body and signature parsing', () => {
	it('readHeader: 100k ", " joins, 1M commas, huge header bag', () => {
		expect(readHeader({ 'x-id': 'a, '.repeat(100_000) + 'a' }, 'x-id')).toEqual({ status: 'present', value: 'a', joined: true });
		expect(readHeader({ 'x-id': ','.repeat(MB) }, 'x-id').status).toBe('present');
		expect(readHeader({ 'x-id': ', '.repeat(MB) }, 'x-id').status).toBe('missing');
		expect(readHeader({ 'x-id': 'a, b' + ', '.repeat(MB) }, 'x-id').status).toBe('ambiguous');
		expectNotQuadratic(
			growth(
				(n) => ', \t'.repeat(n),
				(text) => readHeader({ x: text }, 'x'),
				64 * 1024,
			),
		);
		const bag: Record<string, string> = {};
		for (let i = 0; i < 100_000; i++) bag[`X-H${i}`] = 'v';
		expect(ms(() => readHeader(bag, 'x-h99999'))).toBeLessThan(HANG_MS);
	});

	it('Content-Type with 10k parameters, 1 MB: media type and body parsing', () => {
		const contentType = 'application/json' + '; charset=utf-8'.repeat(10_000);
		expect(mediaTypeOf({ 'content-type': contentType })).toBe('application/json');
		expect(isJsonMediaType(mediaTypeOf({ 'content-type': 'a+json;' + ';'.repeat(MB) }))).toBe(true);
		const deep = '['.repeat(100_000) + ']'.repeat(100_000);
		expect(Array.isArray(parseBody(Buffer.from(deep), { 'content-type': contentType }))).toBe(true);
		const form = 'a=' + '%FF%'.repeat(MB / 4) + '&b=' + '%2'.repeat(10_000);
		expect(ms(() => parseBody(Buffer.from(form), { 'content-type': 'application/x-www-form-urlencoded' }))).toBeLessThan(HANG_MS);
		const manyFields = 'a=1&'.repeat(200_000);
		expect(Object.keys(parseBody(Buffer.from(manyFields), { 'content-type': 'application/x-www-form-urlencoded' }) as object).length).toBe(
			1,
		);
		expect(typeof parseBody(Buffer.from('\uFEFF'.repeat(MB)), { 'content-type': 'application/json' })).toBe('string');
	});

	it('keyBody path via deriveKey: Content-Type 10k parameters sent as text/plain, raw JSON', () => {
		const raw = '{"id":"evt_1"}';
		const headers = { 'content-type': 'text/plain' + '; a="b;c"'.repeat(10_000) };
		const took = ms(() => {
			const key = deriveKey({ body: raw, rawBody: Buffer.from(raw), headers }, { strategy: 'auto', onMissingKey: 'bodyHash' } as never);
			expect(typeof key.key).toBe('string');
		});
		expect(took).toBeLessThan(HANG_MS);
	});

	const now = 1_700_000_000;
	it('Stripe-Signature with 100k v1= entries, 100k t= entries, 1M commas', () => {
		const v1 = ('v1=' + 'ab'.repeat(32) + ',').repeat(100_000);
		const result = verifySignature({
			scheme: 'stripe',
			headers: { 'stripe-signature': `t=${now},${v1}` },
			rawBody: Buffer.from('{}'),
			secrets: ['whsec_x'],
			nowSeconds: now,
		});
		expect(result).toMatchObject({ valid: false, reason: 'signature_mismatch' });
		const twice = verifySignature({
			scheme: 'stripe',
			headers: { 'stripe-signature': 't=1,'.repeat(100_000) },
			rawBody: Buffer.from(''),
			secrets: ['x'],
			nowSeconds: now,
		});
		expect(twice).toMatchObject({ valid: false, reason: 'malformed_header' });
		expect(
			verifySignature({
				scheme: 'stripe',
				headers: { 'stripe-signature': ','.repeat(MB) },
				rawBody: Buffer.from(''),
				secrets: ['x'],
				nowSeconds: now,
			}),
		).toMatchObject({ valid: false });
	});

	it('Standard Webhooks: 100k `v1,` entries and 1 MB of whitespace', () => {
		const headers = {
			'webhook-signature': ('v1,' + 'AAAA'.repeat(8) + ' ').repeat(100_000) + ' \t'.repeat(MB / 2),
			'webhook-id': 'msg_1',
			'webhook-timestamp': String(now),
		};
		const result = verifySignature({
			scheme: 'standardWebhooks',
			headers,
			rawBody: Buffer.from('{}'),
			secrets: ['whsec_AAAA'],
			nowSeconds: now,
		});
		expect(result).toMatchObject({ valid: false, reason: 'signature_mismatch' });
	});

	it('hex / base64 decoding: 64 KB valid and invalid; longer is malformed', () => {
		expect(decodeHex('ab'.repeat(32 * 1024))?.length).toBe(32 * 1024);
		expect(decodeHex('ab'.repeat(16 * 1024) + 'a')).toBeUndefined();
		expect(decodeBase64('abcd'.repeat(16 * 1024))?.length).toBe(48 * 1024);
		expect(decodeBase64('abcd'.repeat(8 * 1024) + 'a')).toBeUndefined();
		expect(decodeBase64('abcd'.repeat(MB / 4))).toBeUndefined();
	});

	// A signature longer than any real one is malformed before a pattern reads it: 16 MB of base64 overflowed the
	// pattern's stack, and verifySignature threw where it says a bad request never does.
	it('decodeBase64 and decodeHex of 16 MB: malformed, not a throw', () => {
		expect(decodeBase64('abcd'.repeat(4 * MB))).toBeUndefined();
		expect(decodeHex('ab'.repeat(8 * MB))).toBeUndefined();
		expect(decodeBase64('abcd')?.length).toBe(3);
	});
});

describe('red team 36: preview, stored answers, storable values', () => {
	it('payloadPreview: 100k-deep body gives null, 1 MB of lone surrogates a cut text', () => {
		expect(payloadPreview(JSON.parse('['.repeat(100_000) + ']'.repeat(100_000)))).toBeNull();
		const preview = payloadPreview({ note: '\uD800'.repeat(MB) });
		expect(preview?.length).toBeLessThanOrEqual(400);
	});

	it('finding 1 through payloadPreview: a stored body string `a.a.a…` of 64 KB (child process)', () => {
		const script = `
			const { payloadPreview } = require('./lib/evidence/payloadPreview.ts');
			const t = Date.now(); const p = payloadPreview({ note: 'a.'.repeat(32768) });
			console.log(JSON.stringify({ ms: Date.now() - t, length: p.length }));`;
		const run = inChild(script, 120000);
		expect(run.timedOut).toBe(false);
		console.log('redteam36 payloadPreview 64 KB a.a.a:', run.stdout.trim());
	});

	it('storedAnswer: 100k-deep answer is ANSWER_NOT_KEPT; lone surrogates repaired', () => {
		expect(storedAnswer(JSON.parse('['.repeat(100_000) + ']'.repeat(100_000)))).toEqual({ status: 'completed' });
		expect(storedAnswer({ a: '\uDC00x' })).toEqual({ a: '\uFFFDx' });
	});

	// Each part of a credential header is looked for in every text of the answer: a header of a thousand parts made that
	// work a thousand times (1,300 parts × a 1 MB message: 3.4 s). The first parts count, the whole value always does.
	it('storedAnswer and withoutRequestSecrets: a header of 1,300 signature parts costs what one of 16 does', () => {
		const header = (k: number) => Array.from({ length: k }, (_, i) => `v1=${String(i).padStart(12, 'x')}`).join(',');
		const answer = { items: Array.from({ length: 2000 }, (_, i) => `ordinary text ${i} `.repeat(20)) };
		const small = ms(() => storedAnswer(answer, { headers: { 'stripe-signature': header(16) } }));
		const large = ms(() => storedAnswer(answer, { headers: { 'stripe-signature': header(1300) } }));
		expect({ slower: large > 1000 && large > 10 * Math.max(small, 2), small, large }).toMatchObject({ slower: false });
		// The whole value, and its first parts, are still kept out of the answer.
		const leaked = storedAnswer({ whole: header(1300), first: 'xxxxxxxxxxx0' }, { headers: { 'stripe-signature': header(1300) } });
		expect(leaked).toEqual({});
		// A 16 KB header (Node's default limit) with ~1,300 parts against a 1 MB failure message.
		const message = 'x'.repeat(MB);
		const took = ms(() => withoutRequestSecrets(message, { headers: { 'stripe-signature': header(1300) } }));
		expect(took).toBeLessThan(HANG_MS);
	});

	it('storableText: 1M lone surrogates and NULs, linear', () => {
		expect(storableText('\uD800\0'.repeat(MB / 2)).changed).toBe(true);
		expectNotQuadratic(
			growth(
				(n) => '\uDBFF\uDC00\uDC00'.repeat(n),
				(text) => storableText(text),
				64 * 1024,
			),
		);
	});

	it('storablePayload: 100k-deep payload, with and without raw body, is not stored with a reason', () => {
		const raw = '['.repeat(100_000) + '12345678901234567890' + ']'.repeat(100_000);
		const payload = JSON.parse(raw) as unknown;
		expect(storablePayload(payload, MB).json).toBeNull();
		expect(storablePayload(payload, MB, Buffer.from(raw)).json).toBeNull();
	});

	it('Events Path: 1000 events nested under a 2k-segment path, raw body (10k took 5 s: memberAtPath, see above)', () => {
		const depth = 2_000;
		const raw = '{"a":'.repeat(depth) + '[' + Array.from({ length: 1000 }, (_, i) => `{"id":${i}}`).join(',') + ']' + '}'.repeat(depth);
		const steps = eventsPathSteps('body' + '.a'.repeat(depth));
		const took = ms(() => {
			const found = eventsOf(JSON.parse(raw), Buffer.from(raw), steps, 'path');
			expect('events' in found && found.events.length).toBe(1000);
		});
		expect(took).toBeLessThan(HANG_MS);
		const tooMany = '[' + '0,'.repeat(100_000) + '0]';
		expect(eventsOf(JSON.parse(tooMany), Buffer.from(tooMany), eventsPathSteps('body'), 'body')).toMatchObject({ refused: 'tooMany' });
	});
});
