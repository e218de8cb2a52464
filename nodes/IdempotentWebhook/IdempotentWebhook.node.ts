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
	type IHookFunctions,
	type INode,
	type INodeExecutionData,
	type INodeType,
	type INodeTypeDescription,
	type ITriggerFunctions,
	type ITriggerResponse,
	type IWebhookFunctions,
	type IWebhookResponseData,
} from 'n8n-workflow';

import { keyReadsTheBody, type KeyConfig, type KeyStrategy, type OnMissingKey } from '../../lib/keys/deriveKey';
import type { ProviderPreset } from '../../lib/keys/presets';
import type { SignatureScheme } from '../../lib/signature';
import type { KeyStore } from '../../lib/store/contract';
import { DEFAULT_TABLE } from '../../lib/store/rules';
import type { DeliveryAnswer, ReservationMode } from '../../lib/types';
import type { AuthenticationSettings } from '../../lib/webhook/authentication';
import { decideWebhook, internalError, type DecideInput, type VerificationSettings, type WebhookDecision } from '../../lib/webhook/decide';
import {
	DELIVERY_LOG_MESSAGE,
	deliveryLogFields,
	deliveryLogLine,
	failedAnswer,
	inProgressAnswer,
	OUTCOME_HEADER,
	type WebhookAnswer,
} from '../../lib/webhook/answers';
import { CONNECTION_TEST, testConnection } from '../shared/credential';
import { embeddedFileAt, embeddedFileFor, runsInQueueMode, storagePathOutsideExecution } from '../shared/embeddedFile';
import { CUSTOM_DATA_KEYS, recordCustomData, RETRY_WARNING } from '../shared/executionCustomData';
import { KEY_SOURCE_SUBTITLE } from '../shared/reservationDescription';
import { readGenericHmac } from '../shared/genericHmac';
import { toleranceSecondsOf } from '../shared/providerOptions';
import {
	answerNow,
	assertExecutionEndVisible,
	describerOf,
	holdWhileRunning,
	heldKeyOf,
	eventsTogetherAfterTrigger,
	refusalDownstream,
	settleWhenExecutionEnds,
	REFUSALS,
	TRIGGER_REFUSAL,
	unsettleableAfterTrigger,
	wiringRecord,
	type WorkflowFields,
} from '../shared/settlement';
import { CREDENTIAL_TYPE as SIGNING_CREDENTIAL, webhookSigningSecrets } from '../shared/signingSecret';
import { keptCredentialPool, keyStoreOn } from '../shared/store';
import { storeSettingOf } from '../shared/storeChoice';
import { webhookSignatureSecretTest } from '../shared/signingSecretTest';
import { idempotentWebhookProperties, RESPOND, UNSIGNED } from './description';
import { eventKeyRefusal, eventsPathSteps } from '../../lib/webhook/events';
import { inboxOwner, INBOX_DEFAULTS, type InboxSettings } from '../../lib/webhook/inbox';
import { runInbox } from './inboxRunner';
import { executionStarted, failIfExecutionNeverStarts } from './unstartedExecutions';
import { parameterFields } from './webhookFields';

const CALLER_CREDENTIAL_TEST = 'idempotentWebhookCallerCredentialTest';

