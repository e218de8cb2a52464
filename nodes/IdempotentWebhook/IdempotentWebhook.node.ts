import {
	BINARY_ENCODING,
	NodeConnectionTypes,
	NodeOperationError,
	UserError,
	type ICredentialDataDecryptedObject,
	type ICredentialsDecrypted,
	type ICredentialTestFunctions,
	type INodeCredentialTestResult,
	type IDataObject,
	type IExecuteFunctions,
	type INodeExecutionData,
	type INodeType,
	type INodeTypeDescription,
	type IWebhookFunctions,
	type IWebhookResponseData,
} from 'n8n-workflow';

import type { KeyConfig, KeyStrategy, OnMissingKey } from '../../lib/keys/deriveKey';
import type { ProviderPreset } from '../../lib/keys/presets';
import { resolveSecrets, type SignatureScheme } from '../../lib/signature';
import type { ReservationMode } from '../../lib/types';
import type { AuthenticationSettings } from '../../lib/webhook/authentication';
import { decideWebhook, type DecideInput, type VerificationSettings, type WebhookDecision } from '../../lib/webhook/decide';
import { answerFor, type WebhookAnswer } from '../../lib/webhook/answers';
import { CONNECTION_TEST, testConnection } from '../shared/credential';
import { embeddedFileAt, embeddedFileFor, storagePathOutsideExecution } from '../shared/embeddedFile';
import { assertExecutionEndVisible, settleWhenExecutionEnds } from '../shared/executionEnd';
import { heldKeyOf } from '../shared/executionTrace';
import { KEY_SOURCE_SUBTITLE } from '../shared/reservationDescription';
import { unsettleableAfterTrigger } from '../shared/settleWiring';
import { configuredSecrets, CREDENTIAL_TYPE as SIGNING_SECRET } from '../shared/signingSecret';
import { keyStoreOn } from '../shared/store';
import { webhookSignatureSecretTest } from '../shared/signingSecretTest';
import { idempotentWebhookProperties, UNSIGNED } from './description';

const CALLER_CREDENTIAL_TEST = 'idempotentWebhookCallerCredentialTest';

interface TriggerOptions {
	onMissingKey?: OnMissingKey;
	retentionDays?: number;
	scope?: string;
	tableName?: string;
}

/**
 * Owns the HTTP exchange of one webhook: checks the caller and the signature, derives and reserves
 * the event's key, and answers by itself — duplicates, copies in progress, forgeries, refused keys,
 * an unusable store or secret — without starting an execution (lib/webhook/decide.ts). Only a new,
 * verified event starts one, its item carrying the `idempotency` object Reserve gives.
 *
 * n8n runs the start node of that execution through `execute()` (in the process that runs the
 * execution: a worker in queue mode), which hands the item on and has the key settled when the
 * execution ends, by what happened (nodes/shared/executionEnd.ts).
 */
