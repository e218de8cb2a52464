// The cleanup template (a Manual Trigger copy, run with `n8n execute --id`) deletes keys past the
// 30-day retention and keeps recent ones.
// e2e-tags: single
import { harness, eventId, outputItem } from '../support/e2e/harness';

describe('templates/scheduled-cleanup.json', () => {
	const h = harness();

	test('removes keys past retention (backdated with SQL) and keeps recent ones', async () => {
		const prefix = `e2e-cleanup:${eventId('c')}:`;
		const old = [`${prefix}old-1`, `${prefix}old-2`, `${prefix}old-3`];
		const expired = `${prefix}expired`; // recent, but its own retention ended
		const recent = [`${prefix}recent-1`, `${prefix}recent-2`];
		const leased = `${prefix}old-but-leased`; // old, yet under a running lease: never deleted
		await h.appQuery(
			`INSERT INTO processed_events (key, first_seen, last_seen, status, expires_at)
			 SELECT k, now() - interval '40 days', now() - interval '40 days', 'completed', now() - interval '10 days' FROM unnest($1::text[]) k`,
			[old],
		);
		await h.appQuery(`INSERT INTO processed_events (key, status, expires_at) VALUES ($1, 'completed', now() - interval '1 minute')`, [
			expired,
		]);
		await h.appQuery(
			`INSERT INTO processed_events (key, status, expires_at) SELECT k, 'completed', now() + interval '30 days' FROM unnest($1::text[]) k`,
			[recent],
		);
		await h.appQuery(
			`INSERT INTO processed_events (key, first_seen, status, locked_until, owner_token)
			 VALUES ($1, now() - interval '40 days', 'processing', now() + interval '5 minutes', gen_random_uuid())`,
			[leased],
		);
		const before = await h.appQuery('SELECT count(*)::int AS n FROM processed_events');

		const mark = await h.executionMark();
		const run = await h.cli(['execute', `--id=${h.IDS.cleanupManual}`]);
		if (!run.stdout.includes('Execution was successful')) {
			throw new Error(`n8n execute failed (exit ${run.code}):\n${(run.stdout + run.stderr).slice(-3000)}`);
		}

		const left = await h.appQuery('SELECT key FROM processed_events WHERE key LIKE $1 ORDER BY key', [`${prefix}%`]);
		expect(left.rows.map((r: { key: string }) => r.key).sort()).toEqual([leased, ...recent].sort());
		const after = await h.appQuery('SELECT count(*)::int AS n FROM processed_events');
		// Only this test's expired rows went (other tests' recent keys stay).
		expect(before.rows[0].n - after.rows[0].n).toBe(old.length + 1);

		// The summary item, from the CLI's output and from n8n's stored execution.
		const [execution] = await h.waitForExecutions(h.IDS.cleanupManual, mark, 1);
		expect(execution.status).toBe('success');
		const summary = outputItem(execution, 'Summary');
		expect(summary).toMatchObject({ deleted: old.length + 1, finished: true });
		expect(summary.summary).toMatch(/^Deleted 4 expired idempotency key\(s\)/);
		const cleanup = outputItem(execution, 'Delete Expired Keys');
		expect(cleanup).toMatchObject({ deleted: 4, finished: true });
		expect(typeof cleanup.batches).toBe('number');
		expect(typeof cleanup.durationMs).toBe('number');
		expect(run.stdout).toContain('"deleted": 4');

		// Then the daily report (Get Stats over the last 24 h), after the cleanup's own summary.
		const report = outputItem(execution, 'Daily Report');
		expect(report.report).toMatch(
			/^Last 24 h: \d+ new key\(s\), \d+ duplicate\(s\), \d+ reclaim\(s\), \d+ failure\(s\)\. Now: \d+ key\(s\), \d+ failed, \d+ stuck lease\(s\)\. Deleted 4 expired/,
		);
		const stats = outputItem(execution, 'Key Stats (Last 24 h)');
		expect(stats.total).toBe(after.rows[0].n);
	});
});
