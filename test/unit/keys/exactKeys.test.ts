import { ForbiddenKeySourceError, InvalidConfigurationError, UnusableKeyError } from '../../../lib/errors';
import { deriveKey, validateKeyConfig, type KeyConfig } from '../../../lib/keys/deriveKey';
import { assertExactRunText } from '../../../lib/keys/exactText';
import { sha256Hex } from '../../../lib/keys/sha256';

const auto: KeyConfig = { strategy: 'auto', onMissingKey: 'bodyHash' };
const custom: KeyConfig = { strategy: 'custom', onMissingKey: 'bodyHash' };
const header: KeyConfig = { strategy: 'header', headerName: 'idempotency-key', onMissingKey: 'bodyHash' };

describe('keys are exact text or refused', () => {
	describe('lone surrogates and NUL', () => {
		// Both would reach Postgres as the same text ("evt:a\uFFFD") and share one row.
		const loneHigh = 'a\uD800';
		const loneLow = 'a\uDC00';

		it.each([
			['a lone high surrogate', loneHigh],
			['a lone low surrogate', loneLow],
			['a reversed pair', 'a\uDC00\uD800'],
			['a NUL', 'evt_1\u0000'],
		])('refuses %s in the event id, saying why', (_name, id) => {
			expect(() => deriveKey({ body: { id } }, auto)).toThrow(UnusableKeyError);
			expect(() => deriveKey({ body: { id } }, auto)).toThrow(/body field "id"/);
		});

		it('refuses them in a header value, a custom value and the scope — never falls back to the body hash', () => {
			expect(() => deriveKey({ body: {}, headers: { 'Idempotency-Key': loneHigh } }, header)).toThrow(
				/header "idempotency-key".*lone UTF-16 surrogate/,
			);
			expect(() => deriveKey({ body: {}, customValue: 'k\u0000' }, custom)).toThrow(/custom key value.*NUL/);
			expect(() => deriveKey({ body: { id: 'evt_1' } }, { ...auto, scope: `tenant${loneLow}` })).toThrow(/key scope.*surrogate/);
			expect(() =>
				deriveKey({ body: { id: 'x' }, rawBody: Buffer.from('x') }, { strategy: 'bodyHash', onMissingKey: 'error', scope: 't\u0000' }),
			).toThrow(UnusableKeyError);
		});

		it('refuses them before hashing a long key: the hash of U+FFFD would merge two long keys too', () => {
			const long = 'k'.repeat(600);
			expect(() => deriveKey({ body: {}, customValue: `${long}${loneHigh}` }, custom)).toThrow(UnusableKeyError);
		});

		it('refuses them in a configured header name', () => {
			expect(() => validateKeyConfig({ ...header, headerName: 'x-key\u0000' })).toThrow(UnusableKeyError);
		});

		it('keeps well-formed pairs (emoji) and other control characters exactly', () => {
			expect(deriveKey({ body: { id: 'evt_😀' } }, auto).key).toBe('evt:evt_😀');
			expect(deriveKey({ body: { id: 'a\u0001b' } }, auto).key).toBe('evt:a\u0001b');
		});
	});

	describe('numbers are never rounded', () => {
		const big = '{"id": 12345678901234567890, "type": "x"}';
		const bigNeighbour = '{"id": 12345678901234567891, "type": "x"}';

		it('uses the exact digits from the raw body: two ids that JSON.parse rounds alike get two keys', () => {
			const first = JSON.parse(big);
			const second = JSON.parse(bigNeighbour);
			expect(first.id).toBe(second.id); // the rounding this guards against
			const a = deriveKey({ body: first, rawBody: Buffer.from(big) }, auto);
			const b = deriveKey({ body: second, rawBody: Buffer.from(bigNeighbour) }, auto);
			expect(a).toEqual({ key: 'evt:12345678901234567890', keySource: 'event-id', hashed: false });
			expect(b.key).toBe('evt:12345678901234567891');
		});

		it('reads the preset field (Slack event_id) the same way', () => {
			const raw = '{"event_id":98765432109876543210}';
			expect(
				deriveKey({ body: JSON.parse(raw), rawBody: Buffer.from(raw) }, { strategy: 'preset', preset: 'slack', onMissingKey: 'error' }).key,
			).toBe('evt:98765432109876543210');
		});

		it('refuses an unsafe number without a raw body, rather than rounding or falling back', () => {
			expect(() => deriveKey({ body: JSON.parse(big) }, auto)).toThrow(UnusableKeyError);
			expect(() => deriveKey({ body: JSON.parse(big) }, auto)).toThrow(/Raw Body/);
		});

		it('refuses when the raw body does not hold that number (the item was transformed)', () => {
			expect(() => deriveKey({ body: JSON.parse(big), rawBody: Buffer.from('{"id":"12345678901234567890"}') }, auto)).toThrow(
				UnusableKeyError,
			);
			expect(() => deriveKey({ body: JSON.parse(big), rawBody: Buffer.from('{"id":1}') }, auto)).toThrow(UnusableKeyError);
			expect(() => deriveKey({ body: JSON.parse(big), rawBody: Buffer.from('not json') }, auto)).toThrow(UnusableKeyError);
		});

		it('keeps whole numbers within 2^53 as their digits, whatever their JSON form', () => {
			for (const raw of ['{"id":9007199254740991}', '{"id":9007199254740991.0}', '{"id":9.007199254740991e15}']) {
				expect(deriveKey({ body: JSON.parse(raw), rawBody: Buffer.from(raw) }, auto).key).toBe('evt:9007199254740991');
			}
			expect(deriveKey({ body: { id: -42 } }, auto).key).toBe('evt:-42');
		});

		it('keys 2^53 + 1 apart from 2^53 (the first integer JSON.parse cannot hold)', () => {
			const raw = '{"id":9007199254740993}';
			expect(JSON.parse(raw).id).toBe(9007199254740992);
			expect(deriveKey({ body: JSON.parse(raw), rawBody: Buffer.from(raw) }, auto).key).toBe('evt:9007199254740993');
		});

		it('uses fractions and exponent forms exactly as written in the raw body, and refuses them without it', () => {
			for (const [raw, key] of [
				['{"id":1.5}', 'evt:1.5'],
				['{"id":1.50}', 'evt:1.50'],
				['{"id":0.1000000000000000001}', 'evt:0.1000000000000000001'],
				['{"id":1e400}', 'evt:1e400'],
			]) {
				expect(deriveKey({ body: JSON.parse(raw), rawBody: Buffer.from(raw) }, auto).key).toBe(key);
				expect(() => deriveKey({ body: JSON.parse(raw) }, auto)).toThrow(UnusableKeyError);
			}
		});

		it('refuses unsafe numbers from a custom expression, and keeps bigint digits', () => {
			expect(() => deriveKey({ body: {}, customValue: 2 ** 64 }, custom)).toThrow(/custom key value.*cannot be read exactly/);
			expect(() => deriveKey({ body: {}, customValue: Number.NaN }, custom)).toThrow(UnusableKeyError);
			expect(deriveKey({ body: {}, customValue: 12345678901234567890n }, custom).key).toBe('12345678901234567890');
		});
	});

	describe('user text never takes the form of a derived key', () => {
		const hex = sha256Hex('some body');

		it.each([
			['the long-key form', `long-key-sha256:${hex}`],
			['the body-hash form', `sha256:${hex}`],
			['the body-hash form of a scope', `stripe:sha256:${hex}`],
			['the long-key form of a scope', `stripe:long-key-sha256:${hex}`],
		])('refuses a custom value in %s', (_name, value) => {
			expect(() => deriveKey({ body: {}, customValue: value }, custom)).toThrow(UnusableKeyError);
			expect(() => deriveKey({ body: {}, customValue: value }, custom)).toThrow(/derives itself/);
		});

		it('so a user value cannot equal the hashed form of a long key', () => {
			const long = deriveKey({ body: {}, customValue: 'k'.repeat(600) }, custom);
			expect(long.hashed).toBe(true);
			expect(() => deriveKey({ body: {}, customValue: long.key }, custom)).toThrow(UnusableKeyError);
		});

		it('refuses an event id or header value that would look like a scoped body hash', () => {
			expect(() => deriveKey({ body: { id: `sha256:${hex}` } }, auto)).toThrow(UnusableKeyError);
			expect(() => deriveKey({ body: {}, headers: { 'idempotency-key': `sha256:${hex}` } }, header)).toThrow(UnusableKeyError);
		});

		it('keeps values that only resemble the derived forms', () => {
			for (const value of [
				`SHA256:${hex.toUpperCase()}`,
				`sha256:${hex.slice(1)}`,
				`content-sha256:${hex}`,
				`sha256:${hex}:1`,
				'evt:evt_1',
			]) {
				expect(deriveKey({ body: {}, customValue: value }, custom).key).toBe(value);
			}
		});

		it('still derives its own body-hash and long-key forms', () => {
			expect(deriveKey({ body: {}, rawBody: Buffer.from('some body') }, custom).key).toBe(`sha256:${hex}`);
			expect(deriveKey({ body: {}, rawBody: Buffer.from('some body') }, { ...custom, scope: 'stripe' }).key).toBe(`stripe:sha256:${hex}`);
		});
	});
});

