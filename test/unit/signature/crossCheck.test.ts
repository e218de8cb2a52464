import { execFileSync } from 'node:child_process';
import * as path from 'node:path';

import { Webhook } from 'standardwebhooks';
import Stripe from 'stripe';

import { decodeStandardWebhooksSecret, verifySignature, type HeaderBag } from '../../../lib/signature';
import { computeHmac } from '../../../lib/signature/hmac';

/**
 * Cross-checks against the providers' own libraries: for random bodies (unicode, empty, large)
 * and random secrets (with spaces inside and around), their signatures verify with ours, ours
 * with theirs, and a forgery signed by their library with a part of the secret is rejected by
 * both. "Ours" is the HMAC that `verifySignature` computes its expected digest with, written into
 * the provider's header format. The seed is random per run and in the suite's name; set
 * SIGNATURE_CROSS_CHECK_SEED to replay a run, SIGNATURE_CROSS_CHECK_CASES for more cases (40).
 */
const SEED = Number(process.env.SIGNATURE_CROSS_CHECK_SEED ?? Math.floor(Math.random() * 2 ** 31));
const CASES = Number(process.env.SIGNATURE_CROSS_CHECK_CASES ?? 40);
const NOW = 1700000000;
const LARGE = 1024 * 1024;

/** mulberry32: small, seedable, good enough to pick test data. */
function random(seed: number): () => number {
	let state = seed >>> 0;
	return () => {
		state = (state + 0x6d2b79f5) >>> 0;
		let t = state;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
	};
}

const next = random(SEED);
const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] as T;
const between = (low: number, high: number): number => low + Math.floor(next() * (high - low + 1));

/** Code point ranges to draw from: ASCII, spaces and controls, Latin-1, CJK, emoji (surrogate pairs). */
const RANGES: ReadonlyArray<[number, number]> = [
	[0x20, 0x7e],
	[0x20, 0x20],
	[0x09, 0x0a],
	[0x00, 0x00],
	[0xa0, 0x2ff],
	[0x4e00, 0x4fff],
	[0x1f600, 0x1f64f],
];

function text(length: number): string {
	let result = '';
	for (let i = 0; i < length; i++) {
		const [low, high] = pick(RANGES);
		result += String.fromCodePoint(between(low, high));
	}
	return result;
}

// HMAC pads a short key with zero bytes, so a key and the same key followed by NUL bytes are one
// key, in every library: secrets get no NUL, and Standard Webhooks keys no trailing zero byte, so
// that every "part of the secret" below really is another key.

/** A secret a user could configure: never blank, often with spaces inside and sometimes around. */
function secret(): string {
	const words = Array.from({ length: between(1, 5) }, () => text(between(1, 12)).replace(/[\s\0]/g, 'x'));
	const joined = words.join(' ');
	return pick(['', ' ', '\t']) + joined + pick(['', ' ', '  ']);
}

/**
 * A proper part of the secret (whole characters, not blank), as a forger who learned a word or a
 * prefix would use; a one-character secret has none, so another character stands in.
 */
function partOf(value: string): string {
	const chars = Array.from(value);
	if (chars.length === 1) return chars[0] === 'y' ? 'z' : 'y';
	for (;;) {
		const start = between(0, chars.length - 1);
		const end = between(start + 1, chars.length);
		const part = chars.slice(start, end).join('');
		if (end - start < chars.length && part.trim() !== '') return part;
	}
}

/** A proper slice of a key (or, for a one-byte key, another byte). */
function partOfKey(key: Buffer): Buffer {
	if (key.length === 1) return Buffer.from([(key[0] as number) ^ 1]);
	const start = between(0, key.length - 1);
	const end = between(start + 1, key.length);
	return start === 0 && end === key.length ? key.subarray(0, -1) : key.subarray(start, end);
}

function bodies(count: number, { empty }: { empty: boolean }): string[] {
	const list = Array.from({ length: count }, () => text(between(1, 400)));
	list.push(text(LARGE / 4));
	if (empty) list.push('');
	return list;
}

const utf8 = (value: string): Buffer => Buffer.from(value, 'utf8');

function ours(scheme: 'github' | 'stripe' | 'standardWebhooks', headers: HeaderBag, body: string, secrets: string[]) {
	return verifySignature({ scheme, headers, rawBody: utf8(body), secrets, nowSeconds: NOW });
}

