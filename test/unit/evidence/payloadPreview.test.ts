import { PAYLOAD_PREVIEW_CHARS, payloadPreview, PREVIEW_CUT, storedKeyPreview } from '../../../lib/evidence/payloadPreview';
import { REDACTED, redactedErrorText } from '../../../lib/evidence/redactedText';
import { keptInboxItem } from '../../../lib/webhook/inbox';

describe('payloadPreview: a short text of a payload, never a credential', () => {
	it('shows the payload as JSON; members named like a credential, at any depth, show [redacted]', () => {
		const preview = payloadPreview({
			id: 'evt_1',
			type: 'invoice.paid',
			apiKey: 'sk_live_1',
			data: { customer: { email: 'a@example.com', password: 'hunter2', access_token: 'tok_9' } },
			list: [{ client_secret: 'pi_secret_x', amount: 5 }],
			idempotency_token: 'same-on-every-retry',
		});
		expect(JSON.parse(preview!)).toEqual({
			id: 'evt_1',
			type: 'invoice.paid',
			apiKey: REDACTED,
			data: { customer: { email: 'a@example.com', password: REDACTED, access_token: REDACTED } },
			list: [{ client_secret: REDACTED, amount: 5 }],
			idempotency_token: 'same-on-every-retry',
		});
		expect(preview).not.toMatch(/sk_live_1|hunter2|tok_9|pi_secret_x/);
	});

	it('leaves out headers and the reservation with its owner token, wherever they are copied', () => {
		const preview = payloadPreview({
			id: 'evt_2',
			headers: { 'x-trace': 't-1', authorization: 'Bearer abc' },
			copy: { Raw_Headers: ['Cookie', 'c=1'], idempotency: { ownerToken: '0c3e…' } },
			ownerToken: 'uuid-token',
		});
		expect(JSON.parse(preview!)).toEqual({ id: 'evt_2', copy: {} });
	});

	it(`is cut at ${PAYLOAD_PREVIEW_CHARS} characters, ending with ${PREVIEW_CUT}`, () => {
		const preview = payloadPreview({ text: 'x'.repeat(5000) })!;
		expect(preview).toHaveLength(PAYLOAD_PREVIEW_CHARS);
		expect(preview.endsWith(PREVIEW_CUT)).toBe(true);
		expect(payloadPreview({ a: 1 }, 5)).toBe('{"a"…');
	});

	it('null when there is nothing to show: undefined, or a value with no JSON form', () => {
		const circular: Record<string, unknown> = {};
		circular.self = circular;
		expect(payloadPreview(undefined)).toBeNull();
		expect(payloadPreview(circular)).toBeNull();
		expect(payloadPreview(null)).toBe('null');
		expect(payloadPreview(10n ** 20n)).toBe('"100000000000000000000"');
	});
});

describe('payloadPreview: a text that holds JSON or a form of its own', () => {
	it("judges the credentials inside it by name: a JSON body posted as text/plain, Slack's payload=, a query in a URL", () => {
		expect(payloadPreview('{"id":"evt_1","password":"pw_plain"}')).toBe(JSON.stringify(`{"id":"evt_1","password":"${REDACTED}"}`));
		const slack = JSON.parse(payloadPreview({ payload: '{"type":"block_actions","token":"xoxb-slack-1"}' })!) as { payload: string };
		expect(slack.payload).toBe(`{"type":"block_actions","token":"${REDACTED}"}`);
		expect(payloadPreview({ link: 'https://api.example.com/v1?api_key=k_live_9&page=2' })).toBe(
			JSON.stringify({ link: `https://api.example.com/v1?api_key=${REDACTED}&page=2` }),
		);
		expect(payloadPreview({ note: 'an ordinary text, kept as it is' })).toBe('{"note":"an ordinary text, kept as it is"}');
	});
});

