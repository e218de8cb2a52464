// A header sent twice, through a real n8n Webhook node: what n8n hands the next node (Node's HTTP
// parser joins most repeats with ", ", keeps only the first of some, joins cookies with "; "), and
// what the package's one header rule (lib/headers.ts) makes of it in Webhook Signature Verify (a
// forged value next to the genuine one is never Valid, the same value twice is one) and Idempotency
// Reserve (a key header with two values fails the item and reserves nothing; a correlation header
// with two values gives the execution id). The requests are raw http.request calls with header
// arrays, so each repeated header really is sent as two header lines.
// e2e-tags: single compatibility
import http from 'node:http';
import { createHmac, randomUUID } from 'node:crypto';
import * as stack from '../support/stack/n8nStack';
import { harness, outputItem, eventId } from '../support/e2e/harness';
import { freshWebhookPath, publishWorkflow, webhookNode } from '../support/e2e/restWorkflows';

const PKG = stack.PACKAGE_NAME;
const RESERVE = 'Idempotency Reserve';
const VERIFY = 'Webhook Signature Verify';
const SCOPE = 'e2e-headers';

/** One of the package's nodes, as the editor saves it, with its credential (one of the stack's). */
function packageNode(
	name: string,
	type: string,
	x: number,
	parameters: Record<string, unknown>,
	credential: keyof typeof stack.TEMPLATE_CREDENTIALS,
) {
	const { id, name: credentialName, type: credentialType } = stack.TEMPLATE_CREDENTIALS[credential];
	return {
		id: randomUUID(),
		name,
		type: `${PKG}.${type}`,
		typeVersion: 1,
		position: [x, 0],
		parameters,
		credentials: { [credentialType]: { id, name: credentialName } },
	};
}

/** Webhook (Raw Body) → Verify (generic HMAC-SHA256 in X-Signature) → Valid → Reserve (Key Source Header X-Delivery-Id, correlation X-Request-Id). */
function workflow(webhookPath: string) {
	const verify = {
		scheme: 'generic',
		algorithm: 'sha256',
		encoding: 'hex',
		signatureHeader: 'X-Signature',
		signaturePrefix: 'sha256=',
		signedContent: 'body',
		onInvalid: 'route',
	};
	const reserve = {
		keySource: 'header',
		headerName: 'X-Delivery-Id',
		options: { scope: SCOPE, correlationId: 'header', correlationHeader: 'X-Request-Id' },
	};
	return {
		name: 'E2E repeated headers',
		nodes: [
			webhookNode(webhookPath, { options: { rawBody: true } }),
			packageNode(VERIFY, 'webhookSignatureVerify', 220, verify, 'signature'),
			packageNode(RESERVE, 'idempotencyReserve', 440, reserve, 'idempotency'),
		],
		connections: {
			Webhook: { main: [[{ node: VERIFY, type: 'main', index: 0 }]] },
			[VERIFY]: { main: [[{ node: RESERVE, type: 'main', index: 0 }], []] },
		},
		settings: { executionOrder: 'v1' },
		pinData: {},
	};
}

/** Request headers; an array value is sent as that many header lines. */
type RequestHeaders = Record<string, string | string[]>;

/** POSTs `body` with `headers`; an array value is sent as that many header lines. */
function post(url: string, body: string, headers: RequestHeaders): Promise<number | undefined> {
	return new Promise((resolve, reject) => {
		const request = http.request(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers } }, (response) => {
			response.resume();
			response.on('end', () => resolve(response.statusCode));
		});
		request.on('error', reject);
		request.end(body);
	});
}

