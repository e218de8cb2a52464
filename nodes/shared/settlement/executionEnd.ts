import { LoggerProxy, NodeOperationError, type IDataObject, type IExecuteFunctions, type IRun } from 'n8n-workflow';

import type { HoldRequest, KeyStore } from '../../../lib/store/contract';
import { redactedErrorText } from '../../../lib/evidence/redactedText';
import { MAX_HOLD_MS } from '../../../lib/store/rules';
import { inProgressAnswer, settlementAnswer, type ExecutionAnswer } from '../../../lib/webhook/answers';
import { storedAnswer, withoutRequestSecrets, type AnswerRequest } from '../../../lib/webhook/storedAnswer';
import { runsInQueueMode } from '../embeddedFile';
import { instanceTimeoutSeconds } from '../instanceTimeout';
import { executionView, requestOfRun, type RunExecutionDataFields, type WorkflowFields } from './executionRecord';
import { isSettleNode, isTriggerType } from './nodeKinds';
import { endOutcomes } from './outcome';
import { N8N_REFUSALS } from './refusals';
import { executionReaderOf, readSubExecutions, type ExecutionReader } from './subExecution';
import { subExecutionsToRead, type Reservation } from './trace';

/*
 * Every key an execution reserved is settled by what happened to the execution, when it ends:
 * n8n-core runs the `workflowExecuteAfter` handlers of the execution's lifecycle hooks with the
 * final run data, in the process that ran the execution (the worker in queue mode), before n8n
 * answers a webhook that waited for the end (Respond: When Last Node Finishes, or Using Respond to
 * Webhook Node when no node answered). Reserve registers the handler before it reserves anything;
 * every node that settles a key registers it again, so that an execution resumed after a Wait (a
 * new set of hooks, in whichever process resumes it) settles its keys too.
 *
 * A key a node of this package already settled is left as it is. The others: an execution that
 * waits holds them; one that succeeded completes them unless one of their items failed; one that
 * failed fails every key whose items failed or had not finished, and completes only those whose
 * items all ran to their end without an error.
 *
 * The hooks are an n8n internal (the execute context's `additionalData.hooks`, on the 1.x and 2.x
 * lines): without them Reserve refuses before it reserves anything.
 */

interface LifecycleHooks {
	addHandler(hookName: 'workflowExecuteAfter', handler: (this: unknown, run: IRun) => Promise<void>): void;
	runHook(hookName: 'sendResponse', parameters: [ExecutionAnswer]): Promise<void>;
}

interface ContextFields {
	additionalData?: { hooks?: Partial<LifecycleHooks> };
	workflow?: WorkflowFields;
}

type StoreOpener = () => Promise<KeyStore>;

interface KeySource {
	open: StoreOpener;
	/** The lease the node reserved with, when known: a key is held this long after its execution's wait ends. */
	leaseMs?: number;
	/** The longest a key is held while its execution waits (the trigger: its keys' retention). */
	holdAtMostMs?: number;
}

interface Watch {
	workflow: WorkflowFields;
	/** Where each Reserve node's keys are stored, by the Reserve node's name. */
	stores: Map<string, KeySource>;
	/** Request headers that carry the trigger's credential whatever their name (Header Auth's): never in a stored answer. */
	credentialHeaders: Set<string>;
	/** The trigger's own configured secrets (signing secrets, Header Auth value, Basic Auth password): never in a stored answer. */
	ownSecrets: Set<string>;
	/** False when the sender was answered before the execution ran (Respond: At Once): the end only settles. */
	answers: boolean;
	/** False for a trigger that checks no caller (no signature, no authentication): its failed answer names no error, which may quote data. */
	callerVerified: boolean;
	/** Reads a sub-execution's record (the execute context's getExecutionDataById), where n8n has it. */
	readExecution?: ExecutionReader;
}

/** The lease of the package's nodes when nothing else is known (a node settling keys another node reserved). */
const DEFAULT_LEASE_MS = 300_000;

/** n8n's "wait without a limit" (a Wait for a webhook call) is a wait until the year 3000. */
const WAITS_WITHOUT_LIMIT = Date.UTC(3000, 0, 1);

const watches = new WeakMap<object, Watch>();

function hooksOf(context: IExecuteFunctions): LifecycleHooks | undefined {
	const hooks = (context as unknown as ContextFields).additionalData?.hooks;
	return hooks && typeof hooks.addHandler === 'function' && typeof hooks.runHook === 'function' ? (hooks as LifecycleHooks) : undefined;
}

/**
 * Whether the keys this node reserves are settled when the execution ends: when "Settle After
 * Business Step" is downstream (beside the step or after it). A workflow that settles explicitly
 * (Complete, Release, Mark Failed) or not at all (a lease that only holds copies off) keeps what it
 * was built for.
 */