describe("storedKeyPreview: the stored payload, else the body of the trigger's kept item", () => {
	it('previews the stored payload when one is stored', () => {
		expect(storedKeyPreview({ payloadStored: true, payload: { id: 'p', token: 't' }, inboxItem: null })).toBe(
			`{"id":"p","token":"${REDACTED}"}`,
		);
	});

	it("previews only the kept item's body: none of its headers or query", () => {
		const kept = keptInboxItem(
			{ body: { id: 'evt_3', secret: 's' }, headers: { 'x-trace': 'trace-1' }, query: { page: '2' } },
			Buffer.from('{}'),
			'application/json',
		)!;
		const preview = storedKeyPreview({ payloadStored: false, payload: null, inboxItem: kept })!;
		expect(JSON.parse(preview)).toEqual({ id: 'evt_3', secret: REDACTED });
		expect(preview).not.toMatch(/trace-1|page/);
	});

	it('null without a payload or a kept item, or with a kept item the package did not write', () => {
		expect(storedKeyPreview({ payloadStored: false, payload: null, inboxItem: null })).toBeNull();
		expect(storedKeyPreview({ payloadStored: false, payload: null })).toBeNull();
		expect(storedKeyPreview({ payloadStored: false, payload: null, inboxItem: 'not json' })).toBeNull();
	});
});

describe('redactedErrorText: an error message without the credentials it may quote', () => {
	it('redacts a credential after its scheme and query parameters named like a credential; leaves the rest', () => {
		expect(
			redactedErrorText(
				'Request to https://api.example.com/v1/x?api_key=sk_1&page=2&access_token=tok failed (401): Authorization: Bearer abc.def-ghi',
			),
		).toBe(
			`Request to https://api.example.com/v1/x?api_key=${REDACTED}&page=2&access_token=${REDACTED} failed (401): Authorization: Bearer ${REDACTED}`,
		);
		expect(redactedErrorText('The service was not able to process your request (500)')).toBe(
			'The service was not able to process your request (500)',
		);
		expect(redactedErrorText(null)).toBeNull();
	});

	it('a `name: value` pair, a URL user information and a JSON member inside a JSON string; the names around them kept', () => {
		expect(redactedErrorText('sent headers: x-api-key: sk_live_1, accept: */*')).toBe(`sent headers: x-api-key: ${REDACTED}, accept: */*`);
		expect(redactedErrorText("config { apiKey: 'sk_live_2', retries: 2 }")).toBe(`config { apiKey: ${REDACTED}, retries: 2 }`);
		expect(redactedErrorText("headers { 'x-api-key': 'sk_live_6', accept: '*/*' }")).toBe(
			`headers { 'x-api-key': ${REDACTED}, accept: '*/*' }`,
		);
		expect(redactedErrorText('password: "hunter 22" status: 500')).toBe(`password: ${REDACTED} status: 500`);
		expect(redactedErrorText('POST https://svc:pw_3@api.example.com/x and https://ghp_4@github.com/o/r.git')).toBe(
			`POST https://${REDACTED}@api.example.com/x and https://${REDACTED}@github.com/o/r.git`,
		);
		expect(redactedErrorText('400 - "{\\"error\\":\\"bad\\",\\"api_key\\":\\"sk_5\\"}"')).toBe(
			`400 - "{\\"error\\":\\"bad\\",\\"api_key\\":\\"${REDACTED}\\"}"`,
		);
		expect(redactedErrorText('at https://api.example.com:8443/v1 (status: 502, time: 12:30:01)')).toBe(
			'at https://api.example.com:8443/v1 (status: 502, time: 12:30:01)',
		);
	});

	it('a JSON member named like a credential, as a message quoting an item carries it; other members kept', () => {
		const quoted = JSON.stringify({
			headers: { authorization: 'c3RyaXBlOnNlY3JldA==', 'x-api-key': 'k-123', host: 'example.org' },
			body: { id: 'evt_1' },
		});
		expect(redactedErrorText(`Unsupported event: ${quoted}`)).toBe(
			`Unsupported event: {"headers":{"authorization":"${REDACTED}","x-api-key":"${REDACTED}","host":"example.org"},"body":{"id":"evt_1"}}`,
		);
		expect(redactedErrorText('{"authorization" : "Basic c3RyaXBl=="}')).toBe(`{"authorization" : "${REDACTED}"}`);
		expect(redactedErrorText('{"note":"say \\"hi\\"","token":"a\\"b"}')).toBe(`{"note":"say \\"hi\\"","token":"${REDACTED}"}`);
	});
});
