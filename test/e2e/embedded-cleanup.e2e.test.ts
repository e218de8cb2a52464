// The embedded cleanup template (templates/scheduled-cleanup-embedded.json) run in the real n8n as
// a user runs it from the editor: Delete Expired Keys, then Get Stats (which reads on a thread of
// its own inside n8n), on the key file n8n's nodes use. Expired keys are backdated with SQL, as the
// Postgres cleanup test does, by a process of its own on n8n's Node.
// e2e-tags: single
import { randomUUID } from 'node:crypto';
import { harness, eventId, outputItem } from '../support/e2e/harness';
import { readShippedTemplate, saveWorkflow, runFromManualTrigger } from '../support/e2e/restWorkflows';
import { storedKeys, storeStats, insertKeys } from '../support/e2e/embedded';
import type { WorkflowJson } from '../support/e2e/workflows';

const TRIGGER = 'Run Now';

/** The shipped template with a Manual Trigger beside its schedule, as a user runs it once from the editor. */
function cleanupRunNow(): WorkflowJson {
	const template = readShippedTemplate('scheduled-cleanup-embedded.json');
	const schedule = template.nodes.find((node) => node.type === 'n8n-nodes-base.scheduleTrigger');
	if (!schedule) throw new Error('the embedded cleanup template has no Schedule Trigger');
	const manual = {
		id: randomUUID(),
		name: TRIGGER,
		type: 'n8n-nodes-base.manualTrigger',
		typeVersion: 1,
		position: [schedule.position[0], schedule.position[1] + 200],
		parameters: {},
	};
	return {
		...template,
		nodes: [...template.nodes, manual],
		connections: { ...template.connections, [TRIGGER]: template.connections[schedule.name] },
	};
}

describe('templates/scheduled-cleanup-embedded.json', () => {
	const h = harness();

	test('deletes the keys whose retention ended, keeps the others, and reports the store as Get Stats reads it after', async () => {
		const prefix = `e2e-embedded-cleanup:${eventId('c')}:`;
		const expired = [`${prefix}old-1`, `${prefix}old-2`, `${prefix}old-3`];
		const kept = [`${prefix}recent-1`, `${prefix}recent-2`];
		const now = Date.now();
		const fortyDaysAgo = now - 40 * 86400000;
		insertKeys(h, [
			...expired.map((key) => [key, fortyDaysAgo, now - 10 * 86400000]),
			...kept.map((key) => [key, fortyDaysAgo, now + 30 * 86400000]),
		]);
		expect(Object.keys(await storedKeys(h, [...expired, ...kept])).sort()).toEqual([...expired, ...kept].sort());

		const { id } = await saveWorkflow(h, cleanupRunNow(), 'embedded-cleanup');
		const { execution } = await runFromManualTrigger(h, id, TRIGGER);
		expect(execution.status).toBe('success');

		// Other tests' keys in this file keep their 30-day retention: only these expired ones go.
		expect(Object.keys(await storedKeys(h, [...expired, ...kept])).sort()).toEqual([...kept].sort());
		const cleanup = outputItem(execution, 'Delete Expired Keys');
		expect(cleanup).toMatchObject({ deleted: expired.length, finished: true });
		const stats = outputItem(execution, 'Key Stats (Last 24 h)');
		const after = await storeStats(h);
		expect(stats).toMatchObject({ total: after.total, completed: after.completed, failed: after.failed });
		expect(stats.total).toBeGreaterThanOrEqual(kept.length);
		const report = outputItem(execution, 'Daily Report');
		expect(report.report).toMatch(
			/^Last 24 h: \d+ new key\(s\), \d+ duplicate\(s\), \d+ reclaim\(s\), \d+ failure\(s\)\. Now: \d+ key\(s\), \d+ failed, \d+ stuck lease\(s\)\. Deleted 3 expired/,
		);
	});
});
