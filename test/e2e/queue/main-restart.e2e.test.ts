// Test 6 (queue mode): n8n main (which receives the webhooks) killed with SIGKILL and started again
// in the middle of a soak. Deliveries during the gap fail to connect or get 404 until the new main
// has activated the webhook again (the provider retries both, as Stripe does); jobs
// already queued run on the workers; afterwards every event has exactly one business row.
// e2e-tags: queue
import { harness } from '../../support/e2e/harness';
import { soak, soakSize, unexpectedAnswers } from '../../support/e2e/soak';
import { report } from '../../support/e2e/provider';
import { pidAlive } from '../../support/stack/childProcesses';

/** soak's options: the plan's size, the fault and when it starts. */
type SoakOptions = Parameters<typeof soak>[1];
/** What POST /restart-main answers: the old main's pid and exit, the new main's pid and start time. */
interface MainRestart {
	oldPid: number;
	oldExit: { signal: string | null };
	newPid: number;
	startMs: number;
}
/** One answered attempt of the provider, as far as this file reads it. */
interface Attempt {
	status: number;
	at: number;
	ms: number;
}
/** The n8n processes of the stack (GET /processes of its control server), as far as this file reads them. */
interface Processes {
	main: { pid: number; alive: boolean };
}

describe('queue mode: n8n main restarted mid-soak', () => {
	const h = harness();

	test('main killed and restarted during a soak → nothing lost, nothing doubled', async () => {
		const size = soakSize({ events: 30, deliveries: 150 });
		const result = await soak(h, {
			label: 'test 6 n8n main restart mid-soak (queue mode)',
			...size,
			faultAfter: Math.floor(size.deliveries / 3),
			fault: () => h.control('POST /restart-main'),
		} as SoakOptions);
		const fault = result.faultResult as unknown as MainRestart;
		const after = (await h.control('GET /processes')) as Processes;
		report('test 6 fault', { mainPid: `${fault.oldPid} (${fault.oldExit.signal}) → ${fault.newPid}` });

		// The fault happened: the old main died of SIGKILL, a new process serves.
		expect(fault.oldExit.signal).toBe('SIGKILL');
		expect(pidAlive(fault.oldPid)).toBe(false);
		expect(after.main.pid).toBe(fault.newPid);
		expect(after.main.alive).toBe(true);
		const served = result.run.attempts.filter((a) => a.at > result.faultAt! && a.status === 200);
		expect(served.length).toBeGreaterThan(0);

		expect(result.outcome).toMatchObject({ rows: size.events, doubled: 0, missing: 0, keysNotCompleted: 0 });
		expect(result.stats.gaveUp).toBe(0);
		expect(unexpectedAnswers(result.run, { allowFailures: true })).toEqual([]);
		// Before the fault only 200/409. After it: connection errors while main is down, 5xx for requests
		// whose job result the old main never got, and 404 from the new main until it has activated the
		// published workflows again (n8n registers production webhooks a few seconds after it is ready).
		const beforeFault = unexpectedAnswers(result.run).filter((a: Attempt) => a.at + a.ms < result.faultAt!);
		expect(beforeFault).toEqual([]);
		expect(unexpectedAnswers(result.run).every((a: Attempt) => a.status === 0 || a.status === 404 || a.status >= 500)).toBe(true);
		report('test 6 answers after the fault', {
			notFound: result.run.attempts.filter((a) => a.status === 404).length,
			connectionErrors: result.run.attempts.filter((a) => a.status === 0).length,
			serverErrors: result.run.attempts.filter((a) => a.status >= 500).length,
			mainStartMs: fault.startMs,
		});
	});
});