export class IdempotentWebhook implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Idempotent Webhook',
		name: 'idempotentWebhook',
		icon: { light: 'file:idempotentWebhook.svg', dark: 'file:idempotentWebhook.dark.svg' },
		group: ['trigger'],
		version: 1,
		subtitle: `=Key: ${KEY_SOURCE_SUBTITLE}`,
		description: 'Receive a webhook once: verify it, reserve its event, answer copies and forgeries without running the workflow',
		defaults: { name: 'Idempotent Webhook' },
		inputs: [],
		outputs: [NodeConnectionTypes.Main],
		credentials: [
			// Literal names: n8n's lint reads testedBy as written.
			{ name: 'idempotentWebhookBasicAuthApi', required: true, testedBy: 'idempotentWebhookCallerCredentialTest', displayOptions: { show: { authentication: ['basicAuth'] } } },
			{ name: 'idempotentWebhookHeaderAuthApi', required: true, testedBy: 'idempotentWebhookCallerCredentialTest', displayOptions: { show: { authentication: ['headerAuth'] } } },
			{ name: 'webhookSignatureApi', required: true, testedBy: 'webhookSignatureSecretTest', displayOptions: { hide: { scheme: [UNSIGNED] } } },
			{
				name: 'idempotencyPostgresApi',
				required: true,
				testedBy: 'idempotencyPostgresConnectionTest',
				displayOptions: { show: { store: ['postgres'] } },
			},
		],
		webhooks: [
			{
				name: 'default',
				httpMethod: '={{$parameter["httpMethod"]}}',
				path: '={{$parameter["path"]}}',
				isFullPath: true,
				// A new event's answer is the last node's, until the settlement decides it.
				responseMode: 'lastNode',
				responseData: 'firstEntryJson',
			},
		],
		properties: idempotentWebhookProperties,
	};

	methods = { credentialTest: { [CONNECTION_TEST]: testConnection, [CALLER_CREDENTIAL_TEST]: testCallerCredential, webhookSignatureSecretTest } };

	// The sender's endpoint is configured at the sender by hand: nothing to register or remove.
	webhookMethods = {
		default: {
			async checkExists(this: unknown): Promise<boolean> {
				return true;
			},
			async create(this: unknown): Promise<boolean> {
				return true;
			},
			async delete(this: unknown): Promise<boolean> {
				return true;
			},
		},
	};

	/**
	 * The execution's first step: the event's item passes on unchanged, and its key is settled when
	 * the execution ends — completed with the answer n8n gives the sender, or failed for its retry.
	 */
	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		// Before anything runs: an n8n that cannot tell the package how the execution ends is refused here.
		assertExecutionEndVisible(this);
		const options = this.getNodeParameter('options', 0, {}) as TriggerOptions;
		const backend = this.getNodeParameter('store', 0, 'embedded') === 'postgres' ? 'postgres' : 'embedded';
		const node = this.getNode();
		const items = this.getInputData();
		const openStore = async () => await keyStoreOn(backend, this, () => embeddedFileFor(this), { tableName: options.tableName });
		// Refused before any of the user's nodes runs: what would keep the key from following what happened.
		const unsettleable = unsettleableAfterTrigger(this.getChildNodes(node.name, { includeNodeParameters: true }));
		if (unsettleable) {
			const message = `${unsettleable} Nothing ran; the key is marked failed.`;
			// This node's own failure leaves no item to trace: its key is failed here, before the throw.
			const store = await openStore();
			await store.fail(items.flatMap((item) => {
				const held = heldKeyOf(item);
				return held ? [{ key: held.key, ownerToken: held.ownerToken, leaseEndsAt: held.leaseEndsAt, error: message }] : [];
			}));
			throw new NodeOperationError(node, message, {
				description: 'Change the workflow as the message says, or use the webhook template (Idempotency Reserve and Settle) for a workflow that waits or answers with Respond to Webhook.',
			});
		}
		settleWhenExecutionEnds(this, [node.name], openStore);
		return [items.map((item, index) => ({ ...item, pairedItem: { item: index } }))];
	}

	// Never throws: n8n would record an error execution and answer 500 for something that is not one.
	async webhook(this: IWebhookFunctions): Promise<IWebhookResponseData> {
		let decision: WebhookDecision;
		try {
			decision = await decideWebhook(await decisionInput(this));
		} catch {
			// Reading the request or the parameters failed: nothing was checked or reserved.
			decision = answerFor('internal_error', { error: 'internal_error' });
		}
		if ('answer' in decision) {
			writeAnswer(this, decision.answer);
			return { noWebhookResponse: true };
		}
		const { item, rawBody } = decision.start;
		// n8n writes the answer when the workflow ends; the header set now goes out with it.
		setHeaderQuietly(this, 'x-idempotency-outcome', 'new');
		const mimeType = this.getRequestObject().headers['content-type'] ?? 'application/json';
		return {
			workflowData: [[{ json: item as IDataObject, binary: { data: { data: rawBody.toString(BINARY_ENCODING), mimeType } } }]],
		};
	}
}

/** Everything the decision needs, read from n8n's request and the node's parameters. */
async function decisionInput(context: IWebhookFunctions): Promise<DecideInput> {
	const request = context.getRequestObject();
	if (request.rawBody === undefined) await request.readRawBody();
	const options = context.getNodeParameter('options', {}) as TriggerOptions;
	const mode = context.getNodeParameter('mode', 'lease') as ReservationMode;
	const store = context.getNodeParameter('store', 'embedded') === 'postgres' ? 'postgres' : 'embedded';
	const node = context.getNode();
	return {
		request: { method: request.method, headers: request.headers, rawBody: request.rawBody ?? Buffer.alloc(0), query: request.query as Record<string, unknown> },
		authentication: authenticationSettings(context),
		verification: verificationSettings(context),
		keySettings: {
			key: keyConfig(context, options),
			customValue: context.getNodeParameter('keySource', 'auto') === 'custom' ? context.getNodeParameter('customKey', '') : undefined,
			mode,
			leaseSeconds: mode === 'lease' ? (context.getNodeParameter('leaseSeconds', 300) as number) : 300,
			retentionSeconds: Math.round((options.retentionDays ?? 30) * 86_400),
		},
		store: async () =>
			await keyStoreOn(store, context, () => embeddedFileAt(storagePathOutsideExecution(node.type), node.type), { tableName: options.tableName }),
		clock: () => new Date(),
		workflowId: String(context.getWorkflow().id ?? ''),
	};
}

