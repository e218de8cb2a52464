import { describeWithN8n } from '../support/n8nBaseNodes';
import { link, toInput } from '../support/settleWorkflows';
import { baseNode as node, CHARGE_BODY, EVENTS, events, triggerRedTeam, type Step } from '../support/triggerRedTeam';

/*
 * Thirty-first red-team pass: the Idempotent Webhook trigger behind workflow shapes n8n users build to "do something
 * once for the whole batch" after a per-event effect (No Operation set to Execute Once, Merge "Choose Branch → Output:
 * Empty Item"), Retry On Fail on the effect, an error output whose branch ends without an effect, and an
 * Events Path delivery carrying the same id twice. n8n 2.41.1's request path, publish check, engine and nodes; the
 * embedded store; the effect is n8n's HTTP Request calling a local API that counts what it committed per event. The
 * provider re-delivers the same signed event until answered 2xx. A row that fails breaks a promise.
 */

const SUMMARY = '{"id":"SUMMARY_ID"}';
const summaryBody = (id: string) => SUMMARY.replace('SUMMARY_ID', id);

describeWithN8n('red team 31: once-for-the-batch shapes after the effect, Retry On Fail, error branches, repeated ids', () => {
	const { effectsAt, failNext, httpCall, keyRows, postStripe, provide, refusedAtPublish, startedItems, statuses, useTrigger } =
		triggerRedTeam({
			tag: 'rt31',
			baseNodeFiles: {
				'n8n-nodes-base.aggregate': 'Transform/Aggregate/Aggregate.node.js',
			},
		});

	/** Whether the publish refusal names `name`; false when published. */
	const names = (refusal: string | false, name: string) => typeof refusal === 'string' && refusal.includes(name);

	/* (1) "Once for the batch" after the per-event charge ------------------------------------------------------------ */

	// "Charge each event, then send one summary": Charge (error output) → No Operation set to Execute Once (n8n's usual
	// way to go on with one item) → Summary (HTTP, error output). The summary item stands for every event, so its failure
	// would fail every key and the retry would charge every event again, as after Aggregate (next row): refused at
	// publish, nothing charged. Without the refusal: answers [500, 200], charges [2, 2].
	it('Events [A, B] → Charge (error output) → No Operation (Execute Once) → Summary (error output): refused at publish naming both', async () => {
		useTrigger('wf-rt31-noop-once', EVENTS);
		const step: Step = {
			nodes: [
				httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }, CHARGE_BODY),
				node('Once', 'noOp', 1, {}, { executeOnce: true }),
				httpCall('Summary', 'notify', { onError: 'continueErrorOutput' }, summaryBody('no_summary')),
			],
			connections: { Charge: { main: [link('Once'), []] }, Once: { main: [link('Summary')] }, Summary: { main: [[], []] } },
			heads: ['Charge'],
		};
		const refusal = await refusedAtPublish(step);
		const { answers } = await provide(events([{ id: 'no_a' }, { id: 'no_b' }]), step);
		expect({
			refused: names(refusal, '"Once"') && names(refusal, '"Summary"') && names(refusal, 'Execute Once'),
			answers,
			charges: effectsAt('charge', 'no_a') + effectsAt('charge', 'no_b'),
		}).toEqual({ refused: true, answers: [500, 500, 500, 500], charges: 0 });
	});

	// Control: the same with Aggregate (All Item Data) in place of the No Operation: refused at publish (joinedAfterEffect).
	it('control: Events [A, B] → Charge (error output) → Aggregate → Summary (error output): refused at publish naming Aggregate', async () => {
		useTrigger('wf-rt31-aggregate-once', EVENTS);
		const step: Step = {
			nodes: [
				httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }, CHARGE_BODY),
				node('Collect', 'aggregate', 1, { aggregate: 'aggregateAllItemData', options: {} }),
				httpCall('Summary', 'notify', { onError: 'continueErrorOutput' }, summaryBody('ag_summary')),
			],
			connections: { Charge: { main: [link('Collect'), []] }, Collect: { main: [link('Summary')] }, Summary: { main: [[], []] } },
			heads: ['Charge'],
		};
		const refusal = await refusedAtPublish(step);
		expect({ refused: names(refusal, '"Collect"') && names(refusal, '"Summary"'), refusal }).toMatchObject({ refused: true });
	});

	// "Charge and ship in parallel, wait for both, then one summary": Webhook → Charge (error output) → Merge input 1;
	// Webhook → Ship (error output) → Merge input 2; Merge "Choose Branch", Output: Empty Item (n8n's way to wait for two
	// branches) → Summary (error output). n8n's Merge pairs the empty item to every item of both inputs: one item for all
	// the events. Refused at publish. Without the refusal: charges [2, 2], ships [2, 2].
	it('Events [A, B] → Charge ‖ Ship (error outputs) → Merge (Choose Branch: Empty Item) → Summary (error output): refused at publish', async () => {
		useTrigger('wf-rt31-choose-empty', EVENTS);
		const step: Step = {
			nodes: [
				httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }, CHARGE_BODY, {}, 0),
				httpCall('Ship', 'ship', { onError: 'continueErrorOutput' }, undefined, {}, 200),
				node('Both Done', 'merge', 3.2, { mode: 'chooseBranch', chooseBranchMode: 'waitForAll', output: 'empty' }),
				httpCall('Summary', 'notify', { onError: 'continueErrorOutput' }, summaryBody('ce_summary')),
			],
			connections: {
				Charge: { main: [link('Both Done'), []] },
				Ship: { main: [toInput('Both Done', 1), []] },
				'Both Done': { main: [link('Summary')] },
				Summary: { main: [[], []] },
			},
			heads: ['Charge', 'Ship'],
		};
		const refusal = await refusedAtPublish(step);
		const { answers } = await provide(events([{ id: 'ce_a' }, { id: 'ce_b' }]), step);
		expect({
			refused: names(refusal, '"Both Done"') && names(refusal, '"Summary"'),
			answers,
			effects: ['charge', 'ship'].reduce((sum, route) => sum + effectsAt(route, 'ce_a') + effectsAt(route, 'ce_b'), 0),
		}).toEqual({ refused: true, answers: [500, 500, 500, 500], effects: 0 });
	});

	// The same join with Choose Branch → Input 1 (the charged items, each paired to its own event): accepted; the
	// per-event Notify failing once for B costs B its notice again only (B's own step failing after its effect).
	it('control: Events [A, B] → Charge ‖ Ship → Merge (Choose Branch: Input 1) → Notify (error output), Charge failing once for B: one effect each', async () => {
		useTrigger('wf-rt31-choose-input1', EVENTS);
		const step: Step = {
			nodes: [
				httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }, CHARGE_BODY, {}, 0),
				httpCall('Ship', 'ship', { onError: 'continueErrorOutput' }, undefined, {}, 200),
				node('Both Done', 'merge', 3.2, {
					mode: 'chooseBranch',
					chooseBranchMode: 'waitForAll',
					output: 'specifiedInput',
					useDataOfInput: 1,
				}),
				httpCall('Notify', 'notify', { onError: 'continueErrorOutput' }, '={{ JSON.stringify({ id: $json.id }) }}'),
			],
			connections: {
				Charge: { main: [link('Both Done'), []] },
				Ship: { main: [toInput('Both Done', 1), []] },
				'Both Done': { main: [link('Notify')] },
				Notify: { main: [[], []] },
			},
			heads: ['Charge', 'Ship'],
		};
		const refusal = await refusedAtPublish(step);
		failNext('charge:ci_b');
		const { answers } = await provide(events([{ id: 'ci_a' }, { id: 'ci_b' }]), step);
		expect({
			refusal,
			answers,
			charges: [effectsAt('charge', 'ci_a'), effectsAt('charge', 'ci_b')],
			notices: [effectsAt('notify', 'ci_a'), effectsAt('notify', 'ci_b')],
			keys: await statuses(['ci_a', 'ci_b']),
		}).toEqual({
			refusal: false,
			answers: [500, 200],
			charges: [1, 1],
			notices: [1, 1],
			keys: ['completed', 'completed'],
		});
	});

	/* (2) Retry On Fail, error branches (one event) -------------------------------------------------------------------- */

	it('one event, Charge at Stop Workflow with Retry On Fail (3 tries, 0 ms), a transient failure: retried in the run, one charge, 200, completed', async () => {
		useTrigger('wf-rt31-retry-transient');
		const step: Step = {
			nodes: [httpCall('Charge', 'charge', { retryOnFail: true, maxTries: 3, waitBetweenTries: 0 }, CHARGE_BODY)],
			heads: ['Charge'],
		};
		const refusal = await refusedAtPublish(step);
		failNext('charge:rt_a');
		const { answers } = await provide({ id: 'rt_a' }, step);
		const copy = await postStripe(JSON.stringify({ id: 'rt_a' }));
		expect({
			refusal,
			answers,
			copy: [copy.status, startedItems().length],
			charges: effectsAt('charge', 'rt_a'),
			keys: await statuses(['rt_a']),
		}).toEqual({ refusal: false, answers: [200], copy: [200, 0], charges: 1, keys: ['completed'] });
	});

	it('one event, Charge at Retry On Fail (2 tries) failing on both tries, then the provider retry: 500, then one charge, completed', async () => {
		useTrigger('wf-rt31-retry-exhausted');
		const step: Step = {
			nodes: [httpCall('Charge', 'charge', { retryOnFail: true, maxTries: 2, waitBetweenTries: 0 }, CHARGE_BODY)],
			heads: ['Charge'],
		};
		failNext('charge:rx_a', 2);
		const { answers } = await provide({ id: 'rx_a' }, step);
		expect({ answers, charges: effectsAt('charge', 'rx_a'), keys: await statuses(['rx_a']) }).toEqual({
			answers: [500, 200],
			charges: 1,
			keys: ['completed'],
		});
	});

	// Charge at Continue (using error output), its error branch ending in a No Operation ("handled"): the run is a
	// success in n8n, but the key follows the failure: 500, the retry charges once.
	it('one event, Charge (error output → No Operation "Handled", nothing else) failing once: 500, then one charge, completed', async () => {
		useTrigger('wf-rt31-error-branch-noop');
		const step: Step = {
			nodes: [httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }, CHARGE_BODY), node('Handled', 'noOp', 1, {}, {}, 200)],
			connections: { Charge: { main: [[], link('Handled')] } },
			heads: ['Charge'],
		};
		const refusal = await refusedAtPublish(step);
		failNext('charge:eb_a');
		const { answers } = await provide({ id: 'eb_a' }, step);
		expect({ refusal, answers, charges: effectsAt('charge', 'eb_a'), keys: await statuses(['eb_a']) }).toEqual({
			refusal: false,
			answers: [500, 200],
			charges: 1,
			keys: ['completed'],
		});
	});

	// Charge (error output) with Always Output Data, then Notify on the success output: when the charge fails, n8n-core
	// puts an empty item on the emptied success output, and Notify runs as if the charge had succeeded, in the failed run
	// and again on the retry. Refused at publish. Without the refusal: 500 then 200, one charge, two notices.
	it('one event, Charge (error output, Always Output Data) → Notify: refused at publish naming both', async () => {
		useTrigger('wf-rt31-always-output');
		const step: Step = {
			nodes: [
				httpCall('Charge', 'charge', { onError: 'continueErrorOutput', alwaysOutputData: true }, CHARGE_BODY),
				httpCall('Notify', 'notify', {}, '={{ JSON.stringify({ id: $("Webhook").item.json.body.id }) }}'),
			],
			connections: { Charge: { main: [link('Notify'), []] } },
			heads: ['Charge'],
		};
		const refusal = await refusedAtPublish(step);
		const { answers } = await provide({ id: 'ao_a' }, step);
		expect({
			refused: names(refusal, '"Charge"') && names(refusal, '"Notify"') && names(refusal, 'Always Output Data'),
			answers,
			effects: effectsAt('charge', 'ao_a') + effectsAt('notify', 'ao_a'),
		}).toEqual({ refused: true, answers: [500, 500, 500, 500], effects: 0 });
	});

	/* (3) Events Path: the same id twice in one delivery ---------------------------------------------------------------- */

	it('Events [X amount 1, X amount 2, Y] in one delivery → Charge (error output): X and Y charged once each, 200; a copy of the delivery: 200 duplicate, nothing run', async () => {
		useTrigger('wf-rt31-same-id', EVENTS);
		const step: Step = {
			nodes: [httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }, CHARGE_BODY), node('Done', 'noOp', 1, {})],
			connections: { Charge: { main: [link('Done'), []] } },
			heads: ['Charge'],
		};
		const delivery = events([
			{ id: 'sd_x', amount: 1 },
			{ id: 'sd_x', amount: 2 },
			{ id: 'sd_y', amount: 3 },
		]);
		const { answers } = await provide(delivery, step);
		const copy = await postStripe(JSON.stringify(delivery));
		expect({
			answers,
			copy: [copy.status, startedItems().length],
			charges: [effectsAt('charge', 'sd_x'), effectsAt('charge', 'sd_y')],
			keys: await statuses(['sd_x', 'sd_y']),
			rows: keyRows().length,
		}).toEqual({ answers: [200], copy: [200, 0], charges: [1, 1], keys: ['completed', 'completed'], rows: 2 });
	});

	it('Events [X, X] in one delivery, the charge failing once for X: 500, then X charged once', async () => {
		useTrigger('wf-rt31-same-id-fail', EVENTS);
		const step: Step = {
			nodes: [httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }, CHARGE_BODY)],
			connections: { Charge: { main: [[], []] } },
			heads: ['Charge'],
		};
		failNext('charge:sf_x');
		const { answers } = await provide(events([{ id: 'sf_x' }, { id: 'sf_x', note: 'resent' }]), step);
		expect({ answers, charges: effectsAt('charge', 'sf_x'), keys: await statuses(['sf_x']) }).toEqual({
			answers: [500, 200],
			charges: 1,
			keys: ['completed'],
		});
	});
});
