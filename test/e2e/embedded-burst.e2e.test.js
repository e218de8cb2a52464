// 100 simultaneous deliveries of one event to templates/idempotent-webhook-embedded.json (Store:
// Embedded): exactly one API call, one New, every other answer a Duplicate (200) or In Progress
// (409). In queue mode the deliveries spread over two workers that share main's n8n folder: two OS
// processes reserving in one store file at the same moment.
const { harness, outputTaken, eventId } = require('./support/harness');
const { EMB, publishEmbedded, useWorkerFolders, keyStates } = require('./support/embedded');
const { startSink } = require('./support/sink');

const BURST = 100;

describe('a burst of one event on the embedded store', () => {
	const h = harness();
	let api;
	let webhook;

	beforeAll(async () => {
		await useWorkerFolders(h, 'shared');
		api = await startSink();
		webhook = await publishEmbedded(h, 'emb-burst', { apiUrl: api.url });
	});
	afterAll(async () => api?.close());

	test(`${BURST} simultaneous deliveries of one event → exactly one effect, every answer 200 or 409`, async () => {
		const mark = await h.executionMark();
		const event = { id: eventId('emb_burst'), type: 'order.created' };
		const key = `evt:${event.id}`;
		const callsBefore = api.total();
		const now = Math.floor(Date.now() / 1000);
		const answers = await Promise.all(Array.from({ length: BURST }, (_, i) => h.deliver(webhook.url, event, {}, { timestamp: now - (i % 240) })));

		const statuses = answers.map((a) => a.status);
		expect(statuses.filter((s) => s !== 200 && s !== 409)).toEqual([]);
		expect(answers.filter((a) => a.outcome === 'new')).toHaveLength(1);
		expect(answers.every((a) => ['new', 'duplicate', 'in_progress'].includes(a.outcome))).toBe(true);
		for (const a of answers.filter((x) => x.status === 409)) expect(a.outcome).toBe('in_progress');
		expect(api.calls(key)).toBe(1);
		expect(api.total() - callsBefore).toBe(1);
		expect(await keyStates(h, [key])).toEqual({ [key]: { status: 'completed', attempts: 1, duplicates: BURST - 1 } });

		const executions = await h.waitForExecutions(webhook.workflowId, mark, BURST, { timeoutMs: 180000 });
		expect(executions).toHaveLength(BURST);
		expect(executions.filter((e) => e.nodesRun.includes(EMB.business))).toHaveLength(1);
		expect(executions.filter((e) => outputTaken(e, EMB.reserve) === 0)).toHaveLength(1);
		const workers = h.topology === 'queue' ? await h.control('GET /processes') : null;
		process.stderr.write(
			`[e2e] embedded burst of ${BURST}: ${statuses.filter((s) => s === 200).length}×200, ${statuses.filter((s) => s === 409).length}×409, slowest ${Math.max(...answers.map((a) => a.ms))} ms${workers ? `, workers in ${workers.workerFolders} folders` : ''}\n`,
		);
	});
});
