import {
	NodeConnectionTypes,
	type IDataObject,
	type IExecuteFunctions,
	type INodeExecutionData,
	type INodeType,
	type INodeTypeDescription,
} from 'n8n-workflow';

import { DatabaseUnreachableError, payloadMismatchError } from '../../lib/errors';
import { capBatchPayloads, defaultSource, replayEvidence, validateEvidenceConfig, type EvidenceReport } from '../../lib/evidence/replayEvidence';
import { assertExactRunText } from '../../lib/keys/exactText';
import type { DerivedKey } from '../../lib/keys/deriveKey';
import type { KeyStore } from '../../lib/store/contract';
import { distinctBatch } from '../../lib/store/rules';
import type { CompactRecord, ReservationMode, ReservationRequest, ReservationResult } from '../../lib/types';
import { CONNECTION_TEST, testConnection } from '../shared/credential';
import { STORE_NODE_DEFAULT_VERSION, STORE_NODE_VERSIONS } from '../shared/storeChoice';
import { assertExecutionEndVisible, settlesAtExecutionEnd, settleWhenExecutionEnds } from '../shared/executionEnd';
import { toNodeError } from '../shared/nodeError';
import { itemRouting, outputsWithNotProcessed } from '../shared/notProcessed';
import { assertSafeSettleWiring } from '../shared/settleWiring';
import { storeChoice, storeFor } from '../shared/store';
import { assertSameStoreDownstream } from '../shared/storeMatch';
import { idempotencyOutput, unverifiedOutput } from '../shared/idempotencyOutput';
import { deriveItemKey } from '../shared/keyInput';
import { readBatchParameters, type ReserveParameters } from '../shared/reservationParameters';
import { KEY_SOURCE_SUBTITLE } from '../shared/reservationDescription';
import { reserveProperties } from './description';
import { withOutcomeCustomData } from './executionCustomData';

const NEW = 0;
const DUPLICATE = 1;
const IN_PROGRESS = 2;

// Lease mode adds the In Progress output; computed from the parameters like n8n's Switch node.
// Not Reserved is always last (see nodes/shared/notProcessed.ts).
const NOT_RESERVED = 'Not Reserved';
const OUTPUTS_BY_MODE: `={{${string}}}` = `={{ $parameter.mode === "lease" ? ${JSON.stringify(
	outputsWithNotProcessed(['New', 'Duplicate', 'In Progress'], NOT_RESERVED),
)} : ${JSON.stringify(outputsWithNotProcessed(['New', 'Duplicate'], NOT_RESERVED))} }}`;

interface PendingItem {
	itemIndex: number;
	derived: DerivedKey;
	settings: ReserveParameters;
	request: ReservationRequest;
	evidence: EvidenceReport;
}

