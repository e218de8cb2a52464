import {
	NodeHelpers,
	SEND_AND_WAIT_OPERATION,
	type IConnections,
	type INode,
	type INodeParameters,
	type INodeTypeDescription,
} from 'n8n-workflow';

/*
 * What kind of node a workflow node is, for every settlement rule: the one registry. Where n8n
 * declares it in a node type's description (a node that waits declares a webhook that resumes the
 * execution) it is read from there, so a community node or a new n8n node that declares the same is
 * treated the same. The rest is named here once: the package's own node types, and the few n8n nodes
 * whose behaviour the rules read and which n8n declares nothing about.
 */

/** A workflow node as the rules see it (an INode, or n8n's summary of one from getChildNodes). */
export interface NodeRef {
	name: string;
	type: string;
	typeVersion?: number;
	disabled?: boolean;
	parameters?: INodeParameters;
}

/* The package's own nodes --------------------------------------------------------------------- */

// By the end of the type name: the package name before it is another one in development builds.
const RESERVE_TYPE_SUFFIX = '.idempotencyReserve';
const KEY_TYPE_SUFFIX = '.idempotencyKey';
const TRIGGER_TYPE_SUFFIX = '.idempotentWebhook';
const ORDER_GUARD_TYPE_SUFFIX = '.idempotencyOrderGuard';
const PACKAGE_TYPE_SUFFIXES = [
	RESERVE_TYPE_SUFFIX,
	KEY_TYPE_SUFFIX,
	TRIGGER_TYPE_SUFFIX,
	ORDER_GUARD_TYPE_SUFFIX,
	'.idempotencyExecuteQuery',
	'.webhookSignatureVerify',
];

/** The Idempotency Key operations that settle the key they name. */
const SETTLING_OPERATIONS = new Set(['settle', 'complete', 'fail', 'release']);

export function isReserveType(type: string | undefined): boolean {
	return type?.endsWith(RESERVE_TYPE_SUFFIX) === true;
}

export function isKeyType(type: string | undefined): boolean {
	return type?.endsWith(KEY_TYPE_SUFFIX) === true;
}

/** The Idempotent Webhook trigger: its one item is the new event it reserved, and the workflow's last node answers it. */
export function isTriggerType(type: string | undefined): boolean {
	return type?.endsWith(TRIGGER_TYPE_SUFFIX) === true;
}

/** A node of this package: it settles, routes or verifies, and handles its own failures where it runs. */
export function isPackageType(type: string): boolean {
	return PACKAGE_TYPE_SUFFIXES.some((suffix) => type.endsWith(suffix));
}

/** The package's nodes that reserve a key or settle one: they are no part of any key's step. */
export function isReservingOrSettlingType(type: string | undefined): boolean {
	return isReserveType(type) || isKeyType(type) || isTriggerType(type);
}

/**
 * A node whose first output holds the keys it reserved: Idempotency Reserve (New), Claim for Replay
 * (Claimed), the Idempotent Webhook trigger (its event).
 */
export function isReservingNode(node: Pick<NodeRef, 'type' | 'parameters'> | undefined): boolean {
	if (!node) return false;
	return isReserveType(node.type) || isTriggerType(node.type) || (isKeyType(node.type) && node.parameters?.operation === 'claimForReplay');
}

/** A node whose first output feeds a business step: a reserving node, or Order Guard (Newer). */
export function feedsBusinessStep(type: string | undefined): boolean {
	return type !== undefined && (isReserveType(type) || isKeyType(type) || type.endsWith(ORDER_GUARD_TYPE_SUFFIX));
}

/**
 * A node that checks its wiring when it runs, before it reserves or claims (its keys leave by
 * output 0): Reserve and Claim for Replay (the reserving nodes but the trigger), and Order Guard.
 */
export function checksWiringWhenItRuns(node: NodeRef): boolean {
	return (isReservingNode(node) && !isTriggerType(node.type)) || node.type.endsWith(ORDER_GUARD_TYPE_SUFFIX);
}

/** An enabled Idempotency Key node set to Settle After Business Step (a workflow node or n8n's summary of one). */
export function isSettleNode(node: Pick<NodeRef, 'type' | 'parameters' | 'disabled'> | undefined): boolean {
	return node !== undefined && isKeyType(node.type) && node.parameters?.operation === 'settle' && node.disabled !== true;
}

/** An Idempotency Key node stops a walk through the business step: it settles, it is not part of the step. */
export function endsBusinessStep(node: NodeRef): boolean {
	return isKeyType(node.type);
}

/** Whether an Idempotency Key operation settles the key it names (Settle, Complete, Mark Failed, Release). */
export function isSettlingOperation(operation: unknown): boolean {
	return SETTLING_OPERATIONS.has(String(operation));
}

/* What a node does when it fails ------------------------------------------------------------- */