function keyConfig(context: IWebhookFunctions, options: TriggerOptions): KeyConfig {
	const strategy = context.getNodeParameter('keySource', 'auto') as KeyStrategy;
	return {
		strategy,
		preset: strategy === 'preset' ? (context.getNodeParameter('preset', 'stripe') as ProviderPreset) : undefined,
		headerName: strategy === 'header' ? (context.getNodeParameter('headerName', '') as string) : undefined,
		fieldPath: strategy === 'field' ? (context.getNodeParameter('keyField', '') as string) : undefined,
		fieldPrefix: strategy === 'field' ? (context.getNodeParameter('keyPrefix', '') as string) : undefined,
		scope: options.scope,
		// A call to the editor's test URL: its key goes apart from every real key, so testing never makes the real delivery a duplicate.
		manualTest: context.getMode() === 'manual',
		onMissingKey: options.onMissingKey ?? 'bodyHash',
	};
}

function verificationSettings(context: IWebhookFunctions): VerificationSettings {
	const scheme = context.getNodeParameter('scheme', 'stripe') as SignatureScheme | typeof UNSIGNED;
	if (scheme === UNSIGNED) return { scheme: 'none' };
	return {
		scheme,
		secrets: async () => resolveSecrets(configuredSecrets(await context.getCredentials<ICredentialDataDecryptedObject>(SIGNING_SECRET))),
		toleranceSeconds: context.getNodeParameter('toleranceSeconds', undefined) as number | undefined,
	};
}

function authenticationSettings(context: IWebhookFunctions): AuthenticationSettings {
	const authentication = context.getNodeParameter('authentication', 'none');
	if (authentication === 'basicAuth') {
		return { kind: 'basic', credentials: async () => textFields(await context.getCredentials<ICredentialDataDecryptedObject>('idempotentWebhookBasicAuthApi'), 'user', 'password') };
	}
	if (authentication === 'headerAuth') {
		return { kind: 'header', credentials: async () => textFields(await context.getCredentials<ICredentialDataDecryptedObject>('idempotentWebhookHeaderAuthApi'), 'name', 'value') };
	}
	return { kind: 'none' };
}

/** Two text fields of a credential; a missing one is refused like an unreadable credential. */
function textFields<A extends string, B extends string>(data: ICredentialDataDecryptedObject, first: A, second: B): Record<A | B, string> {
	const a = data[first];
	const b = data[second];
	if (typeof a !== 'string' || typeof b !== 'string' || a === '') throw new UserError(`The credential has no ${first} or ${second}.`);
	return { [first]: a, [second]: b } as Record<A | B, string>;
}

function setHeaderQuietly(context: IWebhookFunctions, name: string, value: string): void {
	try {
		context.getResponseObject().setHeader(name, value);
	} catch {
		// The provider hung up: nothing to label.
	}
}

/** Writes one of the trigger's own answers; a connection already gone is nothing to report. */
function writeAnswer(context: IWebhookFunctions, answer: WebhookAnswer): void {
	let response;
	try {
		response = context.getResponseObject();
		// Node's own response API (Express's response extends it), as n8n's Webhook node answers 403.
		response.writeHead(answer.status, answer.headers).end(JSON.stringify(answer.body));
	} catch {
		// The provider hung up (it retries, and the retry is decided again), or the answer could not
		// be written: a bare 503 rather than a request left waiting.
		try {
			if (response && !response.headersSent) response.writeHead(503).end();
		} catch {
			// Nothing more can be sent on this connection.
		}
	}
}

/** The caller credentials are checked offline: there is nothing to call; both fields must be set. */
async function testCallerCredential(this: ICredentialTestFunctions, credential: ICredentialsDecrypted): Promise<INodeCredentialTestResult> {
	const values = Object.values(credential.data ?? {});
	return values.length >= 2 && values.every((value) => typeof value === 'string' && value !== '')
		? { status: 'OK', message: 'Set' }
		: { status: 'Error', message: 'Fill in both fields' };
}