describe('a header sent twice, through a real n8n Webhook', () => {
	const h = harness();
	let url: string;
	let workflowId: string;
	const sign = (body: string) => `sha256=${createHmac('sha256', h.secret).update(body).digest('hex')}`;
	const FORGED = `sha256=${'0'.repeat(64)}`;

	/** Sends one delivery and returns its execution, once n8n has stored it. */
	async function deliver(body: string, headers: RequestHeaders) {
		const mark = await h.executionMark();
		expect(await post(url, body, headers)).toBe(200);
		const [run] = await h.waitForExecutions(workflowId, mark, 1);
		return run;
	}
	const stored = async (key: string) => (await h.appQuery('SELECT key, correlation_id FROM processed_events WHERE key = $1', [key])).rows;

	beforeAll(async () => {
		const webhookPath = freshWebhookPath('headers');
		workflowId = await publishWorkflow(h, workflow(webhookPath), webhookPath);
		url = `${h.state.baseUrl}/webhook/${webhookPath}`;
	});

	test('n8n hands over repeats joined with ", " (cookies with "; ", only the first User-Agent); the same signature twice is Valid; a correlation header with two values gives the execution id', async () => {
		const body = JSON.stringify({ id: eventId('hdr_same') });
		const delivery = eventId('delivery');
		const run = await deliver(body, {
			'x-signature': [sign(body), sign(body)],
			'x-delivery-id': delivery,
			'x-request-id': ['req-1', 'req-2'],
			cookie: ['a=1', 'b=2'],
			'user-agent': ['agent-1', 'agent-2'],
		});
		const headers = outputItem(run, 'Webhook').headers;
		expect({
			signature: headers['x-signature'],
			requestId: headers['x-request-id'],
			cookie: headers.cookie,
			userAgent: headers['user-agent'],
		}).toEqual({ signature: `${sign(body)}, ${sign(body)}`, requestId: 'req-1, req-2', cookie: 'a=1; b=2', userAgent: 'agent-1' });

		expect(run.status).toBe('success');
		expect(outputItem(run, VERIFY).signature).toEqual({ valid: true, scheme: 'generic' });
		const key = `${SCOPE}:x-delivery-id:${delivery}`;
		expect(outputItem(run, RESERVE).idempotency).toMatchObject({ key, outcome: 'new' });
		expect(await stored(key)).toEqual([{ key, correlation_id: String(run.id) }]);
	});

	test('a forged signature next to the genuine one, sent as two header lines: Invalid (malformed_header), nothing reserved', async () => {
		const body = JSON.stringify({ id: eventId('hdr_forged') });
		const delivery = eventId('delivery');
		const run = await deliver(body, { 'x-signature': [FORGED, sign(body)], 'x-delivery-id': delivery });
		expect(outputItem(run, 'Webhook').headers['x-signature']).toBe(`${FORGED}, ${sign(body)}`);
		expect(outputItem(run, VERIFY, 1).signature).toEqual({ valid: false, scheme: 'generic', reason: 'malformed_header' });
		expect(run.nodesRun).not.toContain(RESERVE);
		expect(await stored(`${SCOPE}:x-delivery-id:${delivery}`)).toEqual([]);
	});

	test.each([
		[
			'two different values',
			(id: string) => [`${id}-a`, `${id}-b`],
			/^The header "x-delivery-id" was sent more than once with different values/,
		],
		['the same value twice', (id: string) => [id, id], /^The header "x-delivery-id" arrived as several values joined with ", "/],
	])('a key header sent twice (%s): Reserve fails the item with a clear error, nothing is reserved', async (_case, values, message) => {
		const body = JSON.stringify({ id: eventId('hdr_key') });
		const delivery = eventId('delivery');
		const run = await deliver(body, { 'x-signature': sign(body), 'x-delivery-id': values(delivery) });
		expect(outputItem(run, 'Webhook').headers['x-delivery-id']).toBe(values(delivery).join(', '));
		expect(outputItem(run, VERIFY).signature).toEqual({ valid: true, scheme: 'generic' });
		expect(run.status).toBe('error');
		const { error } = run.runData[RESERVE][0];
		if (!error) throw new Error(`${RESERVE} stored no error for its run`);
		expect(error.message).toMatch(message);
		expect(error.message).toMatch(/Key Source → Custom Value\. The item was not reserved\.$/);
		const { rows } = await h.appQuery('SELECT key FROM processed_events WHERE key LIKE $1', [`${SCOPE}:x-delivery-id:${delivery}%`]);
		expect(rows).toEqual([]);
	});
});