/** What a node does when it fails, by n8n's own rule: On Error when it is set, else the legacy Continue On Fail (the regular output). */
export function onErrorOf(node: Partial<Pick<INode, 'onError' | 'continueOnFail'>>): NonNullable<INode['onError']> {
	return node.onError ?? (node.continueOnFail === true ? 'continueRegularOutput' : 'stopWorkflow');
}

/**
 * A node at On Error "Stop Workflow" that still carries the older Continue On Fail (a workflow saved by an older n8n,
 * or written by hand): the node reads On Error and stops at its first failed item, while n8n's engine goes on past a
 * node that failed when either setting says so, passing its input on as if it had succeeded. What it did for each
 * event cannot be read.
 */
export function errorSettingsDisagree(node: NodeRef & Partial<Pick<INode, 'onError' | 'continueOnFail'>>): boolean {
	return node.onError === 'stopWorkflow' && node.continueOnFail === true;
}

/** Whether a node continues on error (n8n's continueOnFail): its failures are items, not the end of the run. */
export function continuesOnError(node: Partial<Pick<INode, 'onError' | 'continueOnFail'>>): boolean {
	return onErrorOf(node) !== 'stopWorkflow';
}

/* As n8n declares it: nodes that wait, a loop's outputs ---------------------------------------------------- */

/** The parts of a node type's description the rules read. */
export type NodeTypeFacts = Pick<INodeTypeDescription, 'webhooks' | 'properties' | 'outputNames'>;

/** The description n8n has for a node's type and version; undefined when n8n does not say. */
export type DescribeNode = (node: NodeRef) => NodeTypeFacts | undefined;

/** Used only when n8n's node types cannot be read: n8n's own nodes known to wait. */
const WAITS_WHEN_UNDESCRIBED = new Set(['n8n-nodes-base.wait', 'n8n-nodes-base.form']);

/**
 * Whether the node may put the execution to wait and have it resumed later, as a new run without
 * the nodes before it: n8n marks every node that resumes an execution by a webhook with
 * `restartWebhook` (Wait, Form, and the Send and Wait operation of Slack, Gmail, Email, Teams,
 * Telegram, Discord, …). A node whose waiting is one operation among others (`sendAndWait`) waits
 * only with that operation, or with an operation n8n computes per run (an expression).
 */
export function mayWait(node: NodeRef, describe: DescribeNode | undefined): boolean {
	const description = describe?.(node);
	if (!description) return WAITS_WHEN_UNDESCRIBED.has(node.type);
	if (!(description.webhooks ?? []).some((webhook) => webhook.restartWebhook === true)) return false;
	if (sleepsInsideTheRun(node, description)) return false;
	const waitingIsAnOperation = (description.properties ?? []).some(
		(property) =>
			property.name === 'operation' &&
			(property.options ?? []).some((option) => 'value' in option && option.value === SEND_AND_WAIT_OPERATION),
	);
	if (!waitingIsAnOperation) return true;
	const operation = node.parameters?.operation;
	return typeof operation !== 'string' || operation === SEND_AND_WAIT_OPERATION || operation.startsWith('=');
}

/** n8n's Wait node; for less than 65 s it sleeps inside the run instead of putting the execution to wait (Wait.node.js). */
const WAIT_TYPE = 'n8n-nodes-base.wait';
const WAIT_SLEEPS_BELOW_MS = 65_000;
const WAIT_UNIT_MS: Readonly<Record<string, number>> = { seconds: 1_000, minutes: 60_000, hours: 3_600_000, days: 86_400_000 };

/**
 * A Wait at "After Time Interval" for a fixed time under 65 s (its defaults in version 1.1: 5 seconds): the
 * run goes on in the same execution, as after any node. An amount or unit set by an expression may wait.
 */
function sleepsInsideTheRun(node: NodeRef, description: NodeTypeFacts): boolean {
	if (node.type !== WAIT_TYPE) return false;
	let parameters: INodeParameters | null;
	try {
		// With n8n's defaults for the node's version: n8n does not save a parameter left at its default.
		parameters = NodeHelpers.getNodeParameters(
			description.properties ?? [],
			node.parameters ?? {},
			true,
			false,
			{ typeVersion: node.typeVersion ?? 1 },
			description as INodeTypeDescription,
		);
	} catch {
		return false;
	}
	const { resume, amount, unit } = parameters ?? {};
	if (resume !== 'timeInterval' || typeof amount !== 'number' || typeof unit !== 'string' || !(unit in WAIT_UNIT_MS)) return false;
	return amount >= 0 && amount * WAIT_UNIT_MS[unit] < WAIT_SLEEPS_BELOW_MS;
}

/** n8n's node types as a Workflow object keeps them (n8n-core's contexts hold the workflow). */
interface NodeTypesHolder {
	nodeTypes?: { getByNameAndVersion?: (type: string, version?: number) => { description?: NodeTypeFacts } | undefined };
}

