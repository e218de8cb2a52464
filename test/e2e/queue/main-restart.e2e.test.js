// Test 6 (queue mode): n8n main (which receives the webhooks) killed with SIGKILL and started again
// in the middle of a soak. Deliveries during the gap fail to connect (the provider retries); jobs
// already queued run on the workers; afterwards every event has exactly one business row.
const { harness } = require('../support/harness');
const { soak, soakSize, unexpectedAnswers } = require('../support/soak');
const { report } = require('../support/provider');
const { pidAlive } = require('../../../scripts/lib/processes');

describe('queue mode: n8n main restarted mid-soak', () => {
	const h = harness();

	test('main killed and restarted during a soak → nothing lost, nothing doubled', async () => {
		const size = soakSize({ events: 40, deliveries: 200 });
		const result = await soak(h, {
			label: 'test 6 n8n main restart mid-soak (queue mode)',
			...size,
			faultAfter: Math.floor(size.deliveries / 3),
			fault: () => h.control('POST /restart-main'),
		});
		const fault = result.faultResult;
		const after = await h.control('GET /processes');
		report('test 6 fault', { mainPid: `${fault.oldPid} (${fault.oldExit.signal}) → ${fault.newPid}` });

		// The fault happened: the old main died of SIGKILL, a new process serves.
		expect(fault.oldExit.signal).toBe('SIGKILL');
		expect(pidAlive(fault.oldPid)).toBe(false);
		expect(after.main.pid).toBe(fault.newPid);
		expect(after.main.alive).toBe(true);
		const served = result.run.attempts.filter((a) => a.at > result.faultAt && a.status === 200);
		expect(served.length).toBeGreaterThan(0);

		expect(result.outcome).toMatchObject({ rows: size.events, doubled: 0, missing: 0, keysNotCompleted: 0 });
		expect(result.stats.gaveUp).toBe(0);
		expect(unexpectedAnswers(result.run, { allowFailures: true })).toEqual([]);
		expect(unexpectedAnswers(result.run).every((a) => a.status === 0 || a.status >= 500)).toBe(true);
	});
});
