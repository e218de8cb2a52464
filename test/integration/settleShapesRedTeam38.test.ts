import { createHmac } from 'node:crypto';

import type { INode } from 'n8n-workflow';

import { MAX_REDACTED_LENGTH, redactedErrorText } from '../../lib/evidence/redactedText';
import { payloadPreview } from '../../lib/evidence/payloadPreview';
import { verifySignature } from '../../lib/signature/verify';
import { storableErrorMessage } from '../../lib/store/storableValues';
import { storedAnswer } from '../../lib/webhook/storedAnswer';
import { describeWithN8n } from '../support/n8nBaseNodes';
import { link } from '../support/settleWorkflows';
import { baseNode as node, EVENTS, events, triggerRedTeam, type Step } from '../support/triggerRedTeam';

/*
 * Thirty-eighth red-team pass: leaks and forgeries after today's redaction change (64 KB read, new patterns). Rows at two
 * levels: n8n 2.41.1's engine through the red-team harness (the trigger), and unit calls where the promise is the
 * function's. A row that fails breaks a promise.
 */

/** A message whose first part redacts to almost nothing (a 60 KB credential value), so text near the 64 KB cut lands in the stored 2000. */
function messageCutInside(secretText: string, keep: number): { message: string; secret: string } {
	const head = 'Upstream refused: token=';
	const filler = 'A'.repeat(MAX_REDACTED_LENGTH - head.length - 1 - keep - secretText.indexOf('sk_live'));
	const message = `${head}${filler} ${secretText} and more text after it`;
	return { message, secret: secretText.slice(secretText.indexOf('sk_live'), secretText.indexOf('sk_live') + keep) };
}

const SECRET = 'sk_live_rt38SPLITsecret0001abcdefghijklmn';

describe('red team 38 (unit): redaction around the 64 KB cut', () => {
	it('a secret wholly after the first 64 KB is dropped, not stored unredacted', () => {
		const message = `Upstream refused: ${'x '.repeat(40_000)} {"x-api-key":"${SECRET}"}`;
		const stored = storableErrorMessage(message).text;
		const redacted = redactedErrorText(message);
		expect({ stored: stored.includes('sk_live_rt38'), redacted: redacted.includes('sk_live_rt38') }).toEqual({
			stored: false,
			redacted: false,
		});
	});

	it.each([
		['JSON member {"x-api-key":"…"} cut inside its value', `{"x-api-key":"${SECRET}"}`],
		['JSON member {"password":"…"} cut inside its value', `{"password":"${SECRET}"}`],
		['URL user info https://svc:…@host cut before the @', `https://svc:${SECRET}@api.example.com/v1`],
		["inspect 'x-api-key': '…' cut inside its value", `{ 'x-api-key': '${SECRET}' }`],
		['x-api-key="…" cut inside its quoted value', `x-api-key="${SECRET}"`],
	])('storableErrorMessage: %s (after a 60 KB redacted value) keeps no part of the secret', (_label, text) => {
		const { message, secret } = messageCutInside(text, 30);
		const full = storableErrorMessage(`Upstream refused: token=x ${text} and more text after it`).text;
		const stored = storableErrorMessage(message).text;
		if (process.env.RT38_SHOW) console.log(JSON.stringify(stored.slice(0, 200)));
		expect({
			storedHoldsSecretPrefix: stored.includes(secret.slice(0, 17)),
			shortMessageHoldsIt: full.includes(secret.slice(0, 17)),
			length: stored.length < 2000,
		}).toEqual({
			storedHoldsSecretPrefix: false,
			shortMessageHoldsIt: false,
			length: true,
		});
	});

	it('payloadPreview: a text member holding JSON, {"x-api-key":"…"} cut by the 64 KB read, shows no part of the secret', () => {
		const { message, secret } = messageCutInside(`{"x-api-key":"${SECRET}"}`, 30);
		const preview = payloadPreview({ id: 'evt_1', note: message }) ?? '';
		if (process.env.RT38_SHOW) console.log(preview);
		expect(preview.includes(secret.slice(0, 17))).toBe(false);
	});
});