/** Reads descriptions from n8n's Workflow object; undefined when it has no node types to ask. */
export function describerOf(workflow: unknown): DescribeNode | undefined {
	const nodeTypes = (workflow as NodeTypesHolder | undefined)?.nodeTypes;
	const lookup = nodeTypes?.getByNameAndVersion;
	if (typeof lookup !== 'function') return undefined;
	return (node) => {
		try {
			return lookup.call(nodeTypes, node.type, node.typeVersion)?.description;
		} catch {
			// A type n8n does not know (a node of an uninstalled package): nothing is declared.
			return undefined;
		}
	};
}

/** Which output of a Loop Over Items node gives the items it is done with, and which the next batch. */
export interface LoopOutputs {
	done: number;
	loop: number;
}

/** Loop Over Items 3's outputs, taken for any loop node whose outputs n8n does not name. */
const LOOP_OUTPUTS_UNNAMED: LoopOutputs = { done: 0, loop: 1 };

/** A loop node's outputs as n8n names them: Split In Batches 2 puts its loop output first, 3 its Done output. */
export function loopOutputsOf(node: NodeRef, describe: DescribeNode | undefined): LoopOutputs {
	const names = describe?.(node)?.outputNames;
	if (!Array.isArray(names)) return LOOP_OUTPUTS_UNNAMED;
	const done = names.indexOf('done');
	const loop = names.indexOf('loop');
	return done >= 0 && loop >= 0 ? { done, loop } : LOOP_OUTPUTS_UNNAMED;
}

/* n8n's nodes whose behaviour the rules read (n8n declares nothing about it) -------------------- */

export const EXECUTE_WORKFLOW_TYPE = 'n8n-nodes-base.executeWorkflow';
/** The Code node, the Function node it replaced, and AI Transform (the code it writes runs once for all items). */
const CODE_TYPE = 'n8n-nodes-base.code';
const FUNCTION_TYPE = 'n8n-nodes-base.function';
const AI_TRANSFORM_TYPE = 'n8n-nodes-base.aiTransform';
/** n8n's sub-workflow trigger ("When Executed by Another Workflow"): where n8n starts a sub-workflow. */
export const SUB_WORKFLOW_TRIGGER_TYPE = 'n8n-nodes-base.executeWorkflowTrigger';
/** Loop Over Items. */
export const LOOP_TYPE = 'n8n-nodes-base.splitInBatches';
export const RESPOND_TYPE = 'n8n-nodes-base.respondToWebhook';
export const SPLIT_OUT_TYPE = 'n8n-nodes-base.splitOut';
const POSTGRES_TYPE = 'n8n-nodes-base.postgres';
const MYSQL_TYPE = 'n8n-nodes-base.mySql';
const MERGE_TYPE = 'n8n-nodes-base.merge';
const SORT_TYPE = 'n8n-nodes-base.sort';
const FORM_TYPE = 'n8n-nodes-base.form';
const STOP_AND_ERROR_TYPE = 'n8n-nodes-base.stopAndError';
const IF_TYPE = 'n8n-nodes-base.if';
const FILTER_TYPE = 'n8n-nodes-base.filter';
const SWITCH_TYPE = 'n8n-nodes-base.switch';
// Merge's SQL Query mode: its query when left at its default (n8n saves no parameter equal to its default).
const MERGE_DEFAULT_QUERY = 'SELECT * FROM input1 LEFT JOIN input2 ON input1.name = input2.id';
const AGGREGATE_TYPE = 'n8n-nodes-base.aggregate';
const SUMMARIZE_TYPE = 'n8n-nodes-base.summarize';
// Item Lists: Aggregate, Summarize and Split Out as operations of one node (its default: Split Out Items).
const ITEM_LISTS_TYPE = 'n8n-nodes-base.itemLists';
const ITEM_LISTS_JOINS = new Set(['aggregateItems', 'concatenateItems']);
// Convert to File makes one file of all its items for a spreadsheet or HTML (its default: CSV), and for JSON in its
// default mode (All Items to One File); the older Spreadsheet File node when it writes one.
const CONVERT_TO_FILE_TYPE = 'n8n-nodes-base.convertToFile';
const ONE_FILE_OF_ALL_ITEMS = new Set(['csv', 'html', 'rtf', 'ods', 'xls', 'xlsx']);
const SPREADSHEET_FILE_TYPE = 'n8n-nodes-base.spreadsheetFile';
// The HTML node: its Convert to HTML Table operation makes one table of all its items.
const HTML_TYPE = 'n8n-nodes-base.html';
const REMOVE_DUPLICATES_TYPE = 'n8n-nodes-base.removeDuplicates';
const SEEN_IN_PREVIOUS_EXECUTIONS = 'removeItemsSeenInPreviousExecutions';
// n8n's nodes that pass, join, batch or order items, or stop them on purpose: no effect, and no failure
// that the events together meet where each alone would not (Sort and Merge fail only when no item has a
// field they name, which each event alone would meet too), unless failsOnTheEventsTogether says otherwise.
const NEVER_FAILING_TYPES = new Set(
	['noOp', 'merge', 'splitInBatches', 'limit', 'sort', 'aggregate', 'stopAndError', 'wait', 'form'].map((name) => `n8n-nodes-base.${name}`),
);
// n8n's AI nodes that send each item to the output of the category a model gives it (its one outside call, the model's,
// has no business effect).
const CLASSIFIER_TYPES = ['textClassifier', 'sentimentAnalysis'].map((name) => `@n8n/n8n-nodes-langchain.${name}`);
// n8n's nodes that route, reshape or convert items inside n8n: no effect, but they can fail on one
// event's data (a Switch output out of range, an If with strict types, a date it cannot read, an
// expression; Remove Duplicates fails for all when one item lacks a field another has, or differs in
// its type).
const ROUTING_TYPES = new Set(
	[
		'removeDuplicates',
		'if',
		'switch',
		'filter',
		'compareDatasets',
		'set',
		'splitOut',
		'summarize',
		'itemLists',
		'renameKeys',
		'dateTime',
		'crypto',
		'xml',
		'markdown',
		'html',
		'jwt',
		'convertToFile',
		'extractFromFile',
	]
		.map((name) => `n8n-nodes-base.${name}`)
		.concat(CLASSIFIER_TYPES),
);
// The field in which the package's nodes give each item its key.
const KEY_FIELD = 'idempotency';