export class IdempotencyReserve implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Idempotency Reserve',
		name: 'idempotencyReserve',
		icon: { light: 'file:idempotencyReserve.svg', dark: 'file:idempotencyReserve.dark.svg' },
		group: ['transform'],
		// 2: Store defaults to Embedded; version 1 (workflows saved before the Store parameter) keeps Postgres.
		version: STORE_NODE_VERSIONS,
		defaultVersion: STORE_NODE_DEFAULT_VERSION,
		subtitle: `={{ $parameter.mode === "lease" ? "Lease" : "Permanent" }} · ${KEY_SOURCE_SUBTITLE}`,
		description: 'Reserve an idempotency key atomically (in a file on this n8n host, or in Postgres) and route new and duplicate deliveries apart',
		defaults: { name: 'Idempotency Reserve' },
		usableAsTool: true,
		inputs: [NodeConnectionTypes.Main],
		outputs: OUTPUTS_BY_MODE,
		// Only the Postgres store needs the credential: shown and required only when Store is Postgres.
		credentials: [
			{
				name: 'idempotencyPostgresApi',
				required: true,
				testedBy: 'idempotencyPostgresConnectionTest',
				displayOptions: { show: { store: ['postgres'] } },
			},
		],
		properties: reserveProperties,
	};

	methods = { credentialTest: { [CONNECTION_TEST]: testConnection } };

	// Items that were not reserved leave through Not Reserved under Continue, whatever went wrong
	// (routing.run, the rule of nodes/shared/notProcessed.ts); under Stop Workflow the node throws.
	// When it fails after its statement it first releases the keys this run reserved, so no event is
	// left reserved by a run that never processed it.
	// Wrapped so every run also writes its outcome into the execution's custom data.
	execute = withOutcomeCustomData(async function execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		const items = this.getInputData();
		const continueOnFail = this.continueOnFail();
		const node = this.getNode();
		const mode = outputMode(this);
		const routing = itemRouting(this, mode === 'lease' ? 3 : 2);
		const { outputs, failItem, failAll } = routing;
		if (items.length === 0) return outputs;
		const allIndexes = items.map((_, itemIndex) => itemIndex);
		const settlesAtEnd = settlesAtExecutionEnd(this);

		return await routing.run(items.length, async () => {
			let batch;
			try {
				batch = readBatchParameters(this, items.length);
				if (settlesAtEnd) assertExecutionEndVisible(this);
				assertSafeSettleWiring(this, NEW);
				assertSameStoreDownstream(this, storeChoice(this));
				assertExactRunText({ 'execution id': this.getExecutionId(), 'workflow id': String(this.getWorkflow().id ?? '') });
			} catch (error) {
				failAll(error, allIndexes);
				return;
			}
			const { statement } = batch;

			// Every key is derived and checked before the statement: a refused item is never sent.
			const pending: PendingItem[] = [];
			for (const [itemIndex, settings] of batch.items.entries()) {
				try {
					if ('error' in settings) throw settings.error;
					validateEvidenceConfig(settings.evidence);
					const { input, derived, payloadHash } = await deriveItemKey(this, items[itemIndex], itemIndex, settings);
					// The payload stored is what the key was derived from: the webhook body, or the whole item.
					// Only a webhook item's raw body is its body's bytes (headers are there only for one).
					const { evidence, report } = replayEvidence(settings.evidence, {
						payload: input.body,
						rawBody: input.headers ? input.rawBody : undefined,
						headers: input.headers,
						executionId: this.getExecutionId(),
						derivedSource: defaultSource(settings.key),
					});
					pending.push({
						itemIndex,
						derived,
						settings,
						request: { key: derived.key, keySource: derived.keySource, payloadHash, evidence },
						evidence: report,
					});
				} catch (error) {
					failItem(error, itemIndex);
				}
			}
			if (pending.length === 0) return;
			// Only the first item of each key that has evidence sends it (a repeat in the batch is a duplicate).
			const withEvidence = pending.flatMap(({ request, evidence }) => (request.evidence ? [{ request, evidence: request.evidence, report: evidence }] : []));
			capBatchPayloads(distinctBatch(withEvidence.map(({ request }) => request)).firstIndexes.map((index) => withEvidence[index]));

			let store: KeyStore;
			let results: Array<ReservationResult<CompactRecord>>;
			try {
				store = await storeFor(this, statement.table);
				const opened = store;
				// Registered before the statement: a key reserved is always settled by how the execution ends.
				if (settlesAtEnd) settleWhenExecutionEnds(this, [node.name], async () => opened);
				results = await store.reserve(
					pending.map((entry) => entry.request),
					{
						mode: statement.mode,
						leaseSeconds: statement.leaseSeconds,
						retentionSeconds: statement.retentionSeconds,
						executionId: this.getExecutionId(),
						workflowId: String(this.getWorkflow().id ?? ''),
						instanceId: this.getInstanceId(),
						detail: statement.output,
					},
				);
			} catch (error) {
				if (statement.onStoreUnavailable === 'letThrough' && isStoreDown(error)) {
					for (const { itemIndex, derived } of pending) {
						const item = items[itemIndex];
						outputs[NEW].push({
							json: { ...item.json, idempotency: unverifiedOutput(derived, statement.output, statement.mode, error.message) },
							binary: item.binary,
							pairedItem: { item: itemIndex },
						});
					}
					return;
				}
				// Not reserved (or not known to be): no item may go on as if it were.
				failAll(error, pending.map((entry) => entry.itemIndex));
				return;
			}

			// From here on the keys are reserved: whatever fails first releases the ones this run owns.
			try {
				const leaseWarning = statement.mode === 'lease' ? leaseOutlivedWarning(this, statement.leaseSeconds) : undefined;
				const routed: Array<{ output: number; entry: INodeExecutionData }> = [];
				for (const [position, result] of results.entries()) {
					const { itemIndex, derived, settings, evidence } = pending[position];
					if (result.payloadMismatch && settings.payloadFingerprint === 'error' && result.outcome !== 'new') {
						const error = payloadMismatchError(result.key);
						if (!continueOnFail) throw toNodeError(node, error, itemIndex);
						failItem(error, itemIndex);
						continue;
					}
					const item = items[itemIndex];
					const output =
						result.outcome === 'new' ? NEW : result.outcome === 'in_progress' && statement.mode === 'lease' ? IN_PROGRESS : DUPLICATE;
					const idempotency = {
						...idempotencyOutput(result, derived, {
							mode: statement.mode,
							detail: statement.output,
							fingerprinting: settings.payloadFingerprint !== 'off',
						}),
						...evidenceOutput(evidence, result),
					};
					// Evidence is stored only with the reservation that made the key this run's (New).
					const warnings = output === NEW ? [...(leaseWarning ? [leaseWarning] : []), ...evidence.warnings] : [];
					if (warnings.length > 0) idempotency.warnings = warnings;
					routed.push({
						output,
						entry: {
							json: { ...item.json, idempotency },
							binary: item.binary,
							pairedItem: { item: itemIndex },
						},
					});
				}
				for (const { output, entry } of routed) outputs[output].push(entry);
			} catch (error) {
				throw await releasedBeforeFailing(store, results, error instanceof Error ? error : new Error(String(error)));
			}
		});
	});
}

