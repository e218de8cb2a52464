import { createHmac } from 'node:crypto';

import { type IConnections, type INode, type IRun } from 'n8n-workflow';

import { deriveKey, type KeyConfig } from '../../lib/keys/deriveKey';
import { redactedErrorText } from '../../lib/evidence/redactedText';
import { payloadPreview } from '../../lib/evidence/payloadPreview';
import { verifySignature } from '../../lib/signature/verify';
import { storedAnswer, withoutRequestSecrets } from '../../lib/webhook/storedAnswer';
import { parseBody } from '../../lib/webhook/body';
import { describeWithN8n } from '../support/n8nBaseNodes';
import { engineBase, executeInProcess, inProcessWorkflow, packageNode } from '../support/n8nEngine';
import { link } from '../support/settleWorkflows';
import { baseNode as node, events, triggerRedTeam, type Step } from '../support/triggerRedTeam';

/*
 * Thirty-second red-team pass: input adversity for keys, signatures and leaks. Rows at two levels: n8n 2.41.1's request
 * path and engine through the red-team harness (the trigger; n8n's Webhook → Reserve on the node path), and unit calls
 * into lib/ where the promise is the function's (redaction, signature parsing, key derivation). A row that fails breaks
 * a promise.
 */

/** What the lookup route answers (an upstream's error detail, quoted by the step's failure). */
let lookupDetail = '';

/** The charge sends the event's key: a number beyond 2^53 in the body would be rounded by JSON.stringify. */
const CHARGE_BY_KEY = '={{ JSON.stringify({ id: $json.idempotency.key }) }}';