/** Stop and Error: it ends the execution for every event in it, on purpose. */
export function stopsTheRun(node: NodeRef): boolean {
	return node.type === STOP_AND_ERROR_TYPE;
}

/** A node that routes or reshapes items: no effect, but it can fail on one event's data. */
export function isRouting(node: NodeRef): boolean {
	return ROUTING_TYPES.has(node.type) || failsOnTheEventsTogether(node);
}

/**
 * Nodes that otherwise pass, order or join items but can fail for all the events on one event's data: Sort with a
 * code comparator and Merge in SQL Query mode run the user's code over all the items (a field a guest checkout
 * lacks; a comparator runs only with two items, so for the events together where each alone would pass); a Wait
 * or Form set by an expression reads it from the first item and fails every event on a value it cannot use (a
 * date that is no date, a negative amount).
 */
function failsOnTheEventsTogether(node: NodeRef): boolean {
	if (node.type === SORT_TYPE) return node.parameters?.type === 'code';
	if (node.type === MERGE_TYPE) return node.parameters?.mode === 'combineBySql';
	if (node.type === WAIT_TYPE || node.type === FORM_TYPE) return holdsAnExpression(node.parameters);
	return false;
}

/** Whether a parameter, at any depth, is an n8n expression (`=…`). */
function holdsAnExpression(value: unknown): boolean {
	if (typeof value === 'string') return value.startsWith('=');
	if (value === null || typeof value !== 'object') return false;
	return Object.values(value).some(holdsAnExpression);
}

/**
 * If and Filter: when a condition cannot be evaluated for an item (strict type validation meeting
 * another type, a failing expression, a date it cannot read) and the node continues on error, the
 * event goes on as if the condition had an answer. From version 2 n8n-nodes-base sends the item to
 * the false output (Filter: discards it) and nothing in n8n's record says it failed; version 1
 * fails as a whole and n8n-core passes every item on to the first output, the true branch.
 */
function takesFailureAsAnAnswer(node: NodeRef): boolean {
	return node.type === IF_TYPE || node.type === FILTER_TYPE;
}

/**
 * Text Classifier and Sentiment Analysis at Continue (regular output): an item whose classification failed leaves on
 * their first output, the first category's branch, as `{ error }` paired to its event, and the nodes of that branch act
 * for it while its key fails (the retry acts again). At Continue (using error output) n8n-core moves it to the error
 * output.
 */
export function sendsFailuresDownFirstBranch(node: NodeRef & Partial<Pick<INode, 'onError' | 'continueOnFail'>>): boolean {
	return CLASSIFIER_TYPES.includes(node.type) && onErrorOf(node) === 'continueRegularOutput';
}

/** An If or Filter that sends an event on when its condition failed for it (takesFailureAsAnAnswer). */
export function hidesConditionFailures(node: NodeRef & Partial<Pick<INode, 'onError' | 'continueOnFail'>>): boolean {
	return takesFailureAsAnAnswer(node) && continuesOnError(node);
}

// n8n's SQL nodes built on the Postgres node's version-1 helpers (Postgres/v1/genericFunctions.js), and that version itself.
const LEGACY_SQL_TYPES = new Set(['timescaleDb', 'questDb', 'crateDb'].map((name) => `n8n-nodes-base.${name}`));
const QUESTDB_TYPE = 'n8n-nodes-base.questDb';
const CRATEDB_TYPE = 'n8n-nodes-base.crateDb';
const MICROSOFT_SQL_TYPE = 'n8n-nodes-base.microsoftSql';
// Microsoft SQL's operations that write (its default: Insert).
const MICROSOFT_SQL_WRITES = new Set(['insert', 'update', 'delete']);