export function settlesAtExecutionEnd(context: IExecuteFunctions): boolean {
	return context.getChildNodes(context.getNode().name, { includeNodeParameters: true }).some(isSettleNode);
}

/** Refuses, before anything has happened, an n8n whose execution end the package cannot see. */
export function assertExecutionEndVisible(context: IExecuteFunctions): void {
	if (hooksOf(context) && (context as unknown as ContextFields).workflow?.nodes) return;
	const { message, description } = N8N_REFUSALS.noExecutionEnd;
	throw new NodeOperationError(context.getNode(), message, { description });
}

/**
 * Settles the keys `reserveNodes` reserved in this execution when it ends, in the store `openStore`
 * opens; while the execution waits, holds them until the wait ends and `leaseMs` more.
 */
export function settleWhenExecutionEnds(
	context: IExecuteFunctions,
	reserveNodes: string[],
	openStore: StoreOpener,
	leaseMs?: number,
	{
		credentialHeaders = [],
		ownSecrets = [],
		holdAtMostMs,
		answer = true,
		callerVerified = true,
	}: { credentialHeaders?: string[]; ownSecrets?: string[]; holdAtMostMs?: number; answer?: boolean; callerVerified?: boolean } = {},
): void {
	const hooks = hooksOf(context);
	const workflow = (context as unknown as ContextFields).workflow;
	if (!hooks || !workflow) return;
	let watch = watches.get(hooks);
	if (!watch) {
		const created: Watch = {
			workflow,
			stores: new Map(),
			credentialHeaders: new Set(),
			ownSecrets: new Set(),
			answers: answer,
			callerVerified,
			readExecution: executionReaderOf(context),
		};
		watch = created;
		watches.set(hooks, created);
		hooks.addHandler('workflowExecuteAfter', async (run: IRun) => {
			let answer: ExecutionAnswer | undefined;
			try {
				answer = await settleAtEnd(run, created);
			} catch (error) {
				// A throw here would make n8n run its end handlers again: the lease is the backstop.
				const message = error instanceof Error ? error.message : String(error);
				LoggerProxy.error(`Idempotency: the keys of the execution could not be settled when it ended: ${message}`);
				answer = settlementAnswer('not_settled', { message: `The event's key could not be settled (${message}): retry later.` });
			}
			if (answer && created.answers) await sendAnswer(hooks, answer);
		});
	}
	for (const name of credentialHeaders) watch.credentialHeaders.add(name);
	for (const secret of ownSecrets) watch.ownSecrets.add(secret);
	const source: KeySource = { open: once(openStore), leaseMs, holdAtMostMs };
	for (const name of reserveNodes) if (!watch.stores.has(name)) watch.stores.set(name, source);
}

/** How often a running execution's keys are held again, as a part of their lease: two missed beats still leave time. */
const BEATS_PER_LEASE = 3;
/** The longest interval Node's timers take (a longer one fires at once). */
const MAX_TIMER_MS = 2 ** 31 - 1;
/**
 * The longest a run keeps its keys by beating, unless the run's timeout is longer: a run still
 * going after this is taken as hung, and its lease then ends (the event runs again).
 */
const MAX_BEATING_MS = 6 * 3_600_000;

/**
 * How long this run's keys are held by beating: six hours, or the run's timeout when that is longer (the
 * workflow's own, else the instance's default, as n8n picks it).
 */
function beatingLimitMs(context: IExecuteFunctions): number {
	let timeoutSeconds: unknown;
	try {
		timeoutSeconds = context.getWorkflowSettings().executionTimeout;
	} catch {
		timeoutSeconds = undefined; // an n8n without workflow settings in this context
	}
	timeoutSeconds ??= instanceTimeoutSeconds();
	return typeof timeoutSeconds === 'number' && timeoutSeconds > 0 ? Math.max(MAX_BEATING_MS, timeoutSeconds * 1000) : MAX_BEATING_MS;
}

/**
 * Keeps `keys` held while this execution runs in this process, one lease ahead, until it ends: a
 * run longer than its lease is not taken as dead. Used where the package itself runs an event again
 * once its lease ends (Respond: At Once) and by a replay (Claim for Replay); when the process dies
 * the beats stop and the lease ends.
 * The first hold is made before the step runs: an execution n8n started late (a queue, a concurrency
 * limit) may have little of its lease left, less than one beat.
 */
