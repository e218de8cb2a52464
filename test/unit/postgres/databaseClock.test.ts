import { monotonicAt, recordDatabaseTime } from '../../../lib/store/postgres/databaseClock';

describe('the database clock as a pool last read it', () => {
	it('places a database time on the monotonic clock through the last reading, whatever the host wall clock says', () => {
		const pool = {};
		expect(monotonicAt(pool, new Date('2026-01-01T00:00:10Z'))).toBeUndefined(); // never read: unknown
		recordDatabaseTime(pool, new Date('2026-01-01T00:00:00Z'), 5_000);
		const skewed = jest.spyOn(Date, 'now').mockReturnValue(Date.parse('2031-06-01T00:00:00Z'));
		try {
			expect(monotonicAt(pool, new Date('2026-01-01T00:00:10Z'))).toBe(15_000);
			expect(monotonicAt(pool, new Date('2025-12-31T23:59:58Z'))).toBe(3_000);
		} finally {
			skewed.mockRestore();
		}
		expect(monotonicAt({}, new Date())).toBeUndefined(); // per pool
	});

	it('ignores a reading that is not a time (a row without the column, an invalid date)', () => {
		const pool = {};
		recordDatabaseTime(pool, undefined);
		recordDatabaseTime(pool, new Date('not a date'));
		recordDatabaseTime(pool, '2026-01-01T00:00:00Z');
		expect(monotonicAt(pool, new Date())).toBeUndefined();
	});
});