/**
 * A SQL node at Continue that tells n8n of no failure when a statement fails. On the Postgres node's version-1
 * helpers, sending its statements one by one or in one transaction: the failed statement comes back as an item with
 * the error's code and message beside its json and no `error`, which n8n-core passes on the success output (a
 * transaction is rolled back, every statement reported done); Multiple Queries (one query for all items, their
 * default) fails as a whole. QuestDB has no such mode (its inserts always go one by one); CrateDB updates one by one
 * in either mode. Microsoft SQL's Insert, Update and Delete return no item and no error at all.
 */
export function hidesStatementFailures(
	node: NodeRef & { typeVersion?: number } & Partial<Pick<INode, 'onError' | 'continueOnFail'>>,
): boolean {
	if (!continuesOnError(node)) return false;
	const operation = node.parameters?.operation ?? 'insert';
	if (node.type === MICROSOFT_SQL_TYPE) return typeof operation === 'string' && MICROSOFT_SQL_WRITES.has(operation);
	const legacy = LEGACY_SQL_TYPES.has(node.type) || (node.type === POSTGRES_TYPE && (node.typeVersion ?? 1) < 2);
	if (!legacy) return false;
	if (node.type === QUESTDB_TYPE) return true;
	if (node.type === CRATEDB_TYPE && operation === 'update') return true;
	return ((node.parameters?.additionalFields as { mode?: unknown } | undefined)?.mode ?? 'multiple') !== 'multiple';
}

/** Microsoft SQL version 1's Execute Query: it runs the first item's query only, its result paired to every item. */
export function queriesForFirstItemOnly(node: NodeRef & { typeVersion?: number }): boolean {
	return node.type === MICROSOFT_SQL_TYPE && (node.typeVersion ?? 1) < 1.1 && node.parameters?.operation === 'executeQuery';
}

/**
 * A node that continues on error by putting `{ error }` on its first output, paired to no input item, so its failure
 * belongs to no one event: a Switch whose routing fails for an item; MySQL version 1's Execute Query and Update, which
 * run a statement per item and answer any failure with that one item (the others' statements stay done).
 */
export function failsForNoEvent(node: NodeRef & { typeVersion?: number } & Partial<Pick<INode, 'onError' | 'continueOnFail'>>): boolean {
	if (!continuesOnError(node)) return false;
	if (node.type === MYSQL_TYPE)
		return (node.typeVersion ?? 1) < 2 && ['executeQuery', 'update'].includes(String(node.parameters?.operation ?? 'insert'));
	return node.type === SWITCH_TYPE;
}

/**
 * A node that sends each item to one of its outputs: an If (true or false), a Switch unless set to
 * send an item to all matching outputs, and any node at Continue (using error output) (its success
 * outputs or its error output).
 */
export function sendsEachItemToOneOutput(node: INode): boolean {
	if (node.type === SWITCH_TYPE)
		return (node.parameters?.options as { allMatchingOutputs?: unknown } | undefined)?.allMatchingOutputs !== true;
	return node.type === IF_TYPE || onErrorOf(node) === 'continueErrorOutput';
}

/** A node whose failure no Continue setting keeps to the event it failed for (an If, a Filter, a Switch). */
export function continuingLosesTheEvent(node: NodeRef): boolean {
	return takesFailureAsAnAnswer(node) || node.type === SWITCH_TYPE;
}

// Postgres servers written to in one query or one transaction for all items: the Postgres node, and TimescaleDB on its
// version-1 helpers (QuestDB and CrateDB use them too, but have no transactions).
const TIMESCALE_TYPE = 'n8n-nodes-base.timescaleDb';
const isPostgresBatch = (node: NodeRef) => node.type === POSTGRES_TYPE || node.type === TIMESCALE_TYPE;

/**
 * A node whose failure leaves none of its items done: one that cannot fail on an event, the package's own, a batch to a
 * Postgres server in one query or transaction.
 */
export function failsAllOrNothing(node: NodeRef & { typeVersion: number }): boolean {
	if (isPackageType(node.type) || (NEVER_FAILING_TYPES.has(node.type) && !failsOnTheEventsTogether(node))) return true;
	if (!isPostgresBatch(node)) return false;
	// Version 1 (and TimescaleDB) names the batching "mode" (default: one query for all items); version 2 "Query Batching".
	if (node.type === TIMESCALE_TYPE || node.typeVersion < 2)
		return ['multiple', 'transaction', undefined].includes((node.parameters?.additionalFields as { mode?: string } | undefined)?.mode);
	return (node.parameters?.options as { queryBatching?: unknown } | undefined)?.queryBatching !== 'independently';
}

/**
 * A database node that writes all its items in one query or one transaction: when one item fails,
 * none is written, whatever it reports for the others. At Continue, n8n-nodes-base's Postgres node in
 * a transaction outputs a success item for each query before the failing one, then rolls them back;
 * MySQL (version 2) in Transaction mode rolls back, then outputs the same.
 */