describe('red team 38 (unit): the stored answer', () => {
	const headerKey = 'hk_rt38_HEADERsecret_0001';
	const request = {
		headers: { 'x-webhook-key': headerKey, authorization: 'Bearer sk_live_rt38BEARERsecret0002' },
		credentialHeaders: ['X-Webhook-Key'],
	};

	it.each([
		['under another name', { copied: headerKey }],
		['nested 50 deep', Array.from({ length: 50 }).reduce<unknown>((inner) => ({ n: inner }), { s: headerKey })],
		['inside an array of arrays', { list: [[[headerKey]], [['ok', `Bearer sk_live_rt38BEARERsecret0002`]]] }],
		['inside a longer text', { text: `the key was ${headerKey}.` }],
		['JSON-escaped', { text: JSON.stringify({ k: headerKey }) }],
		['as a member name', { [headerKey]: 1 }],
	])('Header Auth value %s: not kept', (_label, answer) => {
		const kept = JSON.stringify(storedAnswer(answer, request));
		expect({ header: kept.includes(headerKey), bearer: kept.includes('rt38BEARERsecret0002') }).toEqual({ header: false, bearer: false });
	});

	it('credential header named with odd case and spaces (" X-WEBHOOK-key "): its value is not kept', () => {
		const kept = JSON.stringify(
			storedAnswer({ copied: headerKey }, { headers: { 'x-webhook-key': headerKey }, credentialHeaders: [' X-WEBHOOK-key '] }),
		);
		expect(kept.includes(headerKey)).toBe(false);
	});

	it('Header Auth value of digits, echoed as a number: not kept', () => {
		const kept = JSON.stringify(
			storedAnswer({ n: 9_876_543_210_123 }, { headers: { 'x-webhook-key': '9876543210123' }, credentialHeaders: ['x-webhook-key'] }),
		);
		expect(kept.includes('9876543210123')).toBe(false);
	});

	it('Bearer credential echoed as a Buffer (its bytes): not kept', () => {
		const kept = JSON.stringify(storedAnswer({ b: Buffer.from('sk_live_rt38BEARERsecret0002') }, request));
		const bytes = JSON.stringify([...Buffer.from('sk_live_rt38BEARERsecret0002')]);
		expect(kept.includes(bytes.slice(1, -1))).toBe(false);
	});

	it('owner token under another name and in a text: not kept', () => {
		const token = 'ot_rt38_0123456789abcdef';
		const kept = JSON.stringify(storedAnswer({ t: token, note: `token ${token}`, deep: [[{ x: token }]] }, { ownerTokens: [token] }));
		expect(kept.includes(token)).toBe(false);
	});
});

describe('red team 38 (unit): Stripe signature forgeries', () => {
	const secret = 'whsec_rt38';
	const body = Buffer.from('{"id":"evt_rt38","amount":100}');
	const now = 1_800_000_000;
	const sign = (key: string, t: number, bytes: Buffer) => createHmac('sha256', key).update(`${t}.`).update(bytes).digest('hex');
	const verify = (header: string, secrets = [secret], bytes = body) =>
		verifySignature({ scheme: 'stripe', headers: { 'stripe-signature': header }, rawBody: bytes, secrets, nowSeconds: now } as never);

	it.each([
		['valid', `t=${now},v1=${sign(secret, now, body)}`, true, null],
		[
			'over a different body of the same length',
			`t=${now},v1=${sign(secret, now, Buffer.from('{"id":"evt_rt38","amount":999}'))}`,
			false,
			null,
		],
		['a valid signature with a replayed timestamp an hour old', `t=${now - 3600},v1=${sign(secret, now - 3600, body)}`, false, null],
		['a valid signature only as v0', `t=${now},v0=${sign(secret, now, body)}`, false, null],
		[
			'v1=bad then v1=valid (Stripe sends several during rotation)',
			`t=${now},v1=${'0'.repeat(64)},v1=${sign(secret, now, body)}`,
			true,
			null,
		],
		['computed with an empty secret', `t=${now},v1=${sign('', now, body)}`, false, null],
		['computed with the secret trimmed, credential has spaces', `t=${now},v1=${sign(secret, now, body)}`, false, [` ${secret} `]],
		['t given twice, the signed one second', `t=${now - 3600},t=${now},v1=${sign(secret, now, body)}`, undefined, null],
		['unicode secret, signed with its UTF-8 bytes', `t=${now},v1=${sign('whsec_ünï💥', now, body)}`, true, ['whsec_ünï💥']],
		[
			'unicode secret, signed with its Latin-1 bytes',
			`t=${now},v1=${createHmac('sha256', Buffer.from('whsec_ünï', 'latin1')).update(`${now}.`).update(body).digest('hex')}`,
			false,
			['whsec_ünï'],
		],
		['uppercase hex of a valid signature', `t=${now},v1=${sign(secret, now, body).toUpperCase()}`, undefined, null],
	])('%s', (_label, header, valid, secrets: string[] | null) => {
		const result = verify(header as string, secrets ?? [secret]);
		if (process.env.RT38_SHOW) console.log(_label, result);
		if (valid !== undefined) expect(result.valid).toBe(valid);
	});

	it('a blank secret is refused as configuration, never used', () => {
		expect(() => verify(`t=${now},v1=${sign('', now, body)}`, [''])).toThrow();
		expect(() => verify(`t=${now},v1=${sign('  ', now, body)}`, ['  '])).toThrow();
	});
});

