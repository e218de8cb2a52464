import { InvalidConfigurationError } from '../../../lib/errors';
import { defaultSource, replayEvidence, validateEvidenceConfig, type EvidenceConfig } from '../../../lib/evidence/replayEvidence';
import { storablePayload } from '../../../lib/store/storableValues';
import { cpuMs } from '../../support/cpuTime';

const config = (overrides: Partial<EvidenceConfig> = {}): EvidenceConfig => ({
	storePayload: true,
	maxPayloadKb: 64,
	correlation: 'off',
	correlationHeader: 'traceparent',
	...overrides,
});

describe('storablePayload: what JSON cannot hold is not stored, never thrown', () => {
	it.each([
		['absent (undefined)', undefined, /no JSON form/],
		['a function', () => 1, /no JSON form/],
		[
			'a circular structure',
			(() => {
				const circular: Record<string, unknown> = {};
				circular.self = circular;
				return circular;
			})(),
			/refers to itself/,
		],
		[
			'nested 100,000 levels deep (V8 runs out of stack)',
			(() => {
				let deep: unknown = 'leaf';
				for (let level = 0; level < 100_000; level++) deep = [deep];
				return deep;
			})(),
			/nested too deeply/,
		],
	])('%s', (_what, payload, reason) => {
		const stored = storablePayload(payload, 1024);
		expect(stored).toMatchObject({ json: null, bytes: null, warnings: [] });
		expect(stored.notStoredReason).toMatch(reason);
	});

	it('BigInt numbers are stored as digit strings, with a warning', () => {
		expect(storablePayload({ amount: 12345678901234567890n }, 1024)).toEqual({
			json: '{"amount":"12345678901234567890"}',
			bytes: 33,
			warnings: ['The stored payload had BigInt numbers; they were stored as strings of digits.'],
		});
	});

	it('a member named __proto__ is kept when another member name is repaired (JSON.parse makes it an own member)', () => {
		const payload = JSON.parse('{"id":"evt_proto","__proto__":{"polluted":true},"bad\\u0000":"x"}');
		const stored = storablePayload(payload, 1024);
		expect(JSON.parse(stored.json as string)).toEqual(JSON.parse('{"id":"evt_proto","__proto__":{"polluted":true},"bad\\ufffd":"x"}'));
		expect(stored.json).toContain('"__proto__":{"polluted":true}');
		expect(({} as Record<string, unknown>).polluted).toBeUndefined();
	});

	it('member names that repair to a taken name are all kept (U+FFFD and their position); a name that needed no repair keeps it', () => {
		const stored = storablePayload({ 'a\u0000': 1, 'a\ud800': 2, 'a\ufffd': 3 }, 1024);
		expect(JSON.parse(stored.json as string)).toEqual({ 'a\ufffd': 3, 'a\ufffd\ufffd0': 1, 'a\ufffd\ufffd1': 2 });
	});

	it('20,000 member names that all repair to one name: all kept, in linear time', () => {
		// Every name of NULs and lone surrogates of length 15 becomes 15 U+FFFD: a crafted body.
		const payload: Record<string, number> = {};
		for (let index = 0; index < 20_000; index++) {
			payload[index.toString(2).padStart(15, '0').replaceAll('0', '\u0000').replaceAll('1', '\ud800')] = index;
		}
		let stored!: ReturnType<typeof storablePayload>;
		expect(cpuMs(() => (stored = storablePayload(payload, 10 * 1024 * 1024)))).toBeLessThan(5000);
		const parsed = JSON.parse(stored.json as string) as Record<string, number>;
		expect(Object.keys(parsed)).toHaveLength(20_000);
		expect(new Set(Object.values(parsed)).size).toBe(20_000);
	});

	it('JSON null (a body that was null) is a payload like any other', () => {
		expect(storablePayload(null, 1024)).toEqual({ json: 'null', bytes: 4, warnings: [] });
	});

	it('the cap counts UTF-8 bytes, not characters', () => {
		const stored = storablePayload('é'.repeat(600), 1024);
		expect(stored).toMatchObject({ json: null, bytes: 1202 });
	});

	it('at the cap exactly (4-byte emoji and 2-byte letters) it is stored; one byte over, not', () => {
		const atCap = `${'😀'.repeat(255)}é`; // 1020 + 2 bytes, plus the two quotes: 1024
		expect(storablePayload(atCap, 1024)).toMatchObject({ json: JSON.stringify(atCap), bytes: 1024 });
		expect(storablePayload(`${atCap}a`, 1024)).toMatchObject({ json: null, bytes: 1025 });
	});

	it('the size is that of the text stored: a lone surrogate counts as the 3 bytes of U+FFFD that replace it', () => {
		expect(storablePayload('x\ud800', 1024)).toMatchObject({ json: '"x\uFFFD"', bytes: 6 });
	});
});

