import { createHmac } from 'node:crypto';

import {
	NodeOperationError,
	type ICredentialsDecrypted,
	type ICredentialTestFunctions,
	type IDataObject,
	type IExecuteFunctions,
	type INode,
	type INodeExecutionData,
} from 'n8n-workflow';

import { WebhookSignatureVerify } from '../../../nodes/WebhookSignatureVerify/WebhookSignatureVerify.node';
import { WebhookSignatureApi } from '../../../credentials/WebhookSignatureApi.credentials';
import { LEGACY_LIST_MESSAGE } from '../../../lib/signature';
import { BODY, NOW, TAMPERED_BODY } from './fixtures';

const SECRET = 'whsec_stripe_current';
const PREVIOUS_SECRET = 'whsec_stripe_previous';
// printf '%s' '1700000000.{"id":"evt_1","name":"Zoë"}' | openssl dgst -sha256 -hmac 'whsec_stripe_current'
const SIG_NOW = '8a9d24dedd0d68aaff9e4bb65b447709950652ad85357c9c62291358406e7029';
// printf '%s' '1700000000.{"id":"evt_1","name":"Zoë"}' | openssl dgst -sha256 -hmac 'whsec_stripe_previous'
const SIG_PREVIOUS = 'f71fa71c073b36c222b8af1e95b5c150ee383ec55d6d0d0d0fb80c7c0d1f43ef';

const GITHUB_DOCS_SECRET = "It's a Secret to Everybody";
const GITHUB_DOCS_PAYLOAD = 'Hello, World!';
const GITHUB_DOCS_SIGNATURE = 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17';

const NODE: INode = {
	id: 'verify-1',
	name: 'Webhook Signature Verify',
	type: 'n8n-nodes-idempotency.webhookSignatureVerify',
	typeVersion: 1,
	position: [0, 0],
	parameters: {},
};

/** An item as the Webhook node emits it with "Raw Body" on. */
function webhookItem(signature: string | undefined, body = BODY): INodeExecutionData {
	const headers: IDataObject = { 'content-type': 'application/json', 'x-request-count': 1 };
	if (signature !== undefined) headers['stripe-signature'] = signature;
	return {
		json: { headers, params: {}, query: {}, body: JSON.parse(body) as IDataObject },
		binary: { data: { data: Buffer.from(body, 'utf8').toString('base64'), mimeType: 'application/json' } },
	};
}

interface FakeOptions {
	items: INodeExecutionData[];
	parameters?: IDataObject;
	/** The credential's fields as n8n hands them over (declared fields, defaults filled in). */
	credential?: IDataObject;
	continueOnFail?: boolean;
	/** n8n cannot read the credential (e.g. it does not decrypt): getCredentials throws. */
	credentialUnreadable?: boolean;
}

/** The credential as n8n returns it: every declared field present, '' when not filled in. */
const credentialData = (fields: IDataObject): IDataObject => ({ secret: '', previousSecret: '', secrets: '', ...fields });

/** The part of IExecuteFunctions the node uses; binary data in memory, as n8n's default mode. */
function fakeContext({
	items,
	parameters = {},
	credential = { secret: SECRET },
	continueOnFail = false,
	credentialUnreadable = false,
}: FakeOptions) {
	const all: IDataObject = { scheme: 'stripe', onInvalid: 'route', toleranceSeconds: 300, options: {}, ...parameters };
	const getBinaryDataBuffer = jest.fn(async (itemIndex: number, property: string) => {
		const binary = items[itemIndex]?.binary?.[property];
		if (binary === undefined) throw new Error('no binary data');
		return Buffer.from(binary.data, 'base64');
	});
	const context = {
		getInputData: () => items,
		getNodeParameter: (name: string, _itemIndex: number, fallback?: unknown) => {
			if (name in all) return all[name];
			if (fallback !== undefined) return fallback;
			throw new Error(`Could not get parameter "${name}"`);
		},
		getCredentials: async (type: string) => {
			expect(type).toBe('webhookSignatureApi');
			if (credentialUnreadable) throw new Error('Credentials could not be decrypted');
			return credentialData(credential);
		},
		getNode: () => NODE,
		continueOnFail: () => continueOnFail,
		helpers: { getBinaryDataBuffer },
	};
	return { context: context as unknown as IExecuteFunctions, getBinaryDataBuffer };
}