export function writesAllOrNone(node: NodeRef & { typeVersion: number }): boolean {
	if (node.type === MYSQL_TYPE)
		return node.typeVersion >= 2 && (node.parameters?.options as { queryBatching?: unknown } | undefined)?.queryBatching === 'transaction';
	return isPostgresBatch(node) && failsAllOrNothing(node);
}

/**
 * MySQL (version 2) at Query Batching "Single Query", its default, with an operation that makes a
 * statement per item (Execute Query, Update, Upsert, Delete): n8n-nodes-base joins them into one
 * multi-statement query, outside any transaction, so the statements before a failing one stay done
 * while n8n records one failure for all of them. An Insert is one statement, all or nothing.
 */
export function sendsStatementsAsOne(node: NodeRef & { typeVersion: number }): boolean {
	if (node.type !== MYSQL_TYPE || node.typeVersion < 2) return false;
	const batching = (node.parameters?.options as { queryBatching?: unknown } | undefined)?.queryBatching ?? 'single';
	const operation = node.parameters?.operation ?? 'insert';
	return batching === 'single' && operation !== 'insert' && operation !== 'select';
}

/** Whether a node may act outside n8n (a Postgres or TimescaleDB node writes, even all or nothing). */
export function mayHaveEffect(node: NodeRef & { typeVersion: number }): boolean {
	if (isPostgresBatch(node)) return true;
	return !failsAllOrNothing(node) && !isRouting(node);
}

/**
 * A node that runs once for all the items it gets: set to Execute Once, n8n's Code node in "Run Once for All Items"
 * (its default mode), the older Function node, AI Transform. Its failure, even continued as an item, is every event's.
 */
export function runsOnceForAllItems(node: NodeRef & Partial<Pick<INode, 'executeOnce'>>): boolean {
	if (node.executeOnce === true) return true;
	if (node.type === FUNCTION_TYPE || node.type === AI_TRANSFORM_TYPE) return true;
	return node.type === CODE_TYPE && node.parameters?.mode !== 'runOnceForEachItem';
}

/**
 * A node whose code returns the items it makes without `pairedItem` (n8n's Code node for all items, the older Function
 * node, AI Transform): n8n-core then pairs them by position, a guess. Any other node sets each item's pairing itself,
 * also when set to Execute Once (its one item, paired to the first).
 */
export function mayReturnUnpairedItems(node: NodeRef): boolean {
	if (node.type === FUNCTION_TYPE || node.type === AI_TRANSFORM_TYPE) return true;
	return node.type === CODE_TYPE && node.parameters?.mode !== 'runOnceForEachItem';
}

/** A node that sends each item on by a condition (an If, a Filter, a Switch): a branch a user builds on an item's fields. */
export function branchesOnItems(node: NodeRef): boolean {
	return node.type === IF_TYPE || node.type === FILTER_TYPE || node.type === SWITCH_TYPE;
}

/** n8n's Code node, whose Mode chooses between once for all items and once for each. */
export function hasRunOnceMode(node: NodeRef): boolean {
	return node.type === CODE_TYPE;
}

/**
 * A node that joins several items into one (Aggregate, Summarize, Item Lists doing either, Convert to File making one
 * file of them, the HTML node making one table of them): its item stands for all of them.
 */
export function joinsItems(node: NodeRef): boolean {
	if (node.type === AGGREGATE_TYPE || node.type === SUMMARIZE_TYPE || makesOneFileOfAll(node) || mergesIntoOneEmptyItem(node)) return true;
	if (node.type === HTML_TYPE) return node.parameters?.operation === 'convertToHtmlTable';
	if (node.type !== ITEM_LISTS_TYPE) return false;
	const operation = itemListsOperation(node);
	return operation === 'summarize' || ITEM_LISTS_JOINS.has(operation);
}

/**
 * A Merge that joins its inputs' items by their place, not by a field: by position, or every item with every item. A
 * joined item may hold one event's key and another event's data (the streams in different orders).
 */
export function joinsByPlace(node: NodeRef | undefined): boolean {
	if (!node) return false;
	if (node.type !== MERGE_TYPE) return false;
	const { mode, combineBy, combinationMode } = node.parameters ?? {};
	const version = node.typeVersion ?? 1;
	if (version < 2) return mode === 'mergeByIndex' || mode === 'multiplex';
	if (mode !== 'combine') return false;
	if (version < 3) return combinationMode === 'mergeByPosition' || combinationMode === 'multiplex';
	return combineBy === 'combineByPosition' || combineBy === 'combineAll';
}

/** Merge waiting for all its inputs to give one empty item for them (Choose Branch → A Single, Empty Item; version 1's Wait). */
function mergesIntoOneEmptyItem(node: NodeRef): boolean {
	if (node.type !== MERGE_TYPE) return false;
	if ((node.typeVersion ?? 1) < 2) return node.parameters?.mode === 'wait';
	return node.parameters?.mode === 'chooseBranch' && node.parameters?.output === 'empty';
}

