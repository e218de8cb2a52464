/*
 * Every wiring the package refuses, and why, in the words the user reads: each reason once, with
 * the facts it names. The rules that find them are in wiring.ts; a refusal found before anything is
 * reserved (or, behind the trigger, before the workflow is published) costs nothing, one found
 * later may follow an effect.
 */

/** A refusal of the wiring, found before anything is reserved or claimed. */
export class UnsafeSettleWiringError extends Error {}

const SET_CONTINUE_ERROR_OUTPUT = 'Set its Settings → On Error to "Continue (using error output)"';
const SET_CONTINUE_REGULAR_OUTPUT = 'Set its Settings → On Error to "Continue (regular output)"';

/** The events one run carries: counted when it runs; before (the trigger's publish), those of one delivery. */
const theEvents = (events: number | undefined) =>
	events === undefined ? 'the events of one delivery' : `the ${events} events of this run`;

/** Each reason, by name, with the facts its message names. */
export const REFUSALS = {
	severalSettles: ({ self, settles }: { self: string; settles: string[] }) =>
		`Several Settle nodes hang off one output of "${self}" (${settles.map((name) => `"${name}"`).join(', ')}): keep one.`,
	legacyExecutionOrder: ({ settle }: { settle: string }) =>
		`"${settle}" needs the workflow setting Execution Order "v1 (recommended)" (Workflow Settings): with the legacy order n8n may run it before the business step has finished.`,
	noStepBesideSettle: ({ self, settle }: { self: string; settle: string }) =>
		`No business step is connected beside "${settle}": connect your business step to the same output of "${self}", above it.`,
	respondInsideStep: ({ node, settle }: { node: string; settle: string }) =>
		`"${node}" answers the webhook from inside the business step: remove it; "${settle}" answers once it knows whether the step succeeded.`,
	twoWaits: ({ first, second }: { first: string; second: string }) =>
		`"${first}" and "${second}" both make the execution wait: the key is held only through the first wait, so a retry during the next one would run the step again. Keep one Wait in the business step (one Wait for the whole time).`,
	waitInLoop: ({ wait }: { wait: string }) =>
		`"${wait}" is inside a loop, so it can make the execution wait more than once: the key is held only through the first wait, so a retry during the next one would run the step again. Move the Wait out of the loop, before or after it.`,
	waitFedTwice: ({ wait, feeds }: { wait: string; feeds: number }) =>
		`"${wait}" is fed by ${feeds} connections, so it can make the execution wait more than once: the key is held only through the first wait, so a retry during the next one would run the step again. Give it one incoming connection (a Merge before it).`,
	waitAfterJoin: ({ wait, join }: { wait: string; join: string }) =>
		`"${wait}" comes after "${join}", which has several inputs: n8n may run "${join}" after Settle, and then nothing would settle the key once the wait ends. Put the Wait before "${join}", or at the start of the business step.`,
	settleAboveStep: ({ settle, head, wait }: { settle: string; head: string; wait: string }) =>
		`"${settle}" sits above "${head}" on the canvas (or level with it and not to its right), so n8n runs it before the business step, and "${wait}" makes the execution wait: nothing would settle the key after the wait. Move "${settle}" below the business step's first nodes.`,
	dropsRetries: ({ node }: { node: string }) =>
		`"${node}" removes items processed in previous executions: it records an event as seen before the step has run, so the provider's retry of an event whose step failed would be dropped there and the event lost. Copies of an event are already answered without running the step: set its Operation to "Remove Items Repeated Within Current Input", or remove it.`,
	subWorkflowNotWaitedFor: ({ node }: { node: string }) =>
		`"${node}" may start a sub-workflow without waiting for it (its option "Wait For Sub-Workflow Completion" is off, or an expression), so its failure would never reach this execution and the key would be completed: turn the option on.`,
	subWorkflowFailuresLost: ({ node }: { node: string }) =>
		`"${node}" is set to On Error "Continue (using error output)": n8n fills that error output with the errors it finds on the node's first output, replacing the items the sub-workflow returned on its second — where a sub-workflow whose last node continues through its error output hands back the events that failed. Such a failure would vanish and its key would be completed. ${SET_CONTINUE_REGULAR_OUTPUT} (or "Stop Workflow" when each run carries one event): the failures the sub-workflow returns then fail their keys.`,
	subWorkflowEndsApart: ({ node, ends, events }: { node: string; ends: string[]; events?: number }) =>
		`The sub-workflow of "${node}" gets ${theEvents(events)} in one run, and its branches end in ${ends.length} nodes (${ends.map((end) => `"${end}"`).join(', ')}): n8n hands back only what the node that ran last gave, so the events another branch answered would never reach the nodes after "${node}", and their keys would be completed without them. Lead every branch into one node (a Merge) at the sub-workflow's end, set "${node}" to run once for each item, or branch after "${node}".`,
	waitAtErrorOutput: ({ wait }: { wait: string }) =>
		`"${wait}" is set to On Error "Continue (using error output)": when its wait ends n8n resumes it without its items, so the rest of the step would never run and the key would be completed. Set its Settings → On Error to "Stop Workflow" or "Continue (regular output)".`,
	waitWithSettleAfter: ({ wait, self }: { wait: string; self: string }) =>
		`"${wait}" makes the execution wait, and Settle is chained after the step: if the step then fails, no item reaches Settle and nothing would settle the key in the resumed execution. Connect Settle beside the step, to the same output of "${self}".`,
	stopsAfterWait: ({ node, wait }: { node: string; wait: string }) =>
		`"${node}" runs after "${wait}" and stops the workflow when it fails: the execution resumed after the wait would end before any Idempotency node runs, and the key would stay reserved until its lease ends. ${SET_CONTINUE_ERROR_OUTPUT} and settle after it.`,
	eventsTogether: ({
		node,
		events,
		after,
		subWorkflow,
		continueHides,
		onceForAll,
	}: {
		node: string;
		events?: number;
		after?: string;
		subWorkflow?: boolean;
		continueHides?: boolean;
		/** It runs once for all its items (Execute Once, a Code node run once for all items): continuing does not part its failure. */
		onceForAll?: boolean;
	}) =>
		`"${node}" gets ${theEvents(events)} together${after ? ` after "${after}"` : ''} and stops the workflow when it fails (On Error "Stop Workflow", n8n's default): if it failed for one event, n8n would not record which of the others had been done, so their keys could not be completed and the provider's retry would do them again. ${
			// At Continue an If, Filter or Switch hides or scatters the failure (conditionFailureHidden, failureForNoEvent).
			onceForAll
				? `It runs once for all of them, so continuing on error would not part its failure either: put Loop Over Items (batch size 1) before it${after ? `, or move it before "${after}"` : ''}.`
				: continueHides
					? `Move it before "${after ?? 'the node that may have an effect'}", or put Loop Over Items (batch size 1) before the step (each run then has one event).`
					: // At the error output n8n would lose the failures an Execute Workflow node's sub-workflow returns (subWorkflowFailuresLost).
						`${
							subWorkflow
								? `${SET_CONTINUE_REGULAR_OUTPUT} (each event's failure is then its own)`
								: `${SET_CONTINUE_ERROR_OUTPUT} (each event's failure is then its own; the error output need not be connected)`
						}, or put Loop Over Items (batch size 1) before it.`
		}`,
	conditionFailureHidden: ({ node }: { node: string }) =>
		`"${node}" continues on error: when its condition cannot be evaluated for an event (a value of another type under strict type validation, a failing expression, a date it cannot read), n8n sends the event on as if the condition had an answer (from version 2 to the false output, a Filter drops it, recording no failure; version 1 every event to the true output), so its key would be completed without the step, or the step run on every retry. Set its Settings → On Error to "Stop Workflow" (n8n's default): the failure then fails the key and the provider's retry runs the step again.`,
	failureDownFirstBranch: ({ node }: { node: string }) =>
		`"${node}" continues on error into its regular output: when it cannot classify an event (the model failed), n8n sends the event down its first category's branch as an error, the nodes there act for it while its key fails, and the provider's retry would act again. Set its Settings → On Error to "Stop Workflow" (n8n's default), or to "Continue (using error output)".`,
	toolsWithSeveralEvents: ({ node, tool, events }: { node: string; tool: string; events?: number }) =>
		`"${node}" calls "${tool}", a tool that may act, for ${theEvents(events)}: n8n's record does not keep which event each of its tool calls served once "${node}" runs again after its tools, so a failed call would be settled as every event's or another's, and the provider's retry would repeat the others' calls. Give it one event per execution (no Events Path on the trigger; one item per execution before Reserve).`,
	statementFailureHidden: ({ node }: { node: string }) =>
		`"${node}" continues on error and, when one of its statements fails, tells n8n of no failure: this node reports the statement as done (an item on its success output with the error's code and message, but no error; in a transaction the statements before it are rolled back while reported done), or leaves it out. The key would be completed without the row. Set its Settings → On Error to "Stop Workflow" (n8n's default), or, where the node offers it, Mode "Multiple Queries" (the node then fails as a whole), or use the Postgres node's current version.`,
	queryForFirstEventOnly: ({ node, events }: { node: string; events?: number }) =>
		`"${node}" (Microsoft SQL, version 1) gets ${theEvents(events)} together and runs the query of the first of them only, its result given to every event: the others' keys would be completed without their query. Update the node to its current version (it runs a query per item), or put Loop Over Items (batch size 1) before it.`,
	failureForNoEvent: ({ node, events }: { node: string; events?: number }) =>
		`"${node}" continues on error and gets ${theEvents(events)} together: when it fails for one of them (a Switch that cannot route it, a MySQL statement), it puts an error item that belongs to none of them on its first output, so every key would fail while the others' steps went on, and the provider's retry would do them again. Set its Settings → On Error to "Stop Workflow" (n8n's default), or put Loop Over Items (batch size 1) before it.`,
	joinedAfterEffect: ({
		node,
		join,
		effect,
		events,
		executeOnce,
		actsOnTheJoin,
	}: {
		node: string;
		join: string;
		effect: string;
		events?: number;
		executeOnce?: boolean;
		/** `effect` is the sub-workflow that joined the events and then acted: no split after it undoes that. */
		actsOnTheJoin?: boolean;
	}) =>
		`"${node}" gets the one item "${join}" makes of ${theEvents(events)}${executeOnce ? ` (it is set to Execute Once)` : ''} after "${effect}" has done its work for ${actsOnTheJoin ? 'all of them at once' : 'each'}: if "${node}" failed, it would fail for all of them, and the provider's retry would do "${effect}" again for each. Move "${node}" before "${effect}", ${actsOnTheJoin ? '' : executeOnce ? `turn off "${join}"'s Execute Once setting, ` : 'split the joined item again before it (Split Out), '}or put Loop Over Items (batch size 1) before the step.`,
	keptItemsPairedByPlace: ({ node, effect, events }: { node: string; effect: string; events?: number }) =>
		`"${node}" removes repeats from ${theEvents(events)} with Remove Other Fields on: n8n then pairs each item it keeps with the event at the same place among all it got, not the one it kept, and drops the events' keys. Once an earlier event is removed, what "${effect}" does for one event would be settled as another's: an event could complete without it, and the provider's retry would do it again for another. Turn off "${node}"'s Options → Remove Other Fields.`,
	stopAfterEffect: ({ node, effect, events }: { node: string; effect: string; events?: number }) =>
		`"${node}" ends the execution for ${theEvents(events)} after "${effect}" has done its work for some of them: their steps would stop half done, their keys would fail, and the provider's retry would do that work again. Put "${node}" before "${effect}", or put Loop Over Items (batch size 1) before the step (each run then has one event).`,
	retriedTogether: ({ node, events }: { node: string; events?: number }) =>
		`"${node}" gets ${theEvents(events)} together and is set to Retry On Fail: when it fails for the first of them, n8n runs it again for all of them, those it had already done too, and their effect would happen twice. Turn off its Settings → Retry On Fail, or put Loop Over Items (batch size 1) before it (each try then has one event).`,
	firstEventOnly: ({ node, after, events }: { node: string; after?: string; events?: number }) =>
		`"${node}" is set to Execute Once and gets ${theEvents(events)}: it runs for the first of them only, and ${after ? `"${after}" after it` : 'its sub-workflow'} would act or settle for that one alone, while the keys of the others would be settled as if their step had run. Turn off its Execute Once setting.`,
	executeOnceAfterEffect: ({ node, effect, events }: { node: string; effect: string; events?: number }) =>
		`"${node}" is set to Execute Once and comes after "${effect}": it runs once for ${theEvents(events)}, so if it failed, it would fail for all of them, after "${effect}" had done its work for each, and the provider's retry would do that again. Move "${node}" before "${effect}", or turn off its Execute Once setting.`,
	codeForAllAfterEffect: ({ node, effect, events, mode }: { node: string; effect: string; events?: number; mode: boolean }) =>
		`"${node}" runs once for all the items it gets${mode ? ' (Mode "Run Once for All Items", the Code node\'s default)' : ''} and comes after "${effect}": if it failed, its one error item would stand for ${theEvents(events)}, after "${effect}" had done its work for each, and the provider's retry would do that again. ${mode ? 'Set its Mode to "Run Once for Each Item", or move' : 'Move'} it before "${effect}"${mode ? '' : ', or put Loop Over Items (batch size 1) before the step'}.`,
	emptyItemAfterEffect: ({ node, empty, effect, events }: { node: string; empty: string; effect: string; events?: number }) =>
		`"${node}" comes after "${empty}", which is set to Always Output Data, ${effect === empty ? `and "${empty}" may have done its work` : `after "${effect}" has done its work`} for ${theEvents(events)}: when "${empty}" returns nothing, n8n gives one empty item for all of them, and if "${node}" then failed, it would fail for all of them and the provider's retry would do "${effect}" again for each. Turn off "${empty}"'s Settings → Always Output Data, or put Loop Over Items (batch size 1) before the step.`,
	successAfterFailure: ({ node, after }: { node: string; after: string }) =>
		`"${node}" is set to Always Output Data and sends its failures to its error output: when it fails, n8n still gives its success output one empty item, and "${after}" runs as if "${node}" had succeeded, then again on the provider's retry. Turn off "${node}"'s Settings → Always Output Data.`,
	errorSettingsDisagree: ({ node }: { node: string }) =>
		`"${node}" has On Error "Stop Workflow" and also the older Continue On Fail setting ("continueOnFail": true in the workflow's JSON, from an older n8n or written by hand): the node then stops at its first failed item while n8n goes on past it as if it had succeeded, so which events it had done cannot be told. Remove "continueOnFail" from the node (or set On Error to the behaviour you want, then save).`,
	splitFromKeylessJoin: ({ node, split, join, events }: { node: string; split: string; join: string; events?: number }) =>
		`"${node}" gets the items "${split}" splits out of "${join}", which joins ${theEvents(events)} without their keys: n8n pairs each of those items to every event, so one item's failure would fail every key, and the provider's retry would do the others again. Set "${join}" to aggregate All Item Data, which keeps each event's key.`,

	stopsBeforeLoopDone: ({ node, loop, effect }: { node: string; loop: string; effect: string }) =>
		`When "${node}" fails, it ends "${loop}" (it stops the workflow, or its error output does not lead back into the loop), whose Done output leads on: the events that already went round the loop would never reach that output, their keys would fail although "${effect}" had done its work for them, and the provider's retry would do it again. Move the nodes after the Done output of "${loop}" into the loop, before it takes the next event, and leave that output unconnected; or set "${node}"'s Settings → On Error to "Continue (using error output)" and connect that output back to "${loop}".`,

	statementsAsOne: ({ node, events }: { node: string; events?: number }) =>
		`"${node}" sends a statement for each of ${theEvents(events)} in one query (Options → Query Batching "Single Query", the default), outside any transaction: when one statement failed, those before it would stay done while n8n records one failure for all, so every key would fail and the provider's retry would run them again. Set its Options → Query Batching to "Transaction" (all or nothing) or "Independent" (each event's failure its own).`,

	stopsInLoopAfterEffect: ({ node, loop, effect }: { node: string; loop: string; effect: string }) =>
		`"${node}" stops the workflow when it fails, inside "${loop}", and "${effect}" has done its work for every event before the loop: a failure for one event would end the run with the events the loop had not reached yet half done, their keys would fail, and the provider's retry would do "${effect}" again for them. ${SET_CONTINUE_ERROR_OUTPUT}, or move "${effect}" into the loop.`,

	rowsFromKeylessSqlJoin: ({ node, merge, events }: { node: string; merge: string; events?: number }) =>
		`"${node}" gets the rows of "${merge}", whose SQL Query joins ${theEvents(events)}: n8n pairs each row to every event (Merge version 3; a query not starting with SELECT, or with its column list on several lines; GROUP BY, DISTINCT or UNION), and the rows carry no key, so one row's failure would fail every key, and the provider's retry would do the others again. Select the events' key in the query (input1.idempotency), or use a Merge node of version 3.1 or later with a plain SELECT whose column list is on one line.`,

	// Behind the Idempotent Webhook trigger: the key of its event must follow what happens.
	waitsBehindTrigger: ({ node }: { node: string }) =>
		`"${node}" makes the execution wait (n8n resumes it later as a new run), and the key of an event this trigger started cannot be settled after a wait.`,
	subWorkflowWaitsBehindTrigger: ({ node, inner }: { node: string; inner: string }) =>
		`"${node}" runs a sub-workflow whose node "${inner}" makes the execution wait (n8n resumes it later as a new run), and the key of an event this trigger started cannot be settled after a wait.`,
	respondBehindTrigger: ({ node }: { node: string }) =>
		`"${node}" answers the webhook, which this trigger answers itself once the workflow has ended (the answer the event's copies get back).`,
	// The inbox's retries belong to the workflow: one trigger must start them, or an event could run behind the other's nodes.
	keyFromMissingBody: ({ method }: { method: string }) =>
		`The trigger listens to ${method} requests, which carry no body, and its Key Source reads the body: every delivery would be refused (503 key_refused), and none would run. Set Key Source to one that names the event in the request: Field with a query parameter (\`query.<name>\`) or Header.`,
	secondTriggerBesideInbox: ({ other }: { other: string }) =>
		`"${other}" is a second Idempotent Webhook in a workflow whose trigger answers At Once: the package starts the retries of accepted events through this workflow's one Idempotent Webhook. Put the other trigger in a workflow of its own.`,
	secondTriggerSharingKeys: ({ other }: { other: string }) =>
		`"${other}" is another Idempotent Webhook in this workflow with the same keys (no Scope on either): an event id both senders use (order 1001 of each) would be one key, and the second sender's event would be answered as a copy of the first's and never run. Give each trigger its own Scope (Options → Scope, e.g. "shop" and "office"); if both receive the same sender's events, give both the same Scope.`,
	refusedDownstream: ({ node, reason }: { node: string; reason: string }) =>
		`"${node}" would refuse every event after the nodes before it had run: ${reason}`,
} as const;

