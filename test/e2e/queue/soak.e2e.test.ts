// Tests 3 and 7 (queue mode): a soak through the webhook template with the cleanup template running
// every 3 s alongside → exactly one business row per event, nothing lost after retries, no answer
// outside {200, 409, 401 for the forged}, no key left processing, no execution left running; the
// cleanup deleted the keys that had expired and none of the soak's.
// e2e-tags: queue compatibility
import { harness } from '../../support/e2e/harness';
import { soak, soakSize, unexpectedAnswers } from '../../support/e2e/soak';
import { report } from '../../support/e2e/provider';
import { QUEUE } from '../../support/e2e/topology';
import { publishSaved, unpublish } from '../../support/e2e/restWorkflows';

/** soak's options: the plan's size and how many forged deliveries it adds. */
type SoakOptions = Parameters<typeof soak>[1];

describe('queue mode: soak with the cleanup template running every few seconds', () => {
	const h = harness();

	test('soak → exactly 1 business row per event; cleanup deletes expired keys and nothing live', async () => {
		// Keys whose retention ended: the cleanup must delete these (proves it really runs and deletes).
		const expired = Array.from({ length: 25 }, (_, i) => `e2e:expired:${Date.now().toString(36)}:${i}`);
		await h.appQuery(
			`INSERT INTO processed_events (key, status, first_seen, last_seen, expires_at, completed_at)
			 SELECT k, 'completed', now() - interval '40 days', now() - interval '40 days', now() - interval '1 day', now() - interval '40 days'
			   FROM unnest($1::text[]) AS k`,
			[expired],
		);
		// The full size: 5,000 deliveries of 1,000 events at 16 concurrent (about 4 minutes on an
		// idle 2-core machine, 21.5 deliveries/s); E2E_SHORT_SOAK=1 runs a tenth (QUEUE.longSoak), and
		// E2E_SOAK_* set any size.
		const size = soakSize(QUEUE.longSoak);
		const started = Date.now();
		// The cleanup on its schedule for this soak only, published as a user publishes it.
		await publishSaved(h, h.IDS.cleanupFrequent);
		let result: Awaited<ReturnType<typeof soak>>;
		try {
			result = await soak(h, { label: 'test 3+7 soak (queue mode, cleanup every 3 s)', ...size, forged: 10 } as SoakOptions);
		} finally {
			await unpublish(h, h.IDS.cleanupFrequent);
		}

		const { rows } = await h.n8nQuery(
			`SELECT count(*)::int AS runs, count(*) FILTER (WHERE status = 'success')::int AS ok,
			        count(*) FILTER (WHERE status NOT IN ('success', 'new', 'running'))::int AS failed
			   FROM execution_entity WHERE "workflowId" = $1 AND "startedAt" >= $2`,
			[h.IDS.cleanupFrequent, new Date(started)],
		);
		const leftExpired = await h.appQuery('SELECT count(*)::int AS n FROM processed_events WHERE key = ANY($1)', [expired]);
		report('test 7 cleanup during the soak', {
			cleanupRuns: rows[0].runs,
			cleanupSucceeded: rows[0].ok,
			cleanupFailed: rows[0].failed,
			expiredSeeded: expired.length,
			expiredLeft: leftExpired.rows[0].n,
		});

		expect(result.outcome).toMatchObject({ rows: size.events, doubled: 0, missing: 0, keysNotCompleted: 0, stuckExecutions: 0 });
		expect(result.stats.gaveUp).toBe(0);
		expect(unexpectedAnswers(result.run)).toEqual([]);
		expect(result.run.attempts.filter((a) => a.forged).length).toBe(10);
		expect(rows[0].runs).toBeGreaterThan(0);
		expect(rows[0].ok).toBeGreaterThan(0);
		expect(rows[0].failed).toBe(0); // the last run may still be running when this is read
		expect(leftExpired.rows[0].n).toBe(0);
	}, 900_000);
});