/**
 * What the item is told about its replay evidence. The payload fields describe this delivery's
 * payload on the item that reserved the key; a duplicate stored nothing (the first delivery's
 * evidence is kept: Get Key shows it).
 */
function evidenceOutput(report: EvidenceReport, result: ReservationResult<CompactRecord>): IDataObject {
	const output: IDataObject = {};
	if (report.payloadStored !== undefined) {
		const reserved = result.outcome === 'new';
		output.payloadStored = reserved && report.payloadStored;
		output.payloadBytes = report.payloadBytes ?? null;
		if (!reserved) output.payloadNotStoredReason = "The key was already reserved (a duplicate or in progress): the first delivery's evidence is kept.";
		else if (report.payloadNotStoredReason) output.payloadNotStoredReason = report.payloadNotStoredReason;
	}
	if (report.correlationId !== undefined) output.correlationId = report.correlationId;
	return output;
}

/**
 * A warning for the items that go on to the business step when the workflow may run longer than
 * the lease: a run still working when its lease ends can have the key taken over by another
 * delivery, which runs the business step again. A warning, not a refusal: the timeout is an upper
 * bound most runs stay far below, and refusing would fail every delivery of a workflow that works
 * today. No timeout set (-1 or none) is not warned about: it says nothing about how long runs take.
 */
function leaseOutlivedWarning(context: IExecuteFunctions, leaseSeconds: number): string | undefined {
	let timeoutSeconds: unknown;
	try {
		timeoutSeconds = context.getWorkflowSettings().executionTimeout;
	} catch {
		return undefined; // an n8n without workflow settings in this context
	}
	if (typeof timeoutSeconds !== 'number' || !(timeoutSeconds > leaseSeconds)) return undefined;
	return (
		`The lease (${leaseSeconds} s) is shorter than this workflow's timeout (${timeoutSeconds} s): if a run is still working ` +
		'when its lease ends, another delivery of the same event can take the key over and run the business step again. ' +
		"Set the lease longer than the workflow's timeout (Workflow Settings → Timeout Workflow)."
	);
}

/** The mode that decides the output layout; the outputs expression reads the same parameter. */
function outputMode(context: IExecuteFunctions): ReservationMode {
	try {
		return context.getNodeParameter('mode', 0) === 'lease' ? 'lease' : 'permanent';
	} catch {
		return context.getNode().parameters.mode === 'lease' ? 'lease' : 'permanent';
	}
}

/**
 * The node is about to fail after its statement committed: release every key it reserved in
 * this run first, so the provider's retry is processed rather than found as a Duplicate.
 */
async function releasedBeforeFailing<E extends Error>(store: KeyStore, results: Array<ReservationResult<CompactRecord>>, error: E): Promise<E> {
	const owned = results.flatMap((result) => (result.ownerToken ? [{ key: result.key, ownerToken: result.ownerToken }] : []));
	if (owned.length === 0) return error;
	try {
		await store.release(owned);
		error.message += ` The ${owned.length} key(s) this run had reserved were released.`;
	} catch (releaseError) {
		error.message += ` Releasing the ${owned.length} key(s) this run had reserved also failed (${(releaseError as Error).message}): release them with Idempotency Key → Release Execution.`;
	}
	return error;
}

/**
 * Whether Let Through may apply: Postgres could not be reached, so nothing was sent. Not a lock or
 * statement timeout (another delivery of the event may hold its row right now), nor a lost answer
 * (this reservation may have committed): letting those through would run the business step twice.
 */
function isStoreDown(error: unknown): error is DatabaseUnreachableError {
	return error instanceof DatabaseUnreachableError;
}