describeWithN8n('red team 32: input adversity for keys, signatures and leaks', () => {
	const { credentials, effectsAt, httpCall, keyRows, nextExecutionId, postStripe, provide, serve, startedItems, useTrigger, sendAs } =
		triggerRedTeam({
			tag: 'rt32',
			route: (route) => (route === 'lookup' ? { detail: lookupDetail } : undefined),
			baseNodeFiles: {
				'n8n-nodes-base.webhook': 'Webhook/Webhook.node.js',
				'n8n-nodes-base.stopAndError': 'StopAndError/StopAndError.node.js',
			},
		});

	const chargeStep = (): Step => ({ nodes: [httpCall('Charge', 'charge', {}, CHARGE_BY_KEY)], heads: ['Charge'] });
	const wf = (id: string) => `wf:${id}:`;

	/* (1) JSON duplicate members, numbers, Content-Type variants through the trigger ------------------------------- */

	// `{"id":"jd_x","id":"jd_y"}`: JSON.parse (n8n, the item) takes the last member; the key must read the same member,
	// whatever the unsigned Content-Type says. Then the same bytes re-sent as text/plain, as application/vnd.api+json
	// and as `APPLICATION/JSON; charset="UTF-8"` (re-signed: a provider's retry): copies, never run again.
	it('trigger: {"id":"jd_x","id":"jd_y"} → key evt:jd_y (as JSON.parse); copies under other Content-Types are duplicates', async () => {
		useTrigger('wf-rt32-dupmember');
		const bytes = () => Buffer.from('{"id":"jd_x","id":"jd_y","amount":1}');
		const answers: number[][] = [];
		for (const contentType of [
			'application/json',
			'text/plain',
			'application/vnd.api+json',
			'APPLICATION/JSON; charset="UTF-8"',
			'text/json',
		]) {
			sendAs({ contentType, bytes });
			answers.push((await provide({}, chargeStep(), 1)).answers);
		}
		expect({
			answers,
			keys: keyRows().map((row) => [row.key, row.status]),
			charges: effectsAt('charge', `${wf('wf-rt32-dupmember')}evt:jd_y`),
		}).toEqual({
			answers: [[200], [200], [200], [200], [200]],
			keys: [[`${wf('wf-rt32-dupmember')}evt:jd_y`, 'completed']],
			charges: 1,
		});
	});

	// Two different events whose ids differ only beyond 2^53 (JSON.parse gives both 12345678901234567000): each its own
	// key (the raw digits), each run once.
	it('trigger: ids 12345678901234567890 and 12345678901234567891 (rounded alike by JSON.parse): two keys, each run once', async () => {
		useTrigger('wf-rt32-bignum');
		sendAs({ bytes: () => Buffer.from('{"id":12345678901234567890,"amount":1}') });
		const one = await provide({}, chargeStep());
		sendAs({ bytes: () => Buffer.from('{"id":12345678901234567891,"amount":2}') });
		const two = await provide({}, chargeStep());
		const prefix = wf('wf-rt32-bignum');
		expect({
			answers: [one.answers, two.answers],
			charges: [effectsAt('charge', `${prefix}evt:12345678901234567890`), effectsAt('charge', `${prefix}evt:12345678901234567891`)],
		}).toEqual({ answers: [[200], [200]], charges: [1, 1] });
	});

	// A form-urlencoded delivery with its id field twice (`id=fd_1&id=fd_2`), then another event `id=fd_2`. The trigger
	// reads a form as n8n's body parser does (a field given twice is the list of its values, no one of them its id): the
	// first delivery is keyed by its body hash and runs; the second event is its own. Read with the last value winning,
	// the second event would be answered as a copy of the first and never run.
	it('trigger: form `id=fd_1&id=fd_2&amount=100`, then another event `id=fd_2&amount=200`: both run, never merged', async () => {
		useTrigger('wf-rt32-form-dup');
		const step: Step = {
			nodes: [httpCall('Charge', 'charge', {}, '={{ JSON.stringify({ id: "form_" + $json.body.amount }) }}')],
			heads: ['Charge'],
		};
		sendAs({ contentType: 'application/x-www-form-urlencoded', bytes: () => Buffer.from('id=fd_1&id=fd_2&amount=100') });
		const first = await provide({}, step, 2);
		sendAs({ contentType: 'application/x-www-form-urlencoded', bytes: () => Buffer.from('id=fd_2&amount=200') });
		const second = await provide({}, step, 2);
		expect({
			first: first.answers,
			charges100: effectsAt('charge', 'form_100'),
			second: second.answers,
			charges200: effectsAt('charge', 'form_200'),
		}).toEqual({ first: [200], charges100: 1, second: [200], charges200: 1 });
	});

	// Events Path into a nested array (`body.batches[0].events`) whose events repeat members and carry ids beyond 2^53:
	// each event keyed by its own last `id`, exact digits; both run once.
	it('trigger: Events Path body.batches[0].events, events with duplicate members and ids beyond 2^53: each its exact key, one charge each', async () => {
		useTrigger('wf-rt32-nested-events', { options: { eventsPath: 'body.batches[0].events' } });
		const body = '{"batches":[{"events":[{"id":"x","id":12345678901234567892},{"id":12345678901234567893}]},{"events":[{"id":"other"}]}]}';
		sendAs({ bytes: () => Buffer.from(body) });
		const step: Step = {
			nodes: [httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }, CHARGE_BY_KEY)],
			connections: { Charge: { main: [[], []] } },
			heads: ['Charge'],
		};
		const { answers } = await provide(events([]), step, 2);
		const prefix = wf('wf-rt32-nested-events');
		expect({
			answers,
			charges: [effectsAt('charge', `${prefix}evt:12345678901234567892`), effectsAt('charge', `${prefix}evt:12345678901234567893`)],
			keys: keyRows()
				.map((row) => row.key)
				.sort(),
		}).toEqual({
			answers: [200],
			charges: [1, 1],
			keys: [`${prefix}evt:12345678901234567892`, `${prefix}evt:12345678901234567893`],
		});
	});

	/* (2) Multipart on the node path: n8n's Webhook → Idempotency Reserve (no Verify: multipart is never verified) ------ */

	const n8nWebhook: INode = {
		id: 'Webhook',
		name: 'Webhook',
		type: 'n8n-nodes-base.webhook',
		typeVersion: 2.1,
		position: [0, 0],
		webhookId: 'rt32-node-path',
		parameters: { httpMethod: 'POST', path: 'rt32', responseMode: 'onReceived', options: { rawBody: true } },
	};

	function nodePathWorkflow(id: string) {
		const reserve = packageNode(
			'Reserve',
			'idempotencyReserve',
			{ store: 'embedded', keySource: 'auto', mode: 'lease', leaseSeconds: 60, options: {} } as never,
			{ typeVersion: 3, position: [440, 0] },
		);
		const charge = httpCall('Charge', 'charge', {}, '={{ JSON.stringify({ id: $binary.upload.fileName }) }}');
		const complete = packageNode(
			'Mark Complete',
			'idempotencyKey',
			{ operation: 'complete', store: 'embedded', source: 'item', options: {} },
			{ typeVersion: 3, position: [900, 0] },
		);
		const connections: IConnections = {
			Webhook: { main: [link('Reserve')] },
			Reserve: { main: [link('Charge'), [], [], []] },
			Charge: { main: [link('Mark Complete')] },
		};
		return inProcessWorkflow(id, [n8nWebhook, reserve, charge, complete], connections);
	}

	function multipart(boundary: string, fields: Record<string, string>, file: { name: string; bytes: Buffer }): Buffer {
		const parts: Buffer[] = [];
		for (const [name, value] of Object.entries(fields)) {
			parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`));
		}
		parts.push(
			Buffer.from(
				`--${boundary}\r\nContent-Disposition: form-data; name="upload"; filename="${file.name}"\r\nContent-Type: application/octet-stream\r\n\r\n`,
			),
			file.bytes,
			Buffer.from(`\r\n--${boundary}--\r\n`),
		);
		return Buffer.concat(parts);
	}

	/** Reserve's outputs: New, Duplicate, In Progress, Not Reserved; the key of the item, whichever output it took. */
	const ROUTES = ['new', 'duplicate', 'inProgress', 'notReserved'];
	async function deliverNodePath(id: string): Promise<{ run?: IRun; route?: string; key?: string }> {
		const response = await postStripe('{}');
		await response.text();
		const items = startedItems();
		if (items.length === 0) return {};
		const engine = engineBase(credentials());
		const { run } = await executeInProcess(nodePathWorkflow(id), nextExecutionId('node'), items, engine);
		const outputs = run.data.resultData.runData.Reserve?.[0]?.data?.main ?? [];
		const taken = outputs.findIndex((output) => (output?.length ?? 0) > 0);
		const item = outputs[taken]?.[0]?.json;
		return { run, route: ROUTES[taken], key: (item?.idempotency as { key?: string } | undefined)?.key };
	}

	// An upload form (Header Auth or an internal form; no signature: multipart is never verified) posts the same text
	// field `kind=invoice` with two different files. Key Source Auto: no `id`, so the body hash, which reads the parsed
	// fields and every file (by field, name, type and a hash of its bytes). Hashing the fields alone would give both
	// submissions one key, and invoice B would be taken for a copy and never charged.
	it('node path, no Verify: two multipart uploads with the same text fields and different files: both New, two keys', async () => {
		serve('wf-rt32-multipart', n8nWebhook);
		const boundary = 'rt32boundaryrt32';
		sendAs({
			contentType: `multipart/form-data; boundary=${boundary}`,
			bytes: () => multipart(boundary, { kind: 'invoice' }, { name: 'invoice-A.pdf', bytes: Buffer.from('%PDF-1.4 invoice A 100 EUR') }),
		});
		const one = await deliverNodePath('wf-rt32-multipart');
		sendAs({
			contentType: `multipart/form-data; boundary=${boundary}`,
			bytes: () => multipart(boundary, { kind: 'invoice' }, { name: 'invoice-B.pdf', bytes: Buffer.from('%PDF-1.4 invoice B 999 EUR') }),
		});
		const two = await deliverNodePath('wf-rt32-multipart');
		expect({
			routes: [one.route, two.route],
			sameKey: one.key !== undefined && one.key === two.key ? one.key : false,
			charges: [effectsAt('charge', 'invoice-A.pdf'), effectsAt('charge', 'invoice-B.pdf')],
		}).toEqual({ routes: ['new', 'new'], sameKey: false, charges: [1, 1] });
	});

	/* (3) A failure message that quotes a credential, stored with the key and named in the 500 ---------------------- */

	// The step looks something up with its own API key and fails with the upstream's detail (Stop and Error
	// `{{ $json.detail }}`), which quotes the credential: `api_key="…"` (a quoted value after `=`, as Python/Ruby reprs,
	// OAuth 1.0 and WWW-Authenticate write it), `authorization: Bot …` (a scheme other than Bearer/Basic/Token/Digest), a
	// JSON array value. The secret is the step's, not the request's: only redactedErrorText (by name) can catch it.
	// Nothing secret may be stored with the key (Get Key's lastError, the dashboard), nor sent in the 500.
	it.each([
		[
			'api_key="…" (quoted after =)',
			'Upstream refused the request: api_key="sk_live_rt32QUOTEDsecret0001" is revoked',
			'sk_live_rt32QUOTEDsecret0001',
		],
		[
			'authorization: Bot … (unlisted scheme)',
			'Upstream refused: authorization: Bot MTIzrt32DISCORDsecret0002.GhIjKl',
			'MTIzrt32DISCORDsecret0002',
		],
		[
			'"x-api-key":["…"] (JSON array value)',
			'Upstream refused: {"x-api-key":["sk_live_rt32ARRAYsecret0003"]}',
			'sk_live_rt32ARRAYsecret0003',
		],
		[
			'control: Bearer … (listed scheme)',
			'Upstream refused: Authorization: Bearer sk_live_rt32BEARERsecret0004',
			'sk_live_rt32BEARERsecret0004',
		],
	])('trigger: step fails quoting %s → the stored last error does not hold the secret', async (_label, detail, secret) => {
		const id = `wf-rt32-leak-${secret.slice(-4)}`;
		useTrigger(id);
		lookupDetail = detail;
		const step: Step = {
			nodes: [
				httpCall('Lookup', 'lookup'),
				node('Fail', 'stopAndError', 1, { errorType: 'errorMessage', errorMessage: '={{ $json.detail }}' }),
			],
			connections: { Lookup: { main: [link('Fail')] } },
			heads: ['Lookup'],
		};
		const { answers } = await provide({ id: `evt_${secret.slice(-4)}` }, step, 1);
		const rows = keyRows();
		if (process.env.RT32_SHOW) console.log(rows.map((row) => row.last_error));
		expect({
			answers,
			status: rows.map((row) => row.status),
			failureMentionsDetail: rows.every((row) => (row.last_error ?? '').includes('Upstream refused')),
			leaked: rows.some((row) => (row.last_error ?? '').includes(secret)),
		}).toEqual({ answers: [500], status: ['failed'], failureMentionsDetail: true, leaked: false });
	});
});

/* (4) Unit level: redaction of failure messages (lib/evidence/redactedText.ts) ------------------------------------- */

describe('red team 32 (unit): redactedErrorText on credential forms', () => {
	// Each row: a message quoting a credential by a name that says so (or after its scheme); the secret must not survive:
	// quoted after `=`, after any Authorization scheme, a JSON or inspect array value, a JSON number, `name = value`.
	it.each([
		['Bearer token', 'call failed with Bearer eyJhbGciOiJIUzI1NiJ9.cnQzMnBheWxvYWQ.c2lnbmF0dXJl', 'cnQzMnBheWxvYWQ'],
		['Authorization= in a query string', 'GET https://api.example.com/v1?Authorization=Bearer%20rt32QUERYsecret', 'rt32QUERYsecret'],
		['access_token in a query string', 'GET https://api.example.com/v1?access_token=rt32ACCESSsecret&x=1', 'rt32ACCESSsecret'],
		["JSON with single quotes {'api_key': '…'}", "{'api_key': 'sk_live_rt32SINGLEquote'}", 'sk_live_rt32SINGLEquote'],
		['Basic base64', 'Authorization: Basic cnQzMnVzZXI6cnQzMnBhc3N3b3Jk', 'cnQzMnVzZXI6cnQzMnBhc3N3b3Jk'],
		['AWS secret named', 'AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/rt32EXAMPLEKEY', 'rt32EXAMPLEKEY'],
		[
			'AWS SigV4 Signature',
			'Authorization: AWS4-HMAC-SHA256 Credential=AKIA/x, SignedHeaders=host, Signature=fe5f80f77d5fa3beca038a248ff027d0',
			'fe5f80f77d5fa3beca038a248ff027d0',
		],
		[
			'PEM private key named private_key',
			'private_key: "-----BEGIN PRIVATE KEY-----\\nMIIErt32PEMsecret\\n-----END PRIVATE KEY-----"',
			'MIIErt32PEMsecret',
		],
		['name="value" (quoted after =)', 'Invalid request: token="ghp_rt32QUOTEDtoken"', 'ghp_rt32QUOTEDtoken'],
		["name='value' (single-quoted after =)", "password='rt32SINGLEpassword'", 'rt32SINGLEpassword'],
		[
			'OAuth 1.0 header',
			'Authorization: OAuth oauth_token="370773112-rt32OAUTHtoken", oauth_signature="rt32OAUTHsig%3D"',
			'rt32OAUTHtoken',
		],
		['Authorization: Bot … (unlisted scheme)', 'Authorization: Bot MTIzrt32DISCORDtoken.GhIjKl', 'MTIzrt32DISCORDtoken'],
		['Authorization: ApiKey … (unlisted scheme)', 'authorization: ApiKey rt32ELASTICapikey==', 'rt32ELASTICapikey'],
		['Authorization: SSWS … (Okta)', 'Authorization: SSWS 00rt32OKTAtoken-x', '00rt32OKTAtoken'],
		['JSON member with an array value', '{"headers":{"x-api-key":["sk_live_rt32ARRAYvalue"]}}', 'sk_live_rt32ARRAYvalue'],
		['Node inspect of an array value', "{ 'x-api-key': [ 'sk_live_rt32INSPECTarray' ] }", 'sk_live_rt32INSPECTarray'],
		['JSON member with a number value', '{"pin_secret":987654321012345}', '987654321012345'],
		['name = value (spaces around =)', 'client_secret = rt32SPACEDsecret', 'rt32SPACEDsecret'],
	])('%s', (_label, message, secret) => {
		expect(redactedErrorText(message)).not.toContain(secret);
	});

	// Documented not recognised (docs/dashboard.md): a credential's value quoted without a name that says so. Shown, not asserted.
	it('observation: a bare PEM key or a bare AWS key pair (no name that says so) is left as it is', () => {
		const pem = '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEArt32\n-----END RSA PRIVATE KEY-----';
		expect(redactedErrorText(pem)).toBe(pem);
	});
});

/* (5) Unit level: the dashboard's payload preview, a text member holding a form or JSON (docs/dashboard.md) --------- */

describe('red team 32 (unit): payloadPreview of a text that holds a credential', () => {
	it.each([
		['a text/plain body holding JSON with an array value', { raw: '{"api_key":["sk_live_rt32PREVIEWarray"]}' }, 'sk_live_rt32PREVIEWarray'],
		['a text holding a form with a quoted value', { note: 'retry with secret="rt32PREVIEWquoted"' }, 'rt32PREVIEWquoted'],
		['a text holding a header dump with an unlisted scheme', { note: 'authorization: Bot rt32PREVIEWbot.x' }, 'rt32PREVIEWbot'],
		['control: a member named like a credential', { nested: { api_key: 'rt32PREVIEWnamed' } }, 'rt32PREVIEWnamed'],
		['control: JSON text with a string value', { raw: '{"api_key":"rt32PREVIEWstring"}' }, 'rt32PREVIEWstring'],
	])('%s', (_label, payload, secret) => {
		expect(payloadPreview(payload)).not.toContain(secret);
	});
});

/* (6) Unit level: the stored answer replayed to copies, and the failure text, against the request's credentials ---- */

describe('red team 32 (unit): storedAnswer / withoutRequestSecrets', () => {
	const request = { headers: { 'x-api-key': 'rt32-header-api-key-value', authorization: 'Bearer rt32BearerTokenValue+/=' } };

	it('a credential copied into a field: left out; in an array: null', () => {
		const kept = JSON.stringify(
			storedAnswer({ copy: 'rt32-header-api-key-value', list: ['x', 'Bearer rt32BearerTokenValue+/='] }, request),
		);
		expect(kept).not.toContain('rt32-header-api-key-value');
		expect(kept).not.toContain('rt32BearerTokenValue');
	});

	// A node that groups or indexes by a field (a Code node, Aggregate, Convert to object) can make the credential a
	// member's name: names are checked as values are.
	it('a credential as a member name of the answer is not stored', () => {
		const kept = JSON.stringify(storedAnswer({ byKey: { 'rt32-header-api-key-value': { calls: 1 } } }, request));
		expect(kept).not.toContain('rt32-header-api-key-value');
	});

	// A step that put the token into a URL quotes it percent-encoded (`+` `/` `=` escaped) in its failure message.
	it('a failure quoting the request token percent-encoded (in a URL) is redacted', () => {
		const token = 'rt32BearerTokenValue+/=';
		const text = withoutRequestSecrets(`GET https://api.example.com/x?t=${encodeURIComponent(token)} failed`, request);
		expect(redactedErrorText(text)).not.toContain('rt32BearerTokenValue');
	});
});

