// 50 simultaneous deliveries of one event, each validly signed with its own Stripe-Signature (as
// Stripe's retries are): exactly one runs the business step, every request is answered (200 for the
// winner and for duplicates after it completed, 409 while it still runs).
const { harness, outputTaken, eventId, NODE } = require('./support/harness');

describe('simultaneous deliveries of one event', () => {
	const h = harness();

	test('50 at once → exactly 1 business row, every request answered 200 or 409', async () => {
		const mark = await h.executionMark();
		const event = { id: eventId('burst'), type: 'order.created' };
		const now = Math.floor(Date.now() / 1000);
		const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => h.deliver(h.webhookUrl, event, {}, { timestamp: now - i })));
		expect(new Set(answers.map((a) => a.signature)).size).toBe(50);
		const statuses = answers.map((a) => a.status);
		expect(statuses.every((s) => s === 200 || s === 409)).toBe(true);
		expect(answers.filter((a) => a.outcome === 'new')).toHaveLength(1);
		expect(answers.every((a) => ['new', 'duplicate', 'in_progress'].includes(a.outcome))).toBe(true);
		for (const a of answers.filter((x) => x.status === 409)) expect(a.outcome).toBe('in_progress');

		const { rows } = await h.appQuery('SELECT count(*)::int AS n FROM business_log WHERE event_key = $1', [`evt:${event.id}`]);
		expect(rows[0].n).toBe(1);

		const executions = await h.waitForExecutions(h.IDS.webhook, mark, 50, { timeoutMs: 120000 });
		expect(executions).toHaveLength(50);
		expect(executions.filter((e) => e.nodesRun.includes(NODE.business))).toHaveLength(1);
		expect(executions.every((e) => outputTaken(e, NODE.verify) === 0)).toBe(true); // all Valid
		expect(executions.filter((e) => outputTaken(e, NODE.reserve) === 0)).toHaveLength(1);
		const key = await h.appQuery('SELECT status, attempts FROM processed_events WHERE key = $1', [`evt:${event.id}`]);
		expect(key.rows).toEqual([{ status: 'completed', attempts: 1 }]);
		process.stderr.write(
			`[e2e] burst of 50: ${statuses.filter((s) => s === 200).length}×200, ${statuses.filter((s) => s === 409).length}×409, slowest ${Math.max(...answers.map((a) => a.ms))} ms\n`,
		);
	});
});