export type RefusalReason = keyof typeof REFUSALS;

/** The refusal for one reason, as the error the wiring checks throw. */
export function refusal<R extends RefusalReason>(reason: R, facts: Parameters<(typeof REFUSALS)[R]>[0]): UnsafeSettleWiringError {
	return new UnsafeSettleWiringError((REFUSALS[reason] as (facts: Parameters<(typeof REFUSALS)[R]>[0]) => string)(facts));
}

/** What the trigger adds to a refusal: where it was found, and the fix for the whole workflow. */
export const TRIGGER_REFUSAL = {
	atPublish: (reason: string) => `${reason} The workflow was not published.`,
	atRun: (reason: string) => `${reason} Nothing ran; the key is marked failed.`,
	fix: 'Change the workflow as the message says, or use the webhook template (Idempotency Reserve and Settle) for a workflow that waits or answers with Respond to Webhook.',
} as const;

/** Refusals of an n8n that does not give the package what the rules read: nothing is reserved or settled on a guess. */
export const N8N_REFUSALS = {
	noExecutionEnd: {
		message:
			'This n8n version does not let the node learn how the execution ends, so it could not settle the key by what happened. Nothing was reserved.',
		description: 'The package supports the n8n versions its README lists.',
	},
	noExecutionRecord: {
		message:
			"This n8n version does not let the node read the execution's record, so it cannot tell whether the business step succeeded; nothing was settled.",
		description: "Use Complete on the business step's success output and Mark Failed on its error output instead.",
	},
} as const;