describe('signature-bearing headers are never keys', () => {
	it.each([
		'PAYPAL-TRANSMISSION-SIG',
		'paypal-transmission-time',
		'x-custom-sig',
		'x-request-time',
		'x-zm-request-timestamp',
		'x-webhook-nonce',
		'x_signature_v2',
		'x-goog-date',
		'stripe-signature',
		'Authorization',
	])('refuses %s', (headerName) => {
		expect(() => validateKeyConfig({ ...header, headerName })).toThrow(ForbiddenKeySourceError);
	});

	it.each(['paypal-transmission-id', 'x-github-delivery', 'idempotency-key', 'webhook-id', 'x-runtime-id', 'x-signup-id', 'x-timezone'])(
		'accepts %s',
		(headerName) => {
			expect(() => validateKeyConfig({ ...header, headerName })).not.toThrow();
		},
	);

	it('still rejects an over-long scope as configuration', () => {
		expect(() => validateKeyConfig({ ...auto, scope: 's'.repeat(101) })).toThrow(InvalidConfigurationError);
	});
});

describe('manual (editor) runs', () => {
	it('put the key under n8n-manual-test:, outside any scope, and say so', () => {
		expect(deriveKey({ body: { id: 'evt_1' } }, { ...auto, scope: 'stripe', manualTest: true })).toEqual({
			key: 'n8n-manual-test:stripe:evt:evt_1',
			keySource: 'event-id',
			hashed: false,
			manualTest: true,
		});
		const long = deriveKey({ body: {}, customValue: 'k'.repeat(600) }, { ...custom, manualTest: true });
		expect(long.key).toMatch(/^n8n-manual-test:long-key-sha256:[0-9a-f]{64}$/);
	});

	it('refuse a real key that starts like a test key, so a test run can never block a real delivery', () => {
		expect(() => deriveKey({ body: {}, customValue: 'n8n-manual-test:evt:1' }, custom)).toThrow(/kept for keys reserved by manual runs/);
		expect(() => deriveKey({ body: { id: '1' } }, { ...auto, scope: 'n8n-manual-test' })).toThrow(UnusableKeyError);
	});
});

describe('the other text of the statement', () => {
	it('refuses an execution or workflow id that Postgres would not store exactly, naming it', () => {
		expect(() => assertExactRunText({ 'execution id': '42', 'workflow id': 'wf\u0000' })).toThrow(/workflow id contains a NUL/);
		expect(() => assertExactRunText({ 'execution id': '4\uDC002', 'workflow id': 'wf' })).toThrow(InvalidConfigurationError);
		expect(() => assertExactRunText({ 'execution id': '42', 'workflow id': 'wf-😀' })).not.toThrow();
	});
});