/* (7) Unit level: signatures under header adversity (lib/signature/verify.ts) ---------------------------------------- */

describe('red team 32 (unit): Stripe signature header adversity', () => {
	const secret = 'whsec_rt32unit';
	const body = Buffer.from('{"id":"evt_sig"}');
	const now = 1_700_000_000;
	const sign = (t: number | string, bytes = body) =>
		createHmac('sha256', secret)
			.update(Buffer.concat([Buffer.from(`${t}.`), bytes]))
			.digest('hex');
	const check = (headers: Record<string, unknown>, bytes = body) =>
		verifySignature({ scheme: 'stripe', headers, rawBody: bytes, secrets: [secret], nowSeconds: now, toleranceSeconds: 300 });
	const genuine = `t=${now},v1=${sign(now)}`;

	it.each([
		['genuine', { 'stripe-signature': genuine }, true],
		['two headers (array): genuine + forged', { 'stripe-signature': [genuine, `t=${now},v1=${'0'.repeat(64)}`] }, false],
		['two headers joined ", ": forged + genuine', { 'stripe-signature': `t=${now},v1=${'0'.repeat(64)}, ${genuine}` }, false],
		['two spellings of the name, one forged', { 'Stripe-Signature': genuine, 'stripe-signature': `t=${now},v1=${'1'.repeat(64)}` }, false],
		['several v1, one genuine', { 'stripe-signature': `t=${now},v1=${'0'.repeat(64)},v1=${sign(now)}` }, true],
		['two t= (one signed)', { 'stripe-signature': `t=${now + 1000},t=${now},v1=${sign(now)}` }, false],
		['t far in the future, genuinely signed', { 'stripe-signature': `t=${now + 10 ** 9},v1=${sign(now + 10 ** 9)}` }, false],
		['t far in the past, genuinely signed', { 'stripe-signature': `t=1,v1=${sign(1)}` }, false],
		['t with 30 digits', { 'stripe-signature': `t=${'9'.repeat(30)},v1=${sign('9'.repeat(30))}` }, false],
		['t negative', { 'stripe-signature': `t=-5,v1=${sign(-5)}` }, false],
		['t with a leading +', { 'stripe-signature': `t=+${now},v1=${sign(`+${now}`)}` }, false],
		['v1 uppercase hex of the genuine digest', { 'stripe-signature': `t=${now},v1=${sign(now).toUpperCase()}` }, true],
		['v1 truncated', { 'stripe-signature': `t=${now},v1=${sign(now).slice(0, 32)}` }, false],
		['multipart Content-Type', { 'stripe-signature': genuine, 'content-type': 'multipart/form-data; boundary=x' }, false],
		[
			'multipart Content-Type in an array beside JSON',
			{ 'stripe-signature': genuine, 'content-type': ['application/json', 'multipart/form-data; boundary=x'] },
			false,
		],
	])('%s → valid %s', (_label, headers, valid) => {
		expect(check(headers as Record<string, unknown>).valid).toBe(valid);
	});

	it('10 MB body, genuine → valid; one byte changed → signature_mismatch; empty body genuine → valid', () => {
		const big = Buffer.alloc(10 * 1024 * 1024, 0x61);
		const bigHeader = { 'stripe-signature': `t=${now},v1=${sign(now, big)}` };
		const changed = Buffer.from(big);
		changed[changed.length - 1] = 0x62;
		const empty = Buffer.alloc(0);
		expect([
			check(bigHeader, big).valid,
			check(bigHeader, changed),
			check({ 'stripe-signature': `t=${now},v1=${sign(now, empty)}` }, empty).valid,
		]).toEqual([true, { valid: false, scheme: 'stripe', reason: 'signature_mismatch' }, true]);
	});
});