describeWithN8n('red team 38: leaks and forgeries through the trigger', () => {
	let lookupDetail = '';
	const { effectsAt, httpCall, keyRows, postStripe, provide, sendAs, startedItems, useTrigger } = triggerRedTeam({
		tag: 'rt38',
		route: (route) => (route === 'lookup' ? { detail: lookupDetail } : undefined),
		baseNodeFiles: {
			'n8n-nodes-base.stopAndError': 'StopAndError/StopAndError.node.js',
			'n8n-nodes-base.set': 'Set/Set.node.js',
		},
	});
	const secret = 'whsec_rt38';
	afterEach(() => sendAs(undefined));

	// A Stop and Error quoting an upstream's detail: 60 KB of a redacted token, then a JSON body with x-api-key whose value
	// straddles the 64 KB cut. The stored last error must hold no part of that value.
	it('trigger: failure message whose x-api-key value straddles the 64 KB cut → last_error holds no part of it', async () => {
		useTrigger('wf-rt38-cut');
		const { message, secret: part } = messageCutInside(`{"x-api-key":"${SECRET}"}`, 30);
		lookupDetail = message;
		const step: Step = {
			nodes: [
				httpCall('Lookup', 'lookup'),
				node('Fail', 'stopAndError', 1, { errorType: 'errorMessage', errorMessage: '={{ $json.detail }}' }),
			],
			connections: { Lookup: { main: [link('Fail')] } },
			heads: ['Lookup'],
		};
		const { answers } = await provide({ id: 'evt_rt38_cut' }, step, 1);
		const rows = keyRows();
		if (process.env.RT38_SHOW) console.log(rows.map((row) => row.last_error?.slice(0, 200)));
		expect({
			answers,
			status: rows.map((row) => row.status),
			leaked: rows.some((row) => (row.last_error ?? '').includes(part.slice(0, 17))),
		}).toEqual({
			answers: [500],
			status: ['failed'],
			leaked: false,
		});
	});

	// The last node (Edit Fields) returns the request's signature under other names, nested, in arrays, in a text, and
	// the reservation as text: the stored answer and the copy's answer hold none of it.
	it('trigger: last node echoes the signature (other names, 50 deep, arrays of arrays, JSON text) and idempotency → stored answer holds none', async () => {
		useTrigger('wf-rt38-answer');
		const sig = "$json.headers['stripe-signature']";
		const answer = node('Answer', 'set', 3.4, {
			mode: 'manual',
			assignments: {
				assignments: [
					{ id: 'a', name: 'sig', value: `={{ ${sig} }}`, type: 'string' },
					{ id: 'b', name: 'v1', value: `={{ ${sig}.split('v1=')[1] }}`, type: 'string' },
					{ id: 'c', name: 'deep', value: `={{ Array.from({ length: 50 }).reduce((o) => ({ n: o }), { s: ${sig} }) }}`, type: 'object' },
					{ id: 'd', name: 'lists', value: `={{ [[[ ${sig} ]], [[ 'ok' ]]] }}`, type: 'array' },
					{ id: 'e', name: 'dump', value: '={{ JSON.stringify($json.headers) }}', type: 'string' },
					{ id: 'f', name: 'idem', value: '={{ JSON.stringify($json.idempotency) }}', type: 'string' },
					{ id: 'g', name: 'ok', value: 'yes', type: 'string' },
				],
			},
			includeOtherFields: false,
			options: {},
		});
		const { answers } = await provide({ id: 'evt_rt38_answer' }, { nodes: [answer], heads: ['Answer'] }, 1);
		const item = startedItems()[0]?.json as { headers: Record<string, string>; idempotency: Record<string, unknown> };
		const v1 = item.headers['stripe-signature'].split('v1=')[1];
		const token = String(item.idempotency.ownerToken ?? '');
		const copy = await postStripe(JSON.stringify({ id: 'evt_rt38_answer' }));
		const copyText = await copy.text();
		const stored = keyRows()[0]?.response ?? '';
		if (process.env.RT38_SHOW) console.log(stored, copyText, token);
		expect({
			answers,
			ok: stored.includes('"ok":"yes"'),
			storedV1: stored.includes(v1),
			copyV1: copyText.includes(v1),
			storedToken: token !== '' && stored.includes(token),
			copyToken: token !== '' && copyText.includes(token),
		}).toEqual({ answers: [200], ok: true, storedV1: false, copyV1: false, storedToken: false, copyToken: false });
	});

	// Signature Scheme None, Authentication None: a copy is answered {"status":"duplicate"}, never the stored answer.
	it('trigger: unsigned (Scheme None, no auth) → the copy gets {"status":"duplicate"}, not the stored answer', async () => {
		useTrigger('wf-rt38-unsigned', { scheme: 'none' });
		const answer = node('Answer', 'set', 3.4, {
			mode: 'manual',
			assignments: { assignments: [{ id: 'a', name: 'private', value: 'rt38-stored-answer-data', type: 'string' }] },
			includeOtherFields: false,
			options: {},
		});
		const { answers } = await provide({ id: 'evt_rt38_unsigned' }, { nodes: [answer], heads: ['Answer'] }, 1);
		sendAs({ headers: { 'stripe-signature': 'garbage' } });
		const copy = await postStripe(JSON.stringify({ id: 'evt_rt38_unsigned' }));
		const text = await copy.text();
		expect({
			answers,
			copy: copy.status,
			body: text,
			first: copy.headers.get('x-idempotency-first-execution'),
			stored: (keyRows()[0]?.response ?? '').includes('rt38-stored-answer-data'),
		}).toEqual({ answers: [200], copy: 200, body: '{"status":"duplicate"}', first: null, stored: true });
	});

	const now = () => Math.floor(Date.now() / 1000);
	const sign = (key: string, t: number, text: string) => createHmac('sha256', key).update(`${t}.${text}`).digest('hex');
	const charge = (): Step => ({ nodes: [httpCall('Charge', 'charge')], heads: ['Charge'] });

	it.each([
		[
			'a signature over a different body of the same length',
			(body: string, t: number) => `t=${t},v1=${sign(secret, t, body.replace('100', '999'))}`,
		],
		[
			'a valid signature with a replayed timestamp an hour old',
			(body: string, t: number) => `t=${t - 3600},v1=${sign(secret, t - 3600, body)}`,
		],
		['the valid signature only as v0', (body: string, t: number) => `t=${t},v0=${sign(secret, t, body)}`],
		['mixed schemes: sha256=<valid>, no v1', (body: string, t: number) => `t=${t},sha256=${sign(secret, t, body)}`],
		['computed with an empty secret', (body: string, t: number) => `t=${t},v1=${sign('', t, body)}`],
		['computed with the secret plus a trailing space', (body: string, t: number) => `t=${t},v1=${sign(`${secret} `, t, body)}`],
		[
			'two headers joined: a forged one and nothing else valid',
			(body: string, t: number) => `t=${t},v1=${'a'.repeat(64)}, t=${t},v1=${'b'.repeat(64)}`,
		],
	])('trigger: forgery — %s → refused, nothing reserved, nothing run', async (label, header) => {
		useTrigger(`wf-rt38-forge-${label.length}-${label.slice(0, 8).replace(/\W/g, '')}`);
		const body = JSON.stringify({ id: `evt_rt38_forge_${label.length}`, amount: 100 });
		sendAs({ headers: { 'stripe-signature': header(body, now()) } });
		const response = await postStripe(body);
		const text = await response.text();
		expect({
			status: response.status,
			text: /invalid_signature/.test(text),
			started: startedItems().length,
			keys: keyRows().length,
		}).toEqual({
			status: 401,
			text: true,
			started: 0,
			keys: 0,
		});
		expect(effectsAt('charge', `evt_rt38_forge_${label.length}`)).toBe(0);
		void charge;
	});

	// Events Path: event A's body carries an `idempotency` object naming event B's key: each event keeps its own key, both run once.
	it("trigger: Events Path, one event's body carries another event's idempotency object → each its own key, both run once", async () => {
		useTrigger('wf-rt38-events', EVENTS);
		const keyB = 'wf:wf-rt38-events:evt:evt_rt38_b';
		const list = [{ id: 'evt_rt38_a', idempotency: { key: keyB, ownerToken: 'forged-owner-token', status: 'new' } }, { id: 'evt_rt38_b' }];
		const step: Step = {
			nodes: [httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }, '={{ JSON.stringify({ id: $json.body.id }) }}')],
			connections: { Charge: { main: [[], []] } },
			heads: ['Charge'],
		};
		const { answers } = await provide(events(list), step, 2);
		const rows = keyRows().map((row) => [row.key, row.status]);
		expect({
			answers,
			rows,
			items: startedItems().map((item) => (item.json.idempotency as Record<string, unknown>).key),
			charges: [effectsAt('charge', 'evt_rt38_a'), effectsAt('charge', 'evt_rt38_b')],
		}).toEqual({
			answers: [200],
			rows: [
				['wf:wf-rt38-events:evt:evt_rt38_a', 'completed'],
				[keyB, 'completed'],
			],
			items: ['wf:wf-rt38-events:evt:evt_rt38_a', keyB],
			charges: [1, 1],
		});
	});
});

void (null as unknown as INode);