interface TriggerOptions {
	eventsPath?: string;
	onMissingKey?: OnMissingKey;
	retentionDays?: number;
	scope?: string;
	shareKeysAcrossWorkflows?: boolean;
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
 * execution ends, by what happened (nodes/shared/settlement/).
 */
export class IdempotentWebhook implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Idempotent Webhook',
		name: 'idempotentWebhook',
		icon: { light: 'file:idempotentWebhook.svg', dark: 'file:idempotentWebhook.dark.svg' },
		group: ['trigger'],
		// Version 2 keys each workflow apart and always takes a lease; version 1 keeps its saved keys and modes.
		// Version 3: Store defaults to Automatic; versions 1 and 2 keep Embedded (nodes/shared/storeChoice.ts).
		version: [1, 2, 3],
		defaultVersion: 3,
		subtitle: `=Key: ${KEY_SOURCE_SUBTITLE}`,
		description: 'Receive a webhook once: verify it, reserve its event, answer copies and forgeries without running the workflow',
		defaults: { name: 'Idempotent Webhook' },
		// n8n's generic trigger panel says "Pull in events from …", as if n8n fetched them: this node is called.
		triggerPanel: {
			header: 'Listen for a signed test delivery',
			executionsHelp: {
				inactive:
					"The trigger has two URLs: test and production (Webhook URLs above).<br /><br /><b>While you build the workflow</b>, click 'Execute step', then send a delivery signed with the signing secret to the test URL. Test deliveries are keyed apart from real ones: testing never makes a real delivery a duplicate.<br /><br /><b>To run it for real</b>, publish the workflow and point your provider at the production URL. Only a new, verified event starts an execution; copies and forgeries are answered without one, so they never show up in the executions list.",
				active:
					'The trigger has two URLs: test and production (Webhook URLs above).<br /><br /><b>While you build the workflow</b>, click \'Execute step\', then send a delivery signed with the signing secret to the test URL. Test deliveries are keyed apart from real ones: testing never makes a real delivery a duplicate.<br /><br /><b>The workflow is published</b>: deliveries to the production URL run it. Only a new, verified event starts an execution, in the <a data-key="executions">executions list</a>; copies and forgeries are answered without one.',
			},
			activationHint: 'Once the workflow is published, deliveries to the production URL run it without this button.',
		},
		inputs: [],
		outputs: [NodeConnectionTypes.Main],
		credentials: [
			// Literal names: n8n's lint reads testedBy as written.
			{
				name: 'idempotentWebhookBasicAuthApi',
				required: true,
				testedBy: 'idempotentWebhookCallerCredentialTest',
				displayOptions: { show: { authentication: ['basicAuth'] } },
			},
			{
				name: 'idempotentWebhookHeaderAuthApi',
				required: true,
				testedBy: 'idempotentWebhookCallerCredentialTest',
				displayOptions: { show: { authentication: ['headerAuth'] } },
			},
			{
				name: 'webhookSignatureApi',
				required: true,
				testedBy: 'webhookSignatureSecretTest',
				displayOptions: { hide: { scheme: [UNSIGNED] } },
			},
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
				...parameterFields('httpMethod', 'path'),
				isFullPath: true,
				// A new event is answered when its key is settled: the last node's first item, or 500 when
				// the step failed for it, even where the execution itself succeeded (an error output).
				responseMode: 'responseNode',
			},
		],
		properties: idempotentWebhookProperties,
	};

	methods = {
		credentialTest: { [CONNECTION_TEST]: testConnection, [CALLER_CREDENTIAL_TEST]: testCallerCredential, webhookSignatureSecretTest },
	};

	// The sender's endpoint is configured at the sender by hand: nothing to register or remove. n8n
	// calls these when the workflow is published: a workflow whose keys the trigger could not settle
	// is refused there, with the fix, before any delivery (execute() refuses it again at run time,
	// for a workflow published before this check existed).
	webhookMethods = {
		default: {
			async checkExists(this: IHookFunctions): Promise<boolean> {
				refuseUnsettleableAtPublish(this);
				return true;
			},
			async create(this: IHookFunctions): Promise<boolean> {
				refuseUnsettleableAtPublish(this);
				return true;
			},
			async delete(this: IHookFunctions): Promise<boolean> {
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
		const backend = storeSettingOf(this.getNodeParameter('store', 0, 'embedded'), 'embedded');
		const node = this.getNode();
		const items = this.getInputData();
		// The execution runs: from here it settles its keys (or fails them below), not the unstarted-execution watch.
		for (const item of items) {
			const held = heldKeyOf(item);
			if (held) executionStarted(held.ownerToken);
		}
		// One store for the execution's record and its settlement: on Postgres, one read of the credential.
		const openStore = once(async () => await keyStoreOn(backend, this, () => embeddedFileFor(this), { tableName: options.tableName }));
		// Refused before any of the user's nodes runs: what would keep the key from following what happened.
		// The sender already has its 200 (Respond: At Once, or a retry the package started): nothing to answer.
		const answeredAtOnce = items.some((item) => heldKeyOf(item)?.idempotency.answeredAtOnce === true);
		const unsettleable = unsettleableAfter(this, eventsPathOf(this, options));
		if (unsettleable) {
			const message = TRIGGER_REFUSAL.atRun(unsettleable);
			// This node's own failure leaves no item to trace: its key is failed here, before the throw.
			const store = await openStore();
			await store.fail(
				items.flatMap((item) => {
					const held = heldKeyOf(item);
					return held ? [{ key: held.key, ownerToken: held.ownerToken, leaseEndsAt: held.leaseEndsAt, error: message }] : [];
				}),
			);
			// Answered here: n8n 1.x answers a response-node webhook whose execution failed at its trigger 200.
			if (!answeredAtOnce) await answerNow(this, failedAnswer(message));
			throw new NodeOperationError(node, message, { description: TRIGGER_REFUSAL.fix });
		}
		const ownership = await recordExecution(this, items, openStore);
		if (ownership !== 'ours') {
			// The key is left as it is: its owner (or its lease, then a retry) settles it.
			const message =
				ownership === 'taken_over'
					? "This execution started after its key's lease ended, and another delivery of the event took the key over: the event runs there. Nothing ran here."
					: "The key store could not confirm that the key is still this execution's. Nothing ran; the key is held until its lease ends, then the event runs again.";
			if (!answeredAtOnce) await answerNow(this, inProgressAnswer(message));
			throw new NodeOperationError(node, message);
		}
		if (answeredAtOnce) {
			// The package runs an accepted event again when its lease ends: a long run must not look dead.
			const leaseMs = (this.getNodeParameter('leaseSeconds', 0, 300) as number) * 1000;
			await holdWhileRunning(
				this,
				items.flatMap((item) => heldKeyOf(item) ?? []),
				openStore,
				leaseMs,
			);
		}
		const { credentialHeaders, ownSecrets } = await triggerCredentials(this);
		settleWhenExecutionEnds(this, [node.name], openStore, undefined, {
			credentialHeaders,
			ownSecrets,
			// Nothing settles the key after a wait this trigger cannot refuse (a sub-workflow that waits): held at most as long as it is kept.
			holdAtMostMs: Math.round((options.retentionDays ?? DEFAULT_RETENTION_DAYS) * 86_400_000),
			answer: !answeredAtOnce,
			callerVerified:
				this.getNodeParameter('scheme', 0, 'stripe') !== UNSIGNED || this.getNodeParameter('authentication', 0, 'none') !== 'none',
		});
		recordCustomData(this, { [CUSTOM_DATA_KEYS.retry]: RETRY_WARNING });
		return [items.map((item, index) => ({ ...item, pairedItem: { item: index } }))];
	}

	// Never throws: n8n would record an error execution and answer 500 for something that is not one.
	async webhook(this: IWebhookFunctions): Promise<IWebhookResponseData> {
		let decision: WebhookDecision;
		let input: DecideInput | undefined;
		try {
			input = await decisionInput(this);
			decision = await decideWebhook(input);
		} catch {
			// Reading the request or the parameters failed: nothing was checked or reserved.
			decision = internalError();
		}
		if ('answer' in decision) {
			writeAnswer(this, decision.answer);
			// After the answer is written: the sender never waits for the bookkeeping.
			await countAndLog(this, input?.store, decision.counted, decision.answer.status, decision.key);
			return { noWebhookResponse: true };
		}
		const { events, acceptedAnswer } = decision.start;
		// One execution, one item per new event: the settlement traces each item to its own key.
		const workflowData = [
			events.map(({ item, rawBody, mimeType }) => ({
				json: item as IDataObject,
				binary: { data: { data: rawBody.toString(BINARY_ENCODING), mimeType } },
			})),
		];
		const firstKey = events[0].idempotency.key as string;
		if (acceptedAnswer) {
			// Respond: At Once. The events are kept with their items: answered now, then run (and retried) by the package.
			writeAnswer(this, acceptedAnswer);
			await countAndLog(this, input?.store, 'new', acceptedAnswer.status, firstKey);
			return { workflowData, noWebhookResponse: true };
		}
		await countAndLog(this, input?.store, 'new', null, firstKey);
		// n8n writes the answer when the workflow ends; the header set now goes out with it.
		setHeaderQuietly(this, OUTCOME_HEADER, 'new');
		watchExecutionStart(
			this,
			events.map(({ item }) => item as IDataObject),
		);
		return { workflowData };
	}

	/**
	 * Starts the runs the package owns (Respond: At Once): each accepted event whose run failed, or
	 * whose process died, runs again when its retry is due. n8n calls this on the leader main of a
	 * published workflow only; an editor test run has no inbox.
	 */
	async trigger(this: ITriggerFunctions): Promise<ITriggerResponse> {
		if (this.getMode() === 'manual' || this.getNode().typeVersion < 2) return {};
		const atOnce = this.getNodeParameter('respond', RESPOND.workflowEnds) === RESPOND.atOnce;
		// The workflow's events run through its one At Once trigger; a second trigger leaves them to it.
		if (!atOnce && otherIdempotentWebhooks(this).length > 0) return {};
		return runInbox(this, {
			openStore: once(async () => await keyStoreOutsideExecution(this)),
			owner: inboxOwner(String(this.getWorkflow().id ?? '')),
			leaseMs: (this.getNodeParameter('leaseSeconds', 300) as number) * 1000,
			// Respond changed back to When the Workflow Ends: the events accepted before still run, looked for less often.
			pollMs: atOnce ? undefined : 60_000,
		});
	}
}

function once<T>(open: () => Promise<T>): () => Promise<T> {
	let opened: Promise<T> | undefined;
	return () =>
		(opened ??= open().catch((error: unknown) => {
			opened = undefined;
			throw error;
		}));
}

/**
 * Why the workflow after this trigger could not have its keys settled (settlement/wiring.ts), read
 * from the workflow n8n runs; with an Events Path, also why it could not settle the events of one
 * delivery each by its own outcome.
 */
function unsettleableAfter(context: IHookFunctions | IExecuteFunctions, eventsPath: string): string | undefined {
	const workflow = (context as unknown as { workflow?: WorkflowFields }).workflow;
	const self = context.getNode().name;
	const children = context.getChildNodes(self, { includeNodeParameters: true });
	const record = wiringRecord(workflow);
	return (
		unsettleableAfterTrigger(children, describerOf(workflow), record, self) ??
		(record
			? (refusalDownstream(
					record,
					children.map((child) => child.name),
				) ?? (eventsPath === '' ? undefined : eventsTogetherAfterTrigger(record, self)))
			: undefined)
	);
}

/** The Events Path (version 2 on); empty: one event per delivery. */
function eventsPathOf(context: IHookFunctions | IExecuteFunctions | IWebhookFunctions, options: TriggerOptions): string {
	return context.getNode().typeVersion >= 2 && typeof options.eventsPath === 'string' ? options.eventsPath.trim() : '';
}

function refuseUnsettleableAtPublish(context: IHookFunctions): void {
	const options = context.getNodeParameter('options', {}) as TriggerOptions;
	const eventsPath = eventsPathOf(context, options);
	const unsettleable =
		unsettleableAfter(context, eventsPath) ??
		(eventsPath === '' ? undefined : eventsRefusal(context, options, eventsPath)) ??
		secondTriggerBesideInbox(context) ??
		secondTriggerSharingKeys(context, options) ??
		keyFromMissingBody(context, options);
	if (!unsettleable) return;
	throw new NodeOperationError(context.getNode(), TRIGGER_REFUSAL.atPublish(unsettleable), { description: TRIGGER_REFUSAL.fix });
}

/** A GET trigger (a GET carries no body) whose key is read from the body: every delivery would be refused. */
function keyFromMissingBody(context: IHookFunctions, options: TriggerOptions): string | undefined {
	// Only GET: a DELETE may carry a body, and one without is refused delivery by delivery.
	const method = String(context.getNodeParameter('httpMethod', 'POST'));
	if (method !== 'GET') return undefined;
	return keyReadsTheBody(keyConfig(context, options, undefined)) ? REFUSALS.keyFromMissingBody({ method }) : undefined;
}

/** The other Idempotent Webhook triggers of the workflow (enabled ones), by name. */
function otherIdempotentWebhooks(context: IHookFunctions | ITriggerFunctions): string[] {
	return otherIdempotentWebhookNodes(context).map((node) => node.name);
}

function otherIdempotentWebhookNodes(context: IHookFunctions | ITriggerFunctions): INode[] {
	const self = context.getNode();
	const nodes = (context as unknown as { workflow?: WorkflowFields }).workflow?.nodes ?? {};
	return Object.values(nodes).filter((node) => node.type === self.type && node.name !== self.name && node.disabled !== true);
}

/**
 * Two triggers of one workflow, on one store and table, keep their keys apart only by Scope: without one, an id two
 * senders both use (order 1001 of the shop and of the office) is one key, and the second sender's event would be
 * answered as a copy of the first's and never run. The same Scope set on both is the user's choice (one sender, two paths).
 */
function secondTriggerSharingKeys(context: IHookFunctions, options: TriggerOptions): string | undefined {
	const self = context.getNode();
	if (self.typeVersion < 2 || (options.scope ?? '').trim() !== '' || options.shareKeysAcrossWorkflows === true) return undefined;
	// Only when a user publishes: a workflow n8n activates again at its start ran so before, and adding a Scope now would
	// change the keys of events whose retries are still arriving.
	if (['init', 'leadershipChange'].includes(context.getActivationMode())) return undefined;
	// The Store each version defaults to (n8n saves no parameter left at its default); Automatic may be the embedded one.
	const storeOf = (node: INode) => {
		const store = String(node.parameters.store ?? (node.typeVersion >= 3 ? 'automatic' : 'embedded'));
		return store === 'automatic' ? 'embedded' : store;
	};
	// The table the store opens: the default when none is named; SQLite (the embedded store) reads its name in any case.
	const tableOf = (theirs: TriggerOptions) => {
		const table = (theirs.tableName ?? '').trim() || DEFAULT_TABLE;
		return storeOf(self) === 'postgres' ? table : table.toLowerCase();
	};
	const other = otherIdempotentWebhookNodes(context).find((node) => {
		const theirs = (node.parameters.options ?? {}) as TriggerOptions;
		return (
			node.typeVersion >= 2 &&
			(theirs.scope ?? '').trim() === '' &&
			theirs.shareKeysAcrossWorkflows !== true &&
			storeOf(node) === storeOf(self) &&
			tableOf(theirs) === tableOf(options)
		);
	});
	return other === undefined ? undefined : REFUSALS.secondTriggerSharingKeys({ other: other.name });
}

/** A trigger answering At Once shares its workflow with no other Idempotent Webhook: the workflow owns its retries (inboxOwner). */
function secondTriggerBesideInbox(context: IHookFunctions): string | undefined {
	if (context.getNode().typeVersion < 2 || context.getNodeParameter('respond', RESPOND.workflowEnds) !== RESPOND.atOnce) return undefined;
	const [other] = otherIdempotentWebhooks(context);
	return other === undefined ? undefined : REFUSALS.secondTriggerBesideInbox({ other });
}

/** Why the Events Path, or a Key Source that cannot tell its events apart, would refuse every delivery (lib/webhook/events.ts). */
function eventsRefusal(context: IHookFunctions, options: TriggerOptions, eventsPath: string): string | undefined {
	try {
		eventsPathSteps(eventsPath);
		return eventKeyRefusal(keyConfig(context, options, undefined));
	} catch (error) {
		return error instanceof Error ? error.message : String(error);
	}
}

/** Retention (Days) when the option is not set. */
const DEFAULT_RETENTION_DAYS = 30;

/** The key store as the trigger's webhook() and trigger() open it (outside an execution): its Postgres credential read kept (keptCredentialPool). */
async function keyStoreOutsideExecution(context: IWebhookFunctions | ITriggerFunctions): Promise<KeyStore> {
	const options = context.getNodeParameter('options', {}) as TriggerOptions;
	const backend = storeSettingOf(context.getNodeParameter('store', 'embedded'), 'embedded');
	const nodeType = context.getNode().type;
	return await keyStoreOn(
		backend,
		context,
		() => embeddedFileAt(storagePathOutsideExecution(nodeType), nodeType),
		{ tableName: options.tableName },
		async () => await keptCredentialPool(context),
	);
}

/** Everything the decision needs, read from n8n's request and the node's parameters. */
async function decisionInput(context: IWebhookFunctions): Promise<DecideInput> {
	const request = context.getRequestObject();
	if (request.rawBody === undefined) await request.readRawBody();
	const options = context.getNodeParameter('options', {}) as TriggerOptions;
	const version = context.getNode().typeVersion;
	// Version 2 has no Mode: a Permanent key could not tell a copy that its run died.
	const mode: ReservationMode = version >= 2 ? 'lease' : (context.getNodeParameter('mode', 'lease') as ReservationMode);
	const workflowId = String(context.getWorkflow().id ?? '');
	let opened: Promise<KeyStore> | undefined;
	const authentication = authenticationSettings(context);
	return {
		request: {
			method: request.method,
			headers: request.headers,
			rawBody: request.rawBody ?? Buffer.alloc(0),
			query: request.query as Record<string, unknown>,
		},
		authentication,
		verification: verificationSettings(context),
		inbox: inboxSettings(context, workflowId, authentication),
		eventsPath: eventsPathOf(context, options),
		keySettings: {
			key: keyConfig(context, options, version >= 2 && options.shareKeysAcrossWorkflows !== true ? workflowId : undefined),
			customValue: context.getNodeParameter('keySource', 'auto') === 'custom' ? context.getNodeParameter('customKey', '') : undefined,
			mode,
			leaseSeconds: mode === 'lease' ? (context.getNodeParameter('leaseSeconds', 300) as number) : 300,
			retentionSeconds: Math.round((options.retentionDays ?? DEFAULT_RETENTION_DAYS) * 86_400),
		},
		// Opened once for the decision and the answer count: each credential read costs n8n an expression isolate.
		store: async () => await (opened ??= keyStoreOutsideExecution(context)),
		clock: () => new Date(),
		workflowId,
	};
}

/**
 * Respond: At Once on a published workflow (version 2 on): the inbox's settings. An editor test
 * delivery is answered when its run ends: no runner retries test runs.
 */
function inboxSettings(context: IWebhookFunctions, workflowId: string, authentication: AuthenticationSettings): DecideInput['inbox'] {
	if (context.getNode().typeVersion < 2 || context.getMode() === 'manual') return undefined;
	if (context.getNodeParameter('respond', RESPOND.workflowEnds) !== RESPOND.atOnce) return undefined;
	const settings: InboxSettings = {
		owner: inboxOwner(workflowId),
		maxAttempts: context.getNodeParameter('maxAttempts', INBOX_DEFAULTS.maxAttempts) as number,
		firstRetryMs: Math.round((context.getNodeParameter('firstRetrySeconds', INBOX_DEFAULTS.firstRetrySeconds) as number) * 1000),
		retryForMs: Math.round((context.getNodeParameter('retryForHours', INBOX_DEFAULTS.retryForHours) as number) * 3_600_000),
		acceptedBody: jsonParameter(context.getNodeParameter('acceptedBody', INBOX_DEFAULTS.acceptedBody)),
	};
	return {
		...settings,
		credentialHeaders: async () => [
			...(authentication.kind === 'header' ? [(await authentication.credentials()).name] : []),
			...ownSignatureHeader((name, fallback) => context.getNodeParameter(name, fallback)),
		],
	};
}

/**
 * The header a Generic HMAC signature arrives in, named by the user (X-Sign, say), so that no name rule finds it: never
 * kept with an event or stored in an answer (a signature over the raw body alone verifies those bytes forever).
 */
function ownSignatureHeader(read: (name: string, fallback: unknown) => unknown): string[] {
	if (read('scheme', 'stripe') !== 'generic') return [];
	const { signatureHeader } = readGenericHmac(read);
	return signatureHeader === '' ? [] : [signatureHeader];
}

/** A JSON parameter as n8n gives it: text to parse, or already parsed. Text that is not JSON is sent as it is. */
function jsonParameter(value: unknown): unknown {
	if (typeof value !== 'string') return value;
	try {
		return JSON.parse(value) as unknown;
	} catch {
		return value;
	}
}

function keyConfig(context: IWebhookFunctions | IHookFunctions, options: TriggerOptions, workflowId: string | undefined): KeyConfig {
	const strategy = context.getNodeParameter('keySource', 'auto') as KeyStrategy;
	return {
		strategy,
		preset: strategy === 'preset' ? (context.getNodeParameter('preset', 'stripe') as ProviderPreset) : undefined,
		headerName: strategy === 'header' ? (context.getNodeParameter('headerName', '') as string) : undefined,
		fieldPath: strategy === 'field' ? (context.getNodeParameter('keyField', '') as string) : undefined,
		fieldPrefix: strategy === 'field' ? (context.getNodeParameter('keyPrefix', '') as string) : undefined,
		scope: options.scope,
		workflowId,
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
		...webhookSigningSecrets(context),
		toleranceSeconds: toleranceSecondsOf(scheme, (name, fallback) => context.getNodeParameter(name, fallback)),
		generic: scheme === 'generic' ? readGenericHmac((name, fallback) => context.getNodeParameter(name, fallback)) : undefined,
	};
}

function authenticationSettings(context: IWebhookFunctions): AuthenticationSettings {
	const authentication = context.getNodeParameter('authentication', 'none');
	// Read once per delivery (the check, then the item kept for At Once): each read costs n8n an expression isolate.
	if (authentication === 'basicAuth') {
		return {
			kind: 'basic',
			credentials: once(async () =>
				textFields(await context.getCredentials<ICredentialDataDecryptedObject>('idempotentWebhookBasicAuthApi'), 'user', 'password'),
			),
		};
	}
	if (authentication === 'headerAuth') {
		return {
			kind: 'header',
			credentials: once(async () =>
				textFields(await context.getCredentials<ICredentialDataDecryptedObject>('idempotentWebhookHeaderAuthApi'), 'name', 'value'),
			),
		};
	}
	return { kind: 'none' };
}

/**
 * What the stored answer must not give away of the trigger's own credentials, read once per execution: the headers
 * Header Auth and Generic HMAC read, named by the user (any name), whose values are kept out whatever they are called; and the
 * trigger's configured secrets (every signing secret, the current and the previous, the Header Auth value, the Basic
 * Auth password), which an answer may echo (an API answering the endpoint it configured with its signing secret).
 */
async function triggerCredentials(context: IExecuteFunctions): Promise<{ credentialHeaders: string[]; ownSecrets: string[] }> {
	const credentialHeaders: string[] = [];
	const ownSecrets: string[] = [];
	const fields = (data: ICredentialDataDecryptedObject, ...names: string[]) =>
		names.map((name) => data[name]).filter((value): value is string => typeof value === 'string' && value.trim() !== '');
	// Best effort, each credential on its own: the request was checked with them already, and a throw here would fail a
	// run that did nothing wrong. An unreadable one leaves the answer cleaned of the request's credentials (every header
	// named like one, and Header Auth's header by its value in the request) and the owner tokens.
	const read = async (type: string, use: (data: ICredentialDataDecryptedObject) => void) => {
		try {
			use(await context.getCredentials<ICredentialDataDecryptedObject>(type));
		} catch {
			// Unreadable here: see above.
		}
	};
	credentialHeaders.push(...ownSignatureHeader((name, fallback) => context.getNodeParameter(name, 0, fallback)));
	const authentication = context.getNodeParameter('authentication', 0, 'none');
	if (authentication === 'headerAuth') {
		await read('idempotentWebhookHeaderAuthApi', (data) => {
			credentialHeaders.push(...fields(data, 'name'));
			ownSecrets.push(...fields(data, 'value'));
		});
	}
	if (authentication === 'basicAuth') await read('idempotentWebhookBasicAuthApi', (data) => ownSecrets.push(...fields(data, 'password')));
	// Every field as entered (not resolveSecrets, which refuses a half-configured credential): each may be echoed.
	if (context.getNodeParameter('scheme', 0, 'stripe') !== UNSIGNED)
		await read(SIGNING_CREDENTIAL, (data) => ownSecrets.push(...fields(data, 'secret', 'previousSecret', 'secrets')));
	return { credentialHeaders, ownSecrets };
}

/** Two text fields of a credential; a missing one is refused like an unreadable credential. */
function textFields<A extends string, B extends string>(data: ICredentialDataDecryptedObject, first: A, second: B): Record<A | B, string> {
	const a = data[first];
	const b = data[second];
	if (typeof a !== 'string' || typeof b !== 'string' || a === '') throw new UserError(`The credential has no ${first} or ${second}.`);
	return { [first]: a, [second]: b } as Record<A | B, string>;
}

/** One process: the keys whose execution n8n could not start are failed, not left to their lease (unstartedExecutions.ts). */
function watchExecutionStart(context: IWebhookFunctions, items: IDataObject[]): void {
	const held = items.flatMap((json) => heldKeyOf({ json }) ?? []);
	if (held.length === 0 || runsInQueueMode()) return;
	try {
		failIfExecutionNeverStarts(context.getResponseObject(), held, async () => await keyStoreOutsideExecution(context));
	} catch {
		// No response object to watch: the lease ends the reservations if nothing runs.
	}
}

/**
 * The delivery's bookkeeping: counted in the store for Get Stats, and one log line (the outcome,
 * the status, a hash of the key; never the payload, a header or a secret). Best effort: a store
 * that cannot count (the very outage a 503 reports) leaves a warning, never a different answer.
 */
async function countAndLog(
	context: IWebhookFunctions,
	openStore: (() => Promise<KeyStore> | KeyStore) | undefined,
	outcome: DeliveryAnswer,
	status: number | null,
	key: string | undefined,
): Promise<void> {
	const fields = deliveryLogFields(outcome, status, key);
	let counted = false;
	try {
		if (openStore) {
			await (await openStore()).countAnswer(outcome);
			counted = true;
		}
	} catch (error) {
		context.logger.warn(`${DELIVERY_LOG_MESSAGE} not counted`, { ...fields, error: error instanceof Error ? error.name : 'unknown' });
	}
	context.logger.info(deliveryLogLine(fields, counted), {
		...fields,
		counted,
		workflowId: String(context.getWorkflow().id ?? ''),
		node: context.getNode().name,
	});
}

/**
 * Records this execution on each key the trigger reserved for it (a later copy of the event is
 * answered with `x-idempotency-first-execution`), and says whether every key is still this run's.
 * An execution can start long after its delivery (queue mode's backlog, n8n's concurrency limit):
 * its lease may have ended and another delivery — or, with At Once, the package's retry — taken
 * the key over and run the event. Such a run, or one whose store cannot say, must not run the step.
 */
async function recordExecution(
	context: IExecuteFunctions,
	items: INodeExecutionData[],
	openStore: () => Promise<KeyStore>,
): Promise<'ours' | 'taken_over' | 'unknown'> {
	const held = items.flatMap((item) => heldKeyOf(item) ?? []);
	if (held.length === 0) return 'ours';
	const executionId = context.getExecutionId();
	try {
		const store = await openStore();
		for (const { key, ownerToken } of held) if (!(await store.recordExecution({ key, ownerToken }, executionId))) return 'taken_over';
		return 'ours';
	} catch (error) {
		context.logger.warn('Idempotent Webhook could not record the execution with its key', {
			executionId,
			error: error instanceof Error ? error.name : 'unknown',
		});
		return 'unknown';
	}
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