describe('replayEvidence', () => {
	it('stores nothing with every option off', () => {
		expect(replayEvidence(config({ storePayload: false }), { payload: { a: 1 }, executionId: 'e1' })).toEqual({
			evidence: { payloadJson: null, payloadBytes: null, source: null, correlationId: null },
			report: { warnings: [] },
		});
	});

	it('never cuts a correlation id inside a surrogate pair', () => {
		const value = `${'a'.repeat(254)}😀tail`;
		const { evidence } = replayEvidence(config({ correlation: 'header', correlationHeader: 'x-request-id' }), {
			payload: {},
			headers: { 'x-request-id': value },
			executionId: 'e1',
		});
		expect(evidence.correlationId).toBe('a'.repeat(254));
	});

	describe('the correlation header, read by the one header rule', () => {
		const correlationOf = (headers: Record<string, unknown>) =>
			replayEvidence(config({ storePayload: false, correlation: 'header', correlationHeader: 'X-Request-Id' }), {
				payload: {},
				headers,
				executionId: 'e9',
			});
		const DIFFERENT =
			'The header "X-Request-Id" was sent more than once with different values; the correlation id is the n8n execution id instead.';

		it.each<[string, Record<string, unknown>, string, string[]]>([
			['one value, any case', { 'x-request-id': ' r-1 ' }, 'r-1', []],
			['a whole number (a Code node): its digits', { 'x-request-id': 42 }, '42', []],
			['the same value twice, joined with ", "', { 'x-request-id': 'r-1, r-1' }, 'r-1', []],
			['the same value in an array', { 'x-request-id': ['r-1', 'r-1'] }, 'r-1', []],
			['two values joined with ", " (n8n, header sent twice)', { 'x-request-id': 'r-1, r-2' }, 'e9', [DIFFERENT]],
			['two values in an array', { 'x-request-id': ['r-1', 'r-2'] }, 'e9', [DIFFERENT]],
			['a text and a number in an array: not the text alone', { 'x-request-id': ['r-1', 7] }, 'e9', [DIFFERENT]],
			['two spellings with different values', { 'x-request-id': 'r-1', 'X-REQUEST-ID': 'r-2' }, 'e9', [DIFFERENT]],
			[
				'a boolean',
				{ 'x-request-id': true },
				'e9',
				['The header "X-Request-Id" is not text (a boolean); the correlation id is the n8n execution id instead.'],
			],
			['absent', {}, 'e9', []],
			['empty', { 'x-request-id': '' }, 'e9', []],
		])('%s', (_case, headers, correlationId, warnings) => {
			const { evidence, report } = correlationOf(headers);
			expect(evidence.correlationId).toBe(correlationId);
			expect(report).toEqual({ correlationId, warnings });
		});

		it('NUL is repaired and an absurdly long value cut, each with a warning', () => {
			const { evidence, report } = correlationOf({ 'x-request-id': `r\u0000${'x'.repeat(1024 * 1024)}` });
			expect(evidence.correlationId).toBe(`r\uFFFD${'x'.repeat(253)}`);
			expect(report.warnings).toEqual([
				'The correlation id had NUL characters or broken Unicode (lone surrogates); they were replaced with U+FFFD (�).',
				`The correlation id was ${1024 * 1024 + 2} characters long; only its first 255 were stored.`,
			]);
		});
	});
});

describe('defaultSource', () => {
	it('is the preset for a Provider Preset key, else the scope, else none', () => {
		expect(defaultSource({ strategy: 'preset', preset: 'github', scope: 'ci', onMissingKey: 'bodyHash' })).toBe('github');
		expect(defaultSource({ strategy: 'auto', scope: ' billing ', onMissingKey: 'bodyHash' })).toBe('billing');
		expect(defaultSource({ strategy: 'auto', scope: '  ', onMissingKey: 'bodyHash' })).toBeUndefined();
	});
});

describe('validateEvidenceConfig', () => {
	it.each([1, 64, 1024])('accepts Max Payload Size %p', (maxPayloadKb) => {
		expect(() => validateEvidenceConfig(config({ maxPayloadKb }))).not.toThrow();
	});

	it.each([0, -1, 1025, 1.5, Number.NaN, Number.POSITIVE_INFINITY])('refuses Max Payload Size %p', (maxPayloadKb) => {
		expect(() => validateEvidenceConfig(config({ maxPayloadKb }))).toThrow(InvalidConfigurationError);
	});

	it.each(['traceparent', 'X-Request-Id', 'cf-ray'])('accepts the header name %p', (correlationHeader) => {
		expect(() => validateEvidenceConfig(config({ correlation: 'header', correlationHeader }))).not.toThrow();
	});

	it.each(['', 'x request', 'x:y', 'naïve'])('refuses the header name %p', (correlationHeader) => {
		expect(() => validateEvidenceConfig(config({ correlation: 'header', correlationHeader }))).toThrow(
			/Correlation Header must be a header name/,
		);
	});

	// A signature or a credential read as the correlation id would be stored with the key, returned by
	// Get Key and List Keys and written to the execution's custom data (the forbidden-header rule).
	it.each([
		'Authorization',
		'proxy-authorization',
		'stripe-signature',
		'X-Hub-Signature-256',
		'x-shopify-hmac-sha256',
		'x-slack-signature',
		'webhook-signature',
		'svix-signature',
		'paypal-transmission-sig',
		'cookie',
		'x-api-key',
		'apikey',
		'x-auth-token',
		'x-access-token',
		'x-webhook-secret',
		' Stripe-Signature ',
	])('refuses the header %p, which may carry a signature or a credential', (correlationHeader) => {
		expect(() => validateEvidenceConfig(config({ correlation: 'header', correlationHeader }))).toThrow(
			/may carry a signature or a credential, which would be stored with the key/,
		);
	});

	it.each([
		'traceparent',
		'tracestate',
		'x-request-id',
		'x-correlation-id',
		'x-amzn-trace-id',
		'x-github-delivery',
		'webhook-id',
		'i-twilio-idempotency-token',
	])('accepts the trace header %p', (correlationHeader) => {
		expect(() => validateEvidenceConfig(config({ correlation: 'header', correlationHeader }))).not.toThrow();
	});
});