async function run(options: FakeOptions): Promise<INodeExecutionData[][]> {
	return await new WebhookSignatureVerify().execute.call(fakeContext(options).context);
}

async function runError(options: FakeOptions): Promise<NodeOperationError> {
	try {
		await run(options);
	} catch (error) {
		expect(error).toBeInstanceOf(NodeOperationError);
		return error as NodeOperationError;
	}
	throw new Error('expected the node to throw');
}

beforeEach(() => {
	jest.spyOn(Date, 'now').mockReturnValue(NOW * 1000);
});

afterEach(() => {
	jest.restoreAllMocks();
});

describe('WebhookSignatureVerify node', () => {
	describe('description', () => {
		const { description, methods } = new WebhookSignatureVerify();

		it('declares the contract other workflows rely on', () => {
			expect(description.name).toBe('webhookSignatureVerify');
			expect(description.outputNames).toEqual(['Valid', 'Invalid']);
			expect(description.outputs).toEqual(['main', 'main']);
			expect(description.properties.map((property) => property.name)).toEqual([
				'notice',
				'scheme',
				'algorithm',
				'encoding',
				'signatureHeader',
				'signaturePrefix',
				'signedContent',
				'timestampHeader',
				'toleranceSeconds',
				'onInvalid',
				'options',
			]);
		});

		it('keeps one exact secret per credential field, and the version 0.1 field redacted and out of sight', () => {
			const fields = new WebhookSignatureApi().properties;
			expect(fields.map((field) => [field.name, field.type, field.typeOptions?.password])).toEqual([
				['secret', 'string', true],
				['previousSecret', 'string', true],
				// Declared so that n8n still hands it to the node, and blanks it like a password when
				// it sends credential data to the editor (undeclared fields are sent as they are).
				['secrets', 'hidden', true],
			]);
		});

		it('tests its credential with a method it defines', () => {
			const [credential] = description.credentials ?? [];
			expect(credential).toMatchObject({ name: new WebhookSignatureApi().name, required: true });
			expect(Object.keys(methods.credentialTest)).toEqual([credential?.testedBy]);
		});
	});

	describe('execute', () => {
		it('routes items to Valid and Invalid, keeping json and binary and linking each to its input', async () => {
			const items = [
				webhookItem(`t=${NOW},v1=${SIG_NOW}`),
				webhookItem(`t=${NOW},v1=${SIG_NOW}`, TAMPERED_BODY),
				webhookItem(undefined),
				webhookItem(`t=${NOW},v1=${SIG_PREVIOUS}`),
			];

			const [valid, invalid] = await run({ items, credential: { secret: SECRET, previousSecret: PREVIOUS_SECRET } });

			expect(valid).toEqual([
				{
					json: { ...items[0]?.json, signature: { valid: true, scheme: 'stripe', timestamp: NOW } },
					binary: items[0]?.binary,
					pairedItem: { item: 0 },
				},
				{
					json: { ...items[3]?.json, signature: { valid: true, scheme: 'stripe', timestamp: NOW } },
					binary: items[3]?.binary,
					pairedItem: { item: 3 },
				},
			]);
			expect(invalid).toEqual([
				{
					json: { ...items[1]?.json, signature: { valid: false, scheme: 'stripe', reason: 'signature_mismatch' } },
					binary: items[1]?.binary,
					pairedItem: { item: 1 },
				},
				{
					json: { ...items[2]?.json, signature: { valid: false, scheme: 'stripe', reason: 'missing_header' } },
					binary: items[2]?.binary,
					pairedItem: { item: 2 },
				},
			]);
		});

		it('reads the raw body through getBinaryDataBuffer, which serves memory and filesystem modes alike', async () => {
			const items = [webhookItem(`t=${NOW},v1=${SIG_NOW}`)];
			const { context, getBinaryDataBuffer } = fakeContext({ items });

			await new WebhookSignatureVerify().execute.call(context);

			expect(getBinaryDataBuffer).toHaveBeenCalledWith(0, 'data');
		});

		it('reads the raw body and headers from the fields named in the options', async () => {
			const item = webhookItem(`t=${NOW},v1=${SIG_NOW}`);
			const moved: INodeExecutionData = {
				json: { request: { headers: item.json.headers } },
				binary: { rawBody: item.binary?.data as NonNullable<INodeExecutionData['binary']>[string] },
			};

			const [valid] = await run({
				items: [moved],
				parameters: { options: { headersField: 'request', rawBodyProperty: 'rawBody' } },
			});

			expect(valid).toHaveLength(0);
			const [validAfterFix] = await run({
				items: [{ ...moved, json: { headers: item.json.headers } }],
				parameters: { options: { rawBodyProperty: 'rawBody' } },
			});
			expect(validAfterFix).toHaveLength(1);
		});

		it('uses the tolerance parameter', async () => {
			const items = [webhookItem(`t=${NOW},v1=${SIG_NOW}`)];
			jest.spyOn(Date, 'now').mockReturnValue((NOW + 301) * 1000);

			const [, invalid] = await run({ items });
			const [valid] = await run({ items, parameters: { toleranceSeconds: 600 } });

			expect(invalid?.[0]?.json.signature).toEqual({ valid: false, scheme: 'stripe', reason: 'timestamp_too_old', timestamp: NOW });
			expect(valid).toHaveLength(1);
		});

		it('passes the generic settings to the core', async () => {
			// printf '%s' '{"id":"evt_1","name":"Zoë"}' | openssl dgst -sha1 -hmac 'generic-current'
			const item: INodeExecutionData = {
				...webhookItem(undefined),
				json: { headers: { 'x-hub-signature': 'sha1=47976af1113cd6330663359966899c7d471377d0' } },
			};
			const parameters = {
				scheme: 'generic',
				algorithm: 'sha1',
				encoding: 'hex',
				signatureHeader: 'X-Hub-Signature',
				signaturePrefix: 'sha1=',
				signedContent: 'body',
			};

			const [valid] = await run({ items: [item], parameters, credential: { secret: 'generic-current' } });

			expect(valid?.[0]?.json.signature).toEqual({ valid: true, scheme: 'generic' });
		});
	});

	describe('headers, read by the one header rule (lib/headers.ts)', () => {
		const GOOD = `t=${NOW},v1=${SIG_NOW}`;
		const withHeaders = (headers: IDataObject): INodeExecutionData => ({
			...webhookItem(undefined),
			json: { ...webhookItem(undefined).json, headers },
		});
		const signatureOf = async (headers: IDataObject) => {
			const [valid, invalid] = await run({ items: [withHeaders(headers)] });
			return { valid: valid?.length, invalid: invalid?.length, signature: (valid?.[0] ?? invalid?.[0])?.json.signature };
		};

		it.each<[string, IDataObject]>([
			['a number next to the genuine signature (a Code node)', { 'stripe-signature': [12345, GOOD] }],
			['a boolean next to the genuine signature', { 'stripe-signature': [true, GOOD] }],
			['an empty value next to the genuine signature', { 'stripe-signature': ['', GOOD] }],
			[
				'a forged value next to the genuine signature, joined with ", " (n8n, header sent twice)',
				{ 'stripe-signature': `t=${NOW},v1=${'0'.repeat(64)}, ${GOOD}` },
			],
			['the genuine signature under another spelling next to a number', { 'Stripe-Signature': 7, 'stripe-signature': GOOD }],
		])('%s is never Valid: malformed_header', async (_case, headers) => {
			expect(await signatureOf(headers)).toEqual({
				valid: 0,
				invalid: 1,
				signature: { valid: false, scheme: 'stripe', reason: 'malformed_header' },
			});
		});

		it('the genuine signature sent twice (joined or in an array) is one value: Valid', async () => {
			for (const headers of [
				{ 'stripe-signature': `${GOOD}, ${GOOD}` },
				{ 'stripe-signature': [GOOD, GOOD] },
				{ 'STRIPE-SIGNATURE': GOOD },
			]) {
				expect(await signatureOf(headers)).toMatchObject({ valid: 1, invalid: 0 });
			}
		});

		it('a signature that is not text is malformed, a timestamp that is not text malformed_timestamp', async () => {
			expect((await signatureOf({ 'stripe-signature': { t: NOW } })).signature).toMatchObject({ reason: 'malformed_header' });
			const generic = {
				scheme: 'generic',
				algorithm: 'sha256',
				encoding: 'hex',
				signatureHeader: 'X-Sig',
				signedContent: 'timestampDotBody',
				timestampHeader: 'X-Ts',
			};
			const [, invalid] = await run({ items: [withHeaders({ 'x-sig': 'ab', 'x-ts': 1.5 })], parameters: generic });
			expect(invalid?.[0]?.json.signature).toEqual({ valid: false, scheme: 'generic', reason: 'malformed_timestamp' });
		});

		it.each<[string, unknown]>([
			['an array', [['stripe-signature', 'x']]],
			['text', 'stripe-signature: x'],
			['null', null],
		])('headers given as %s are no headers: a clear per-item error', async (_case, headers) => {
			const error = await runError({
				items: [withHeaders({}), { ...webhookItem(undefined), json: { body: {}, headers: headers as IDataObject } }],
			});
			expect(error.message).toBe('No request headers in the item field "headers"');
			expect(error.context.itemIndex).toBe(1);
		});
	});

	describe('secrets are exact strings', () => {
		// GitHub's documented test vector:
		// https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries#testing-the-webhook-payload-validation
		const githubItem = (signature: string): INodeExecutionData => ({
			json: { headers: { 'x-hub-signature-256': signature }, body: {} },
			binary: { data: { data: Buffer.from(GITHUB_DOCS_PAYLOAD, 'utf8').toString('base64'), mimeType: 'text/plain' } },
		});
		const signedWith = (key: string) => `sha256=${createHmac('sha256', key).update(GITHUB_DOCS_PAYLOAD).digest('hex')}`;
		const github = { scheme: 'github' };

		it("routes GitHub's documented example to Valid", async () => {
			const [valid, invalid] = await run({
				items: [githubItem(GITHUB_DOCS_SIGNATURE)],
				parameters: github,
				credential: { secret: GITHUB_DOCS_SECRET },
			});

			expect(valid?.map((item) => item.json.signature)).toEqual([{ valid: true, scheme: 'github' }]);
			expect(invalid).toEqual([]);
		});

		it('routes forgeries signed with a word or a prefix of the secret to Invalid', async () => {
			const keys = ["It's", 'a', 'Secret', 'to', 'Everybody', "It's a Secret", "It's a Secret to Everybod", ' '];
			const items = keys.map((key) => githubItem(signedWith(key)));

			const [valid, invalid] = await run({ items, parameters: github, credential: { secret: GITHUB_DOCS_SECRET } });

			expect(valid).toEqual([]);
			expect(invalid).toHaveLength(keys.length);
		});

		it('rotation: accepts deliveries signed with the secret or the previous secret, both with spaces', async () => {
			const items = [githubItem(GITHUB_DOCS_SIGNATURE), githubItem(signedWith('old secret phrase')), githubItem(signedWith('old'))];

			const [valid, invalid] = await run({
				items,
				parameters: github,
				credential: { secret: GITHUB_DOCS_SECRET, previousSecret: 'old secret phrase' },
			});

			expect(valid?.map((item) => item.pairedItem)).toEqual([{ item: 0 }, { item: 1 }]);
			expect(invalid?.map((item) => item.pairedItem)).toEqual([{ item: 2 }]);
		});

		it('upgrade from 0.1: a credential holding one secret in the old "Secrets" field still verifies', async () => {
			const [valid] = await run({ items: [webhookItem(`t=${NOW},v1=${SIG_NOW}`)], credential: { secrets: ` ${SECRET}\n` } });

			expect(valid).toHaveLength(1);
		});

		it('upgrade from 0.1: a spaced value in the old field is refused, never split', async () => {
			const forgedWithAWord = githubItem(signedWith('Secret'));

			const error = await runError({ items: [forgedWithAWord], parameters: github, credential: { secrets: GITHUB_DOCS_SECRET } });

			expect(error.message).toBe(LEGACY_LIST_MESSAGE);
		});
	});

	describe('errors', () => {
		it('explains a missing raw body as a configuration error, not a failed signature', async () => {
			const item = webhookItem(`t=${NOW},v1=${SIG_NOW}`);
			delete item.binary;

			const error = await runError({ items: [webhookItem(`t=${NOW},v1=${SIG_NOW}`), item] });

			expect(error.message).toBe('No raw request body in the binary field "data"');
			expect(error.description).toContain('"Raw Body"');
			expect(error.context.itemIndex).toBe(1);
		});

		it('explains missing headers', async () => {
			const error = await runError({ items: [{ json: { body: {} }, binary: webhookItem(undefined).binary }] });

			expect(error.message).toBe('No request headers in the item field "headers"');
			expect(error.context.itemIndex).toBe(0);
		});

		it('throws on an invalid signature when asked to', async () => {
			const items = [webhookItem(`t=${NOW},v1=${SIG_NOW}`), webhookItem(`t=${NOW},v1=${SIG_NOW}`, TAMPERED_BODY)];

			const error = await runError({ items, parameters: { onInvalid: 'throw' } });

			expect(error.message).toBe('Webhook signature rejected: signature_mismatch');
			expect(error.description).toContain('wrong secret');
			expect(error.context.itemIndex).toBe(1);
		});

		it('with Continue On Fail, sends a failed item to Invalid with the error', async () => {
			const items = [webhookItem(`t=${NOW},v1=${SIG_NOW}`, TAMPERED_BODY), { json: {}, binary: webhookItem(undefined).binary }];

			const [valid, invalid] = await run({ items, parameters: { onInvalid: 'throw' }, continueOnFail: true });

			expect(valid).toEqual([]);
			expect(invalid).toEqual([
				expect.objectContaining({
					json: expect.objectContaining({
						signature: { valid: false, scheme: 'stripe', reason: 'signature_mismatch' },
						error: 'Webhook signature rejected: signature_mismatch',
					}),
					pairedItem: { item: 0 },
				}),
				expect.objectContaining({
					json: {
						signature: { valid: false, scheme: 'stripe', reason: 'error' },
						error: 'No request headers in the item field "headers"',
					},
					pairedItem: { item: 1 },
				}),
			]);
		});

		it.each([
			['no secret', {}, 'No signing secret configured'],
			['a secret that is only whitespace', { secret: ' \t ' }, '"Secret" is only whitespace'],
			['a previous secret that is only whitespace', { secret: SECRET, previousSecret: ' ' }, '"Previous Secret" is only whitespace'],
			['a version 0.1 list of secrets', { secrets: `${SECRET} ${PREVIOUS_SECRET}` }, 'no longer split at spaces'],
		])('stops with a clear configuration error for %s, naming the item', async (_case, credential, message) => {
			const error = await runError({ items: [webhookItem(`t=${NOW},v1=${SIG_NOW}`)], credential });

			expect(error.message).toContain(message);
			expect(error.description).toBe('SignatureConfigError');
			expect(error.context.itemIndex).toBe(0);
		});

		it('with Continue On Fail, sends every item to Invalid when the credential cannot be used', async () => {
			const items = [webhookItem(`t=${NOW},v1=${SIG_NOW}`), webhookItem(`t=${NOW},v1=${SIG_PREVIOUS}`)];

			const [valid, invalid] = await run({ items, credential: { secrets: `${SECRET} ${PREVIOUS_SECRET}` }, continueOnFail: true });

			expect(valid).toEqual([]);
			expect(invalid?.map((item) => [item.json.signature, item.pairedItem])).toEqual([
				[{ valid: false, scheme: 'stripe', reason: 'error' }, { item: 0 }],
				[{ valid: false, scheme: 'stripe', reason: 'error' }, { item: 1 }],
			]);
		});
	});

	describe('a credential n8n cannot read', () => {
		const items = [webhookItem(`t=${NOW},v1=${SIG_NOW}`)];

		it('with Continue On Fail, sends the item to Invalid (reason error), never through Valid unchecked', async () => {
			const [valid, invalid] = await run({ items, credentialUnreadable: true, continueOnFail: true });
			expect(valid).toEqual([]);
			expect(invalid?.map((item) => [item.json.signature, item.json.error, item.pairedItem])).toEqual([
				[{ valid: false, scheme: 'stripe', reason: 'error' }, 'Credentials could not be decrypted', { item: 0 }],
			]);
		});

		it('without, fails the item with the reason', async () => {
			const error = await runError({ items, credentialUnreadable: true });
			expect(error.message).toBe('Credentials could not be decrypted');
			expect(error.context.itemIndex).toBe(0);
		});
	});

	describe('secrecy', () => {
		const svixSecret = 'whsec_not*base64*but_still_secret';
		const secretOf = (options: FakeOptions): string => String(options.credential?.secret ?? SECRET);

		it.each([
			['routed items', { items: [webhookItem(`t=${NOW},v1=${SIG_NOW}`), webhookItem('garbage')] }],
			['a rejected signature', { items: [webhookItem(`t=${NOW},v1=${SIG_PREVIOUS}`)], parameters: { onInvalid: 'throw' } }],
			[
				'a Standard Webhooks secret that cannot be decoded',
				{
					items: [webhookItem(undefined)],
					parameters: { scheme: 'standardWebhooks' },
					credential: { secret: svixSecret },
				},
			],
			[
				'Continue On Fail output',
				{
					items: [webhookItem(undefined)],
					parameters: { scheme: 'standardWebhooks' },
					credential: { secret: svixSecret },
					continueOnFail: true,
				},
			],
		] as Array<[string, FakeOptions]>)('never shows the secret in %s', async (_case, options) => {
			const secret = secretOf(options);
			let text: string;
			try {
				text = JSON.stringify(await run(options));
			} catch (error) {
				const nodeError = error as NodeOperationError;
				text = `${nodeError.message} ${nodeError.description ?? ''} ${JSON.stringify(nodeError.context)}`;
			}
			// Neither the secret nor its part after the prefix, nor its length.
			expect(text).not.toContain(secret);
			expect(text).not.toContain(secret.slice('whsec_'.length));
			expect(text).not.toMatch(new RegExp(`\\b${secret.length}\\b`));
		});
	});
});

