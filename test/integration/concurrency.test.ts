import type { Pool } from 'pg';

import { IdempotencyStore } from '../../lib/postgres/store';
import { adminPool, freshSchema } from '../support/database';
import { raceFromProcesses } from '../support/processes';

let pool: Pool;
let schema: string;

beforeAll(async () => {
	pool = adminPool();
	schema = await freshSchema(pool, 'race');
	await new IdempotencyStore(pool, { schema, table: 'processed_events', createTable: false }).createTable();
});

afterAll(() => pool.end());

async function storedRow(key: string) {
	const { rows } = await pool.query(`select attempts, duplicate_count from ${schema}.processed_events where key = $1`, [key]);
	return rows;
}

describe('one key reserved from many processes at once', () => {
	it.each(['permanent', 'lease'] as const)(
		'200 reservations over 20 connections from 4 OS processes give exactly one New (%s mode)',
		async (mode) => {
			const key = `race-200-${mode}`;
			const results = await raceFromProcesses({ schema, key, processes: 4, connectionsPerProcess: 5, callsPerProcess: 50, mode });
			expect(results).toHaveLength(200);
			expect(new Set(results.map((result) => result.pid)).size).toBe(4);
			expect(results.filter((result) => result.outcome === 'new')).toHaveLength(1);
			const others = mode === 'lease' ? 'in_progress' : 'duplicate';
			expect(results.filter((result) => result.outcome === others)).toHaveLength(199);
			expect(await storedRow(key)).toEqual([{ attempts: 1, duplicate_count: 199 }]);
		},
	);

	it('8 simultaneous reservations (the seed\'s experiment) give exactly one New', async () => {
		const results = await raceFromProcesses({
			schema,
			key: 'race-8',
			processes: 8,
			connectionsPerProcess: 1,
			callsPerProcess: 1,
			mode: 'permanent',
		});
		expect(results.map((result) => result.outcome).sort()).toEqual(['duplicate', 'duplicate', 'duplicate', 'duplicate', 'duplicate', 'duplicate', 'duplicate', 'new']);
	});
});
