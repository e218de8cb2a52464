// What a rejected (forged, unsigned, tampered, stale) delivery must look like in the webhook
// template, and the row counts that prove it wrote nothing: shared by the signature tests and the
// production checklist. Uses jest's global `expect`.
import { outputTaken, outputItem, NODE, type DeliveryAnswer, type Execution, type Harness } from './harness';

/** The checks of rejected deliveries against one stack. */
export interface Rejections {
	/** Rows in the keys table and the business table, whole tables. */
	counts: () => Promise<{ keys: number; business: number }>;
	/** Rows one event key left in each table. */
	traces: (key: string) => Promise<{ keys: number | null; business: number | null }>;
	/** Every rejected delivery: 401, the reason in a small JSON body, nothing about the secret. */
	expectRejected: (answer: DeliveryAnswer, reason: string) => void;
	/** The rejected executions: Verify sent the item to Invalid, only Respond 401 ran after it. */
	expectRejectedRuns: (executions: Execution[], reasons: string[]) => void;
}

export function rejections(h: Harness): Rejections {
	return {
		counts: async () => {
			const { rows } = await h.appQuery(
				'SELECT (SELECT count(*)::int FROM processed_events) AS keys, (SELECT count(*)::int FROM business_log) AS business',
			);
			return rows[0];
		},
		traces: async (key) => ({
			keys: (await h.appQuery('SELECT 1 FROM processed_events WHERE key = $1', [key])).rowCount,
			business: (await h.appQuery('SELECT 1 FROM business_log WHERE event_key = $1', [key])).rowCount,
		}),
		expectRejected: (answer, reason) => {
			expect([answer.status, answer.outcome]).toEqual([401, 'invalid_signature']);
			expect(answer.json).toEqual({ error: 'invalid_signature', reason });
			expect(answer.text).not.toContain(h.secret);
			expect(answer.text).not.toMatch(/whsec_|secret/i);
		},
		expectRejectedRuns: (executions, reasons) => {
			expect(executions).toHaveLength(reasons.length);
			executions.forEach((execution, i) => {
				expect(execution.status).toBe('success');
				expect(outputTaken(execution, NODE.verify)).toBe(1);
				expect(execution.nodesRun.sort()).toEqual(['Webhook', NODE.verify, NODE.couldNotVerify, NODE.respond401].sort());
				expect(outputItem(execution, NODE.verify, 1).signature).toMatchObject({ valid: false, scheme: 'stripe', reason: reasons[i] });
			});
		},
	};
}