export async function holdWhileRunning(
	context: IExecuteFunctions,
	keys: OwnedKeyWithLease[],
	openStore: StoreOpener,
	leaseMs: number,
): Promise<void> {
	const hooks = hooksOf(context);
	if (!hooks || keys.length === 0) return;
	const started = Date.now();
	const limitMs = beatingLimitMs(context);
	const beatEveryMs = Math.min(MAX_TIMER_MS, Math.max(1000, Math.floor(leaseMs / BEATS_PER_LEASE)));
	// Each hold outlasts BEATS_PER_LEASE beats, at least the lease: a late beat (a busy event loop, a slow store)
	// still finds the keys held, a lease under three seconds too, whose beats come no faster than one a second.
	const holdMs = Math.min(MAX_HOLD_MS, Math.max(1, Math.round(Math.max(leaseMs, beatEveryMs * BEATS_PER_LEASE))));
	let held = keys;
	// A key settled meanwhile (completed, failed, taken over) is not held again: the beats end with the last one.
	const hold = async () => {
		const holding = new Set(await (await openStore()).hold(held.map((key) => ({ ...key, holdMs }))));
		held = held.filter((key) => holding.has(key.key));
		if (held.length === 0) clearInterval(beat);
	};
	const beat = setInterval(() => {
		if (Date.now() - started > limitMs) {
			clearInterval(beat);
			return;
		}
		void hold().catch(() => {
			// A missed beat: the next one, or the lease, decides.
		});
	}, beatEveryMs);
	beat.unref();
	hooks.addHandler('workflowExecuteAfter', async () => {
		clearInterval(beat);
	});
	await hold().catch(() => {
		// Not held now: the beats, or the lease the execution's record just confirmed, decide.
	});
}

type OwnedKeyWithLease = { key: string; ownerToken: string; leaseEndsAt: Date | null };

/** Answered the way Respond to Webhook answers; n8n keeps only the first answer, and ignores one where no webhook waits for it. */
async function sendAnswer(hooks: LifecycleHooks, answer: ExecutionAnswer): Promise<void> {
	await hooks.runHook('sendResponse', [answer]).catch(() => undefined);
}

/**
 * Answers the webhook from inside the execution, before any node below answers it: one delivery
 * carrying several events is retried as a whole, so a 2xx for it must wait until every key in it
 * succeeded.
 */
export async function answerNow(context: IExecuteFunctions, answer: ExecutionAnswer): Promise<void> {
	const hooks = hooksOf(context);
	if (hooks) await sendAnswer(hooks, answer);
}

function once<T>(open: () => Promise<T>): () => Promise<T> {
	let opened: Promise<T> | undefined;
	return () => (opened ??= open());
}

/** The reserving node's Lease when it is a number in the workflow (a resumed execution does not run it again). */
function staticLeaseMs(workflow: WorkflowFields, reserveNode: string): number {
	const seconds = workflow.nodes?.[reserveNode]?.parameters?.leaseSeconds;
	return typeof seconds === 'number' && seconds > 0 ? seconds * 1000 : DEFAULT_LEASE_MS;
}

/**
 * Settles what the execution still holds; answers 500 when a key it settled failed (the provider
 * retries), and 409 when it starts waiting in queue mode.
 */