describe('webhookSignatureSecretTest', () => {
	const test = new WebhookSignatureVerify().methods.credentialTest.webhookSignatureSecretTest;
	const credential = (fields: IDataObject | undefined): ICredentialsDecrypted => ({
		id: 'c1',
		name: 'Stripe signing secret',
		type: 'webhookSignatureApi',
		data: fields === undefined ? undefined : (credentialData(fields) as ICredentialsDecrypted['data']),
	});
	const OUTER_WHITESPACE =
		"A secret starts or ends with a space (or other whitespace), which is used as part of the secret. Remove it unless the provider's secret really has it.";

	it.each([
		['one secret', { secret: SECRET }, 'OK', 'One secret configured'],
		['a secret with spaces inside', { secret: GITHUB_DOCS_SECRET }, 'OK', 'One secret configured'],
		[
			'a secret and a previous secret',
			{ secret: SECRET, previousSecret: PREVIOUS_SECRET },
			'OK',
			'Secret and previous secret configured (rotation)',
		],
		['a version 0.1 field holding one secret', { secrets: SECRET }, 'OK', 'One secret configured'],
		['a secret with a trailing space', { secret: `${SECRET} ` }, 'Error', OUTER_WHITESPACE],
		['a previous secret with a leading tab', { secret: SECRET, previousSecret: `\t${PREVIOUS_SECRET}` }, 'Error', OUTER_WHITESPACE],
		[
			'an empty field',
			{ secret: '' },
			'Error',
			'No signing secret configured: enter the signing secret in the credential\'s "Secret" field',
		],
		['no data', undefined, 'Error', 'No signing secret configured: enter the signing secret in the credential\'s "Secret" field'],
		[
			'only whitespace',
			{ secret: ' \n ' },
			'Error',
			'The credential\'s "Secret" is only whitespace: enter the signing secret exactly as the provider shows it',
		],
		['a version 0.1 list of two secrets', { secrets: `${SECRET} ${PREVIOUS_SECRET}` }, 'Error', LEGACY_LIST_MESSAGE],
	])('checks %s', async (_case, fields, status, message) => {
		const result = await test.call({} as ICredentialTestFunctions, credential(fields));
		expect(result).toEqual({ status, message });
		expect(result.message).not.toContain(SECRET);
	});
});
