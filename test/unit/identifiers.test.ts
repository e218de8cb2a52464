import { InvalidConfigurationError } from '../../lib/errors';
import { quoteIdentifier, tableRef } from '../../lib/identifiers';

describe('quoteIdentifier', () => {
	it.each(['processed_events', 'Events2', '_private'])('quotes %s', (name) => {
		expect(quoteIdentifier(name, 'table')).toBe(`"${name}"`);
	});

	it.each([
		'',
		'1events',
		'events; drop table users; --',
		'events"; drop table users; --',
		'public.events',
		'ev ents',
		'évents',
		"events'",
		'x'.repeat(41),
	])('rejects %p', (name) => {
		expect(() => quoteIdentifier(name, 'table')).toThrow(InvalidConfigurationError);
	});

	it('allows longer schema names than table names (index names append to the table name)', () => {
		expect(quoteIdentifier('s'.repeat(63), 'schema')).toBe(`"${'s'.repeat(63)}"`);
		expect(() => quoteIdentifier('s'.repeat(64), 'schema')).toThrow(InvalidConfigurationError);
	});
});

describe('tableRef', () => {
	it('qualifies and derives quoted index names', () => {
		const ref = tableRef('billing', 'stripe_keys');
		expect(ref.qualified).toBe('"billing"."stripe_keys"');
		expect(ref.indexName('first_seen_idx')).toBe('"stripe_keys_first_seen_idx"');
	});
});
