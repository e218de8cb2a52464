/*
 * The settlement: how the package learns what happened to each key an execution reserved, and
 * settles it by that — never by what the step returned. Read top down:
 *
 * 1. nodeKinds.ts  what kind of node a workflow node is (the one registry; what n8n declares first)
 * 2. graph.ts      the workflow's wiring as the rules walk it
 * 3. executionRecord.ts  n8n's own record of the execution: node runs, wiring, work still to run
 * 4. trace.ts      each failed or unfinished item traced back to the reservation it descends from
 *    subExecution.ts  what n8n recorded for a sub-workflow's run: whether an output was its error output
 * 5. outcome.ts    the one rule: complete, fail, defer to the end, or hold while the execution waits
 * 6. refusals.ts   every wiring the package refuses, and why, in the user's words
 * 7. wiring.ts     the checks that find those wirings before anything is reserved or published
 * 8. executionEnd.ts  the execution-end handler that applies the rule to the store and answers
 *
 * The HTTP answers are built in lib/webhook/answers.ts.
 */

export { answerNow, assertExecutionEndVisible, holdWhileRunning, settlesAtExecutionEnd, settleWhenExecutionEnds } from './executionEnd';
export {
	readExecutionRecord,
	requestOfRun,
	wiringRecord,
	withoutSecretsOfExecution,
	withoutSecretsOfRun,
	type ExecutionView,
	type WorkflowFields,
} from './executionRecord';
export { describerOf, feedsBusinessStep, isReserveType, isSettlingOperation } from './nodeKinds';
export { keyOutcome } from './outcome';
export { REFUSALS, TRIGGER_REFUSAL } from './refusals';
export { executionReaderOf, readSubExecutions, type SubExecutionRecords } from './subExecution';
export {
	continuedFailureTest,
	heldKeyOf,
	pairingIsKnown,
	pairingThroughSubWorkflows,
	judgeExecution,
	recoveredBefore,
	keysSettledByNodes,
	originsOfInputItem,
	originsOfItem,
	reservationsOf,
	subExecutionsToRead,
	succeededItemsOf,
	type Judgement,
	type Reservation,
} from './trace';
export {
	assertSafeSettleWiring,
	checkSettleWiring,
	eventsTogetherAfterTrigger,
	refusalDownstream,
	unsettleableAfterTrigger,
} from './wiring';