async function settleAtEnd(run: IRun, watch: Watch): Promise<ExecutionAnswer | undefined> {
	// The judgement is synchronous: the sub-executions it needs are read first.
	const view = executionView(run.data as unknown as RunExecutionDataFields, watch.workflow);
	const subExecutions = view ? await readSubExecutions(subExecutionsToRead(view), watch.readExecution) : undefined;
	const outcomes = endOutcomes(run, watch.workflow, subExecutions);
	const byStore = new Map<
		StoreOpener,
		{ complete: Reservation[]; fail: Array<{ reservation: Reservation; error: string }>; hold: HoldRequest[] }
	>();
	const groupOf = (reserveNode: string) => {
		const source = watch.stores.get(reserveNode);
		if (!source) return undefined;
		let group = byStore.get(source.open);
		if (!group) byStore.set(source.open, (group = { complete: [], fail: [], hold: [] }));
		return {
			group,
			leaseMs: source.leaseMs ?? staticLeaseMs(watch.workflow, reserveNode),
			holdAtMostMs: Math.min(MAX_HOLD_MS, source.holdAtMostMs ?? MAX_HOLD_MS),
		};
	};
	const owned = (reservation: Reservation) => ({
		key: reservation.key,
		ownerToken: reservation.ownerToken,
		leaseEndsAt: reservation.leaseEndsAt,
	});
	const waitsFor = outcomes.waitTill ? Math.max(0, outcomes.waitTill.getTime() - Date.now()) : 0;
	for (const reservation of outcomes.hold) {
		const target = groupOf(reservation.reserveNode);
		target?.group.hold.push({ ...owned(reservation), holdMs: Math.min(target.holdAtMostMs, Math.round(waitsFor + target.leaseMs)) });
	}
	for (const reservation of outcomes.complete) groupOf(reservation.reserveNode)?.group.complete.push(reservation);
	for (const entry of outcomes.fail) groupOf(entry.reservation.reserveNode)?.group.fail.push(entry);
	// The trigger's event is answered by the workflow's last node: its copies get that answer back.
	const answeredByLastNode = (reservation: Reservation) => isTriggerType(watch.workflow.nodes?.[reservation.reserveNode]?.type);
	const triggers = [...watch.stores.keys()].filter((name) => isTriggerType(watch.workflow.nodes?.[name]?.type));
	const heldAtEnd = [...outcomes.complete, ...outcomes.hold, ...outcomes.fail.map(({ reservation }) => reservation)];
	const ownerTokens = heldAtEnd.map((reservation) => reservation.ownerToken);
	const started = requestOfRun(run.data.resultData.runData, (name) => watch.workflow.nodes?.[name], {
		first: triggers,
		subExecution: (run.data as RunExecutionDataFields).parentExecution != null,
	});
	const request: AnswerRequest = {
		...started.request,
		ownerTokens,
		credentialHeaders: [...watch.credentialHeaders],
		ownSecrets: [...watch.ownSecrets],
	};
	// Only a trigger's event is answered with (and stores) the last node's answer.
	const lastAnswer = triggers.length === 0 ? undefined : (storedAnswer(lastNodeAnswer(run), request) as IDataObject | undefined);
	// A failure message may quote the trigger's item, and with it the request's credentials.
	const failureText = (error: string) => withoutRequestSecrets(error, request, { everyHeaderValue: started.unnamedCredential });
	// The last node's answer is one event's at most (its first item): with several events in the execution (an Events
	// Path), whose it is cannot be told, and none is kept, never one event's answer under another's key.
	const keptAnswer = heldAtEnd.filter(answeredByLastNode).length === 1 ? lastAnswer : undefined;
	for (const [open, group] of byStore) {
		const store = await open();
		if (group.hold.length > 0) await store.hold(group.hold);
		if (group.complete.length > 0) {
			await store.complete(
				group.complete.map((reservation) => ({
					...owned(reservation),
					...(answeredByLastNode(reservation) && keptAnswer ? { response: keptAnswer } : {}),
				})),
			);
		}
		if (group.fail.length > 0)
			await store.fail(group.fail.map(({ reservation, error }) => ({ ...owned(reservation), error: failureText(error) })));
	}
	if (outcomes.stopped && outcomes.hold.length > 0) {
		return inProgressAnswer(
			'The execution was stopped while a step may still have been running; the event is held until its lease ends, then a retry runs it again.',
		);
	}
	// The trigger's key cannot be settled after the resume (the resumed run has no node of the package), and
	// the sub-workflow may still act: never failed nor completed, held until the hold ends, and said so now.
	if (outcomes.waitsThroughSubWorkflow && outcomes.hold.some(answeredByLastNode)) {
		const message = `The execution waits for the sub-workflow of "${outcomes.waitsThroughSubWorkflow}": nothing settles this event's key after it resumes, so the key is held (In Progress) until its retention ends, and a retry meanwhile does not run the event again. Use the webhook template (Idempotency Reserve, Settle beside the step) for a sub-workflow that waits.`;
		LoggerProxy.warn(`Idempotency: ${message}`);
		return inProgressAnswer(message);
	}
	// In queue mode n8n answers the delivery 200 when the execution starts waiting, before the resumed
	// run has done anything: a failure after the wait would never be retried. In progress, then: the
	// key is held, every copy meanwhile is In Progress too, and the retry after the resumed run ends is
	// a duplicate (or runs again, when it failed). One process keeps the delivery open instead.
	if (outcomes.hold.length > 0 && runsInQueueMode()) {
		const limited = outcomes.waitTill && outcomes.waitTill.getTime() < WAITS_WITHOUT_LIMIT;
		return inProgressAnswer(
			'The execution is waiting (a Wait node); the event is held until it resumes and ends. Retry later.',
			limited && outcomes.waitTill ? { waitingUntil: outcomes.waitTill.toISOString() } : {},
		);
	}
	if (outcomes.fail.length === 0) {
		// The trigger answers its own event (n8n waits for this answer): the last node's, as the copies get it.
		return triggers.length > 0 && outcomes.hold.length === 0 ? settlementAnswer('completed', lastAnswer ?? {}) : undefined;
	}
	return settlementAnswer('failed', {
		message: `The business step failed${watch.callerVerified ? `: ${redactedErrorText(failureText(outcomes.fail[0].error))}` : '.'} The key was marked failed; a retry runs the step again.`,
	});
}

/**
 * The answer of a trigger-started execution that succeeded, as n8n's "When Last Node Finishes" would give it
 * (first entry JSON): the first item of the last node's first output; undefined when it gave none.
 */
function lastNodeAnswer(run: IRun): IDataObject | undefined {
	const { lastNodeExecuted, runData } = run.data.resultData;
	if (!lastNodeExecuted) return undefined;
	const tasks = runData[lastNodeExecuted] ?? [];
	return tasks[tasks.length - 1]?.data?.main?.[0]?.[0]?.json;
}
