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
import { BODY, NOW, TAMPERED_BODY } from './fixtures';

const SECRET = 'whsec_stripe_current';
const PREVIOUS_SECRET = 'whsec_stripe_previous';
// printf '%s' '1700000000.{"id":"evt_1","name":"Zoë"}' | openssl dgst -sha256 -hmac 'whsec_stripe_current'
const SIG_NOW = '8a9d24dedd0d68aaff9e4bb65b447709950652ad85357c9c62291358406e7029';
// printf '%s' '1700000000.{"id":"evt_1","name":"Zoë"}' | openssl dgst -sha256 -hmac 'whsec_stripe_previous'
const SIG_PREVIOUS = 'f71fa71c073b36c222b8af1e95b5c150ee383ec55d6d0d0d0fb80c7c0d1f43ef';

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
	secrets?: string;
	continueOnFail?: boolean;
}

/** The part of IExecuteFunctions the node uses; binary data in memory, as n8n's default mode. */
function fakeContext({ items, parameters = {}, secrets = SECRET, continueOnFail = false }: FakeOptions) {
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
			return { secrets };
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

			const [valid, invalid] = await run({ items, secrets: `${SECRET}\n${PREVIOUS_SECRET}` });

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

			const [valid] = await run({ items: [item], parameters, secrets: 'generic-current' });

			expect(valid?.[0]?.json.signature).toEqual({ valid: true, scheme: 'generic' });
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

		it('rejects an empty secret list', async () => {
			const error = await runError({ items: [webhookItem(`t=${NOW},v1=${SIG_NOW}`)], secrets: ' \n ' });

			expect(error.message).toContain('No signing secret configured');
		});
	});

	describe('secrecy', () => {
		const svixSecret = 'whsec_not*base64*but_still_secret';

		it.each([
			['routed items', { items: [webhookItem(`t=${NOW},v1=${SIG_NOW}`), webhookItem('garbage')] }],
			['a rejected signature', { items: [webhookItem(`t=${NOW},v1=${SIG_PREVIOUS}`)], parameters: { onInvalid: 'throw' } }],
			['a Standard Webhooks secret that cannot be decoded', {
				items: [webhookItem(undefined)],
				parameters: { scheme: 'standardWebhooks' },
				secrets: svixSecret,
			}],
			['Continue On Fail output', {
				items: [webhookItem(undefined)],
				parameters: { scheme: 'standardWebhooks' },
				secrets: svixSecret,
				continueOnFail: true,
			}],
		] as Array<[string, FakeOptions]>)('never shows the secret in %s', async (_case, options) => {
			const secret = options.secrets ?? SECRET;
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
	const credential = (secrets: unknown): ICredentialsDecrypted => ({
		id: 'c1',
		name: 'Stripe signing secret',
		type: 'webhookSignatureApi',
		data: { secrets } as ICredentialsDecrypted['data'],
	});

	it.each([
		['one secret', SECRET, 'OK', 'One secret configured'],
		['two secrets for rotation', `${SECRET}\n${PREVIOUS_SECRET}`, 'OK', '2 secrets configured (rotation)'],
		['an empty field', '', 'Error', 'Enter at least one signing secret'],
		['only whitespace', ' \n ', 'Error', 'Enter at least one signing secret'],
		['no field', undefined, 'Error', 'Enter at least one signing secret'],
	])('checks %s', async (_case, secrets, status, message) => {
		await expect(test.call({} as ICredentialTestFunctions, credential(secrets))).resolves.toEqual({ status, message });
	});
});