/** Convert to File (or Spreadsheet File) writing one file for all its items: one item, no key of theirs. */
function makesOneFileOfAll(node: NodeRef): boolean {
	const operation = node.parameters?.operation;
	if (node.type === SPREADSHEET_FILE_TYPE) return operation === 'toFile' || (typeof operation === 'string' && operation.startsWith('='));
	if (node.type !== CONVERT_TO_FILE_TYPE) return false;
	const chosen = typeof operation === 'string' ? operation : 'csv';
	if (chosen.startsWith('=')) return true;
	return ONE_FILE_OF_ALL_ITEMS.has(chosen) || (chosen === 'toJson' && node.parameters?.mode !== 'each');
}

/**
 * A node that joins several items into one that keeps none of their keys (the `idempotency` field):
 * Aggregate at Individual Fields (its default) or keeping only some fields, Summarize, and Item
 * Lists doing either.
 */
export function joinsWithoutKeys(node: NodeRef): boolean {
	if (!joinsItems(node)) return false;
	if (makesOneFileOfAll(node) || mergesIntoOneEmptyItem(node)) return true;
	const summarizes = node.type === SUMMARIZE_TYPE || (node.type === ITEM_LISTS_TYPE && itemListsOperation(node) === 'summarize');
	return summarizes || aggregatesWithoutKeys(node.parameters ?? {});
}

/**
 * Merge in SQL Query mode whose rows n8n does not pair to the rows they were selected from, and that
 * carry no key: each row stands for every event. Merge pairs each row to every input item at version
 * 3, and at 3.1 and later for a query that does not start with "select"; it pairs a SELECT's rows by
 * adding columns to its column list, found by a pattern that stops at a line break (a list on several
 * lines: no pairing at all). A grouped or combined query (GROUP BY, DISTINCT, UNION) joins events in
 * one row whatever the pairing. A row carries the key when the query selects every column (`*`) or the
 * `idempotency` column under its own name.
 */
export function joinsAndSplitsWithoutKeys(node: NodeRef & { typeVersion: number }): boolean {
	if (node.type !== MERGE_TYPE || node.parameters?.mode !== 'combineBySql') return false;
	const query = String(node.parameters?.query ?? MERGE_DEFAULT_QUERY);
	return !rowsPairedToTheirEvents(node.typeVersion, query) && !selectsTheKey(query);
}

function rowsPairedToTheirEvents(version: number, query: string): boolean {
	if (version < 3.1 || !query.toLowerCase().startsWith('select') || /\b(group\s+by|distinct|union)\b/i.test(query)) return false;
	// n8n-nodes-base Merge v3 modifySelectQuery's own pattern.
	return /SELECT\s+(.+?)\s+FROM/i.test(query);
}

function selectsTheKey(query: string): boolean {
	const columns = /select\s+([\s\S]+?)\s+from\b/i.exec(query)?.[1] ?? '';
	return columns
		.split(',')
		.map((column) => column.trim())
		.some((column) => column === '*' || /^(\w+\.)?idempotency(\s+as\s+idempotency)?$/i.test(column));
}

/** A node that makes several items of each one it gets: Split Out, Item Lists' Split Out Items. */
export function splitsItems(node: NodeRef): boolean {
	return node.type === SPLIT_OUT_TYPE || (node.type === ITEM_LISTS_TYPE && itemListsOperation(node) === 'splitOutItems');
}

function itemListsOperation(node: NodeRef): string {
	return String(node.parameters?.operation ?? 'splitOutItems');
}

/** Aggregate's parameters (Item Lists' join has the same): whether the joined item leaves out the events' keys. */
function aggregatesWithoutKeys(parameters: NonNullable<NodeRef['parameters']>): boolean {
	if ((parameters.aggregate ?? 'aggregateIndividualFields') !== 'aggregateAllItemData') return true;
	const fields = (name: string) =>
		String(parameters[name] ?? '')
			.split(',')
			.map((field) => field.trim());
	if (parameters.include === 'specifiedFields') return !fields('fieldsToInclude').includes(KEY_FIELD);
	if (parameters.include === 'allFieldsExcept') return fields('fieldsToExclude').includes(KEY_FIELD);
	return false;
}

/**
 * Whether the node drops items it saw in an earlier execution: Remove Duplicates at *Remove Items
 * Processed in Previous Executions* (or an operation set by an expression). It records an event as
 * seen when the event passes it, whatever happens to it next, so the provider's retry of an event
 * whose step failed would be dropped there and the event lost. n8n declares nothing about this in a
 * node type's description; its deduplication store is used by this node alone.
 */