/* (8) Unit level: keys from headers and bodies (lib/keys/deriveKey.ts) ---------------------------------------------- */

describe('red team 32 (unit): keys under header and body adversity', () => {
	const auto: KeyConfig = { strategy: 'auto', onMissingKey: 'bodyHash' };
	const generic: KeyConfig = { strategy: 'preset', preset: 'generic', onMissingKey: 'error' };
	const key = (raw: string, headers: Record<string, unknown>, config: KeyConfig = auto) => {
		const rawBody = Buffer.from(raw);
		try {
			return deriveKey({ body: parseBody(rawBody, headers as never), headers, rawBody }, config).key;
		} catch (error) {
			return `refused: ${(error as Error).constructor.name}`;
		}
	};

	it.each([
		['Idempotency-Key twice, different values (array)', { 'idempotency-key': ['k1', 'k2'] }, 'refused: UnusableKeyError'],
		['Idempotency-Key twice, joined ", "', { 'idempotency-key': 'k1, k2' }, 'refused: UnusableKeyError'],
		['Idempotency-Key and IDEMPOTENCY-KEY, different', { 'idempotency-key': 'k1', 'IDEMPOTENCY-KEY': 'k2' }, 'refused: UnusableKeyError'],
		['Idempotency-Key with a NUL', { 'idempotency-key': 'k\u0000' }, 'refused: UnusableKeyError'],
		['Idempotency-Key once: the header, not the body id', { 'idempotency-key': 'k1' }, 'idempotency-key:k1'],
	])('Generic preset: %s', (_label, headers, expected) => {
		expect(key('{"id":"evt_body"}', { 'content-type': 'application/json', ...headers }, generic)).toBe(expected);
	});

	// Two different events must get two keys; a copy (same bytes) one.
	it.each([
		['ids 12345678901234567890 / 12345678901234567891', '{"id":12345678901234567890}', '{"id":12345678901234567891}'],
		['ids "a\\ud800" / "a\\udbff" (lone surrogates)', '{"id":"a\\ud800"}', '{"id":"a\\udbff"}'],
		['ids 1.5 / 1.50000000000000001 (same double)', '{"id":1.5}', '{"id":1.50000000000000001}'],
		['ids 1e400 / 2e400 (both Infinity)', '{"id":1e400}', '{"id":2e400}'],
		['form ids a+b / a%2Bb', 'id=a+b', 'id=a%2Bb'],
		['nested duplicate objects, last wins', '{"id":"n1","id":{"x":1}}', '{"id":"n1"}'],
	])('two events, %s: never one key', (_label, first, second) => {
		const contentType = first.startsWith('{') ? 'application/json' : 'application/x-www-form-urlencoded';
		const one = key(first, { 'content-type': contentType });
		const two = key(second, { 'content-type': contentType });
		expect(one.startsWith('refused') || two.startsWith('refused') || one !== two).toBe(true);
	});
});
