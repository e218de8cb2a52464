import {
	NodeConnectionTypes,
	type IExecuteFunctions,
	type INodeExecutionData,
	type INodeType,
	type INodeTypeDescription,
} from 'n8n-workflow';

import { DatabaseUnreachableError, payloadMismatchError } from '../../lib/errors';
import { assertExactRunText } from '../../lib/keys/exactText';
import { releasedBeforeFailing, routeOf, type ReservationRoute, type Reserved } from '../../lib/pipeline/steps';
import type { KeyStore } from '../../lib/store/contract';
import type { ReservationMode } from '../../lib/types';
import { CONNECTION_TEST, testConnection } from '../shared/credential';
import { STORE_NODE_DEFAULT_VERSION, STORE_NODE_VERSIONS } from '../shared/storeChoice';
import { assertExecutionEndVisible, assertSafeSettleWiring, settlesAtExecutionEnd, settleWhenExecutionEnds } from '../shared/settlement';
import { toNodeError } from '../shared/nodeError';
import { itemRouting, outputsWithNotProcessed } from '../shared/notProcessed';
import { storeChoice } from '../shared/store';
import { assertSameStoreDownstream } from '../shared/storeMatch';
import { evidenceOutput, idempotencyOutput, unverifiedOutput } from '../../lib/pipeline/idempotencyOutput';
import { readBatchParameters } from '../shared/reservationParameters';
import {
	outputItem,
	prepareItems,
	prepareReservation,
	reserveItems,
	routeResults,
	type PreparedReservation,
} from '../shared/reservationPipeline';
import { KEY_SOURCE_SUBTITLE } from '../shared/reservationDescription';
import { reserveProperties } from './description';
import { withOutcomeCustomData } from '../shared/executionCustomData';

const NEW = 0;
const DUPLICATE = 1;
const IN_PROGRESS = 2;

// Lease mode adds the In Progress output; computed from the parameters like n8n's Switch node.
// Not Reserved is always last (see nodes/shared/notProcessed.ts).
const NOT_RESERVED = 'Not Reserved';
const OUTPUTS_BY_MODE: `={{${string}}}` = `={{ $parameter.mode === "lease" ? ${JSON.stringify(
	outputsWithNotProcessed(['New', 'Duplicate', 'In Progress'], NOT_RESERVED),
)} : ${JSON.stringify(outputsWithNotProcessed(['New', 'Duplicate'], NOT_RESERVED))} }}`;

const OUTPUT_OF_ROUTE: Record<ReservationRoute, number> = { new: NEW, duplicate: DUPLICATE, inProgress: IN_PROGRESS };

export class IdempotencyReserve implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Idempotency Reserve',
		name: 'idempotencyReserve',
		icon: { light: 'file:idempotencyReserve.svg', dark: 'file:idempotencyReserve.dark.svg' },
		group: ['transform'],
		// The Store default of each version (1 Postgres, 2 Embedded, 3 Automatic): nodes/shared/storeChoice.ts.
		version: STORE_NODE_VERSIONS,
		defaultVersion: STORE_NODE_DEFAULT_VERSION,
		subtitle: `={{ $parameter.mode === "lease" ? "Lease" : "Permanent" }} · ${KEY_SOURCE_SUBTITLE}`,
		description:
			'Reserve an idempotency key atomically (in a file on this n8n host, or in Postgres) and route new and duplicate deliveries apart',
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

			// Every key is derived and checked before the store call: a refused item is never sent.
			const prepared = await prepareItems(
				routing,
				items.length,
				async (itemIndex) => await prepareReservation(this, items[itemIndex], itemIndex, batch.items[itemIndex]),
			);
			if (prepared.length === 0) return;

			let store: KeyStore;
			let reserved: Array<Reserved<PreparedReservation>>;
			try {
				({ store, reserved } = await reserveItems(
					this,
					statement.table,
					prepared,
					{
						mode: statement.mode,
						leaseSeconds: statement.leaseSeconds,
						retentionSeconds: statement.retentionSeconds,
						detail: statement.output,
					},
					// Registered before the statement: a key reserved is always settled by how the execution ends.
					(opened) => settlesAtEnd && settleWhenExecutionEnds(this, [node.name], async () => opened, statement.leaseSeconds * 1000),
				));
			} catch (error) {
				if (statement.onStoreUnavailable === 'letThrough' && isStoreDown(error)) {
					for (const { itemIndex, value } of prepared) {
						const json = {
							...items[itemIndex].json,
							idempotency: unverifiedOutput(value.derived, statement.output, statement.mode, error.message),
						};
						outputs[NEW].push(outputItem(items[itemIndex], itemIndex, json));
					}
					return;
				}
				// Not reserved (or not known to be): no item may go on as if it were.
				failAll(
					error,
					prepared.map((entry) => entry.itemIndex),
				);
				return;
			}

			// From here on the keys are reserved: whatever fails first releases the ones this run owns.
			try {
				const leaseWarning = statement.mode === 'lease' ? leaseOutlivedWarning(this, statement.leaseSeconds) : undefined;
				routeResults(outputs, items, reserved, ({ itemIndex, value, result }) => {
					const { derived, settings, evidence } = value;
					if (result.payloadMismatch && settings.payloadFingerprint === 'error' && result.outcome !== 'new') {
						const error = payloadMismatchError(result.key);
						if (!continueOnFail) throw toNodeError(node, error, itemIndex);
						failItem(error, itemIndex);
						return undefined;
					}
					const output = OUTPUT_OF_ROUTE[routeOf(result, statement.mode)];
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
					return { output, itemIndex, json: { ...items[itemIndex].json, idempotency } };
				});
			} catch (error) {
				const results = reserved.map((entry) => entry.result);
				throw await releasedBeforeFailing(store, results, error instanceof Error ? error : new Error(String(error)));
			}
		});
	});
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
 * Whether Let Through may apply: Postgres could not be reached, so nothing was sent. Not a lock or
 * statement timeout (another delivery of the event may hold its row right now), nor a lost answer
 * (this reservation may have committed): letting those through would run the business step twice.
 */
function isStoreDown(error: unknown): error is DatabaseUnreachableError {
	return error instanceof DatabaseUnreachableError;
}