describe(`independent cross-checks (seed ${SEED})`, () => {
	describe('GitHub: @octokit/webhooks-methods', () => {
		type Job = { op: 'sign'; secret: string; payload: string } | { op: 'verify'; secret: string; payload: string; signature: string };

		/** Octokit's methods are ESM only; they run in a plain Node process. */
		function octokit(jobs: Job[]): Array<string | boolean> {
			const script = path.join(__dirname, 'support', 'octokitWebhooksMethods.mjs');
			const output = execFileSync(process.execPath, [script], { input: JSON.stringify(jobs), maxBuffer: 64 * 1024 * 1024 });
			return JSON.parse(output.toString('utf8')) as Array<string | boolean>;
		}

		// Octokit refuses an empty payload; GitHub never sends one.
		const cases = bodies(CASES, { empty: false }).map((body) => {
			const key = secret();
			return { body, secret: key, forgeryKey: partOf(key) };
		});
		const ourSignature = (key: string, body: string) => `sha256=${computeHmac('sha256', key, utf8(body)).toString('hex')}`;

		it('agrees with ours on every case', () => {
			const jobs: Job[] = cases.flatMap(({ body, secret: key, forgeryKey }): Job[] => [
				{ op: 'sign', secret: key, payload: body },
				{ op: 'verify', secret: key, payload: body, signature: ourSignature(key, body) },
				{ op: 'sign', secret: forgeryKey, payload: body },
			]);
			const results = octokit(jobs);

			cases.forEach(({ body, secret: key }, index) => {
				const [theirs, theyAcceptOurs, theirForgery] = results.slice(index * 3, index * 3 + 3) as [string, boolean, string];
				const label = `case ${index}, body ${utf8(body).length} bytes`;
				expect([label, theirs]).toEqual([label, ourSignature(key, body)]);
				expect([label, ours('github', { 'x-hub-signature-256': theirs }, body, [key]).valid]).toEqual([label, true]);
				expect([label, theyAcceptOurs]).toEqual([label, true]);
				expect([label, ours('github', { 'x-hub-signature-256': theirForgery }, body, [key]).valid]).toEqual([label, false]);
			});
		});

		it("reproduces GitHub's documented example, as ours does", () => {
			const [theirs] = octokit([{ op: 'sign', secret: "It's a Secret to Everybody", payload: 'Hello, World!' }]);
			expect(theirs).toBe('sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17');
		});
	});

	describe('Stripe: stripe (generateTestHeaderString, constructEvent)', () => {
		const stripe = new Stripe('sk_test_cross_check_never_used');
		// constructEvent parses the body as JSON, and Stripe refuses an empty one: Stripe bodies are JSON.
		const cases = bodies(CASES, { empty: false }).map((body, index) => {
			const key = secret();
			return { body: JSON.stringify({ id: `evt_${index}`, object: 'event', text: body }), secret: key, forgeryKey: partOf(key) };
		});
		const ourHeader = (key: string, body: string) => `t=${NOW},v1=${computeHmac('sha256', key, utf8(`${NOW}.${body}`)).toString('hex')}`;
		const theyAccept = (body: string, header: string, key: string): boolean => {
			try {
				stripe.webhooks.constructEvent(body, header, key, 300, undefined, NOW * 1000);
				return true;
			} catch (error) {
				if (!(error instanceof Stripe.errors.StripeSignatureVerificationError)) throw error;
				return false;
			}
		};

		it.each(cases.map((entry, index) => [index, utf8(entry.body).length, entry] as const))(
			'case %i (%i bytes): agrees with ours',
			(_index, _bytes, { body, secret: key, forgeryKey }) => {
				const theirs = stripe.webhooks.generateTestHeaderString({ payload: body, secret: key, timestamp: NOW });
				expect(theirs).toBe(ourHeader(key, body));
				expect(ours('stripe', { 'stripe-signature': theirs }, body, [key])).toEqual({ valid: true, scheme: 'stripe', timestamp: NOW });
				expect(theyAccept(body, ourHeader(key, body), key)).toBe(true);

				const forged = stripe.webhooks.generateTestHeaderString({ payload: body, secret: forgeryKey, timestamp: NOW });
				expect(ours('stripe', { 'stripe-signature': forged }, body, [key]).valid).toBe(false);
				expect(theyAccept(body, forged, key)).toBe(false);
			},
		);
	});

	describe('Standard Webhooks: standardwebhooks', () => {
		const cases = bodies(CASES, { empty: true }).map((body) => {
			const length = between(1, 64);
			const key = Buffer.from(Array.from({ length }, (_, index) => between(index === length - 1 ? 1 : 0, 255)));
			return { body, secret: `whsec_${key.toString('base64')}`, forgeryKey: partOfKey(key), id: `msg_${between(1, 1e9)}` };
		});
		const headersFor = (id: string, signature: string) => ({
			'webhook-id': id,
			'webhook-timestamp': String(NOW),
			'webhook-signature': signature,
		});
		const ourSignature = (key: string, id: string, body: string) =>
			`v1,${computeHmac('sha256', decodeStandardWebhooksSecret(key), utf8(`${id}.${NOW}.${body}`)).toString('base64')}`;
		const theyAccept = (key: string, body: string, headers: Record<string, string>): boolean => {
			try {
				new Webhook(key).verify(body, headers, { jsonParse: false });
				return true;
			} catch (error) {
				if ((error as Error).name !== 'WebhookVerificationError') throw error;
				return false;
			}
		};

		beforeEach(() => {
			jest.spyOn(Date, 'now').mockReturnValue(NOW * 1000);
		});

		afterEach(() => {
			jest.restoreAllMocks();
		});

		it.each(cases.map((entry, index) => [index, utf8(entry.body).length, entry] as const))(
			'case %i (%i bytes): agrees with ours',
			(_index, _bytes, { body, secret: key, forgeryKey, id }) => {
				const theirs = new Webhook(key).sign(id, new Date(NOW * 1000), body);
				expect(theirs).toBe(ourSignature(key, id, body));
				expect(ours('standardWebhooks', headersFor(id, theirs), body, [key])).toEqual({
					valid: true,
					scheme: 'standardWebhooks',
					timestamp: NOW,
				});
				expect(theyAccept(key, body, headersFor(id, ourSignature(key, id, body)))).toBe(true);

				const forged = new Webhook(forgeryKey, { format: 'raw' }).sign(id, new Date(NOW * 1000), body);
				expect(ours('standardWebhooks', headersFor(id, forged), body, [key]).valid).toBe(false);
				expect(theyAccept(key, body, headersFor(id, forged))).toBe(false);
			},
		);
	});
});