export function dropsItemsSeenBefore(node: NodeRef): boolean {
	if (node.type !== REMOVE_DUPLICATES_TYPE) return false;
	const operation = node.parameters?.operation;
	return operation === SEEN_IN_PREVIOUS_EXECUTIONS || (typeof operation === 'string' && operation.startsWith('='));
}

/**
 * Remove Duplicates (or Item Lists' Remove Duplicates) dropping repeats within its input with Remove Other Fields on
 * (or set by an expression): n8n pairs each item it keeps with the item at the same place in its input, not the one it
 * kept, and keeps only the compared fields, the key among the fields it drops. Once an earlier item is removed, every
 * later item stands for another event.
 */
export function pairsKeptItemsByPlace(node: NodeRef): boolean {
	const removeOtherFields = (node.parameters?.options as { removeOtherFields?: unknown } | undefined)?.removeOtherFields;
	if (removeOtherFields !== true && !holdsAnExpression(removeOtherFields)) return false;
	if (node.type === ITEM_LISTS_TYPE) return itemListsOperation(node) === 'removeDuplicates';
	return (
		node.type === REMOVE_DUPLICATES_TYPE && (node.parameters?.operation ?? 'removeDuplicateInputItems') === 'removeDuplicateInputItems'
	);
}

/** An Execute Workflow node whose "Wait For Sub-Workflow Completion" is off, or an expression n8n evaluates per item. */
export function mayNotWaitForSubWorkflow(node: NodeRef): boolean {
	if (node.type !== EXECUTE_WORKFLOW_TYPE) return false;
	const wait = (node.parameters?.options as { waitForSubWorkflow?: unknown } | undefined)?.waitForSubWorkflow;
	return wait === false || (typeof wait === 'string' && wait.startsWith('='));
}

/**
 * An Execute Workflow node at "Continue (using error output)": n8n-core's error-output split
 * (WorkflowExecute.handleNodeErrorOutput) fills the node's error output, its second, with the error
 * items it finds on the first, and so replaces what the node put there. Execute Workflow returns
 * every output of the sub-workflow's last node, and a last node that continues through its error
 * output hands its failed items back on that second output (before 1.3, run for each item, the node
 * also puts item i's own failure on output i): the failure vanishes from the run and the key would
 * be completed. At "Continue (regular output)" or "Stop Workflow" n8n leaves the outputs as returned.
 */
export function losesSubWorkflowFailures(node: Pick<INode, 'type' | 'onError' | 'continueOnFail'>): boolean {
	return node.type === EXECUTE_WORKFLOW_TYPE && onErrorOf(node) === 'continueErrorOutput';
}

/** The nodes of the sub-workflow an Execute Workflow node defines in its own parameters (Source "Define Below"). */
export function inlineSubWorkflowNodes(node: NodeRef): NodeRef[] {
	return inlineSubWorkflow(node)?.nodes ?? [];
}

/** The sub-workflow an Execute Workflow node defines (Source "Define Below"): its nodes and connections; undefined for any other node. */
export function inlineSubWorkflow(node: NodeRef): { nodes: NodeRef[]; connections: IConnections } | undefined {
	if (node.type !== EXECUTE_WORKFLOW_TYPE || node.parameters?.source !== 'parameter') return undefined;
	const json = node.parameters.workflowJson;
	if (typeof json !== 'string' || json.startsWith('=')) return undefined;
	try {
		const parsed = JSON.parse(json) as { nodes?: unknown; connections?: unknown };
		const nodes = Array.isArray(parsed.nodes)
			? parsed.nodes.filter((inner): inner is NodeRef => typeof inner?.name === 'string' && typeof inner?.type === 'string')
			: [];
		const connections = typeof parsed.connections === 'object' && parsed.connections !== null ? (parsed.connections as IConnections) : {};
		return { nodes, connections };
	} catch {
		// Not JSON: n8n refuses to run it, before any step.
		return undefined;
	}
}

/** An Execute Workflow node that may give its sub-workflow all its items in one run (Mode "Run Once with All Items", the default, or an expression). */
export function runsSubWorkflowOnceForAll(node: NodeRef): boolean {
	// Anything but "each" as written: an expression's value is known only when n8n runs the node.
	return node.type === EXECUTE_WORKFLOW_TYPE && node.parameters?.mode !== 'each';
}

/**
 * The nodes of the sub-workflows an Execute Workflow node defines, and of those they define in turn
 * (`depth` levels), each named by its path as the user reads it ("Run Sub" → "Check").
 */
export function nestedInlineNodes(node: NodeRef, depth: number): Array<{ node: NodeRef; path: string }> {
	if (depth <= 0) return [];
	return inlineSubWorkflowNodes(node)
		.filter((inner) => inner.disabled !== true)
		.flatMap((inner) => {
			const path = `${node.name}" → "${inner.name}`;
			return [
				{ node: inner, path },
				...nestedInlineNodes(inner, depth - 1).map((deeper) => ({ ...deeper, path: `${node.name}" → "${deeper.path}` })),
			];
		});
}
