import { validateEffectQuery } from '../../../lib/effect/oneTransaction';
import { InvalidConfigurationError } from '../../../lib/errors';

describe('validateEffectQuery', () => {
	it.each([
		'insert into payments (event_key, amount) values ($1, $2)',
		'  with x as (select 1) update t set a = $1',
		'-- a comment\nselect $1::int',
		'/* beginning */ delete from t where k = $1',
	])('accepts one ordinary statement: %s', (query) => {
		expect(() => validateEffectQuery(query)).not.toThrow();
	});

	it.each([
		['empty', '   ', /empty/],
		['COMMIT', 'commit', /COMMIT/],
		['ROLLBACK after a comment', '/* x */ rollback', /ROLLBACK/],
		['BEGIN after a line comment', '-- begin here\n  BEGIN', /BEGIN/],
		['END after empty statements', ';; end', /END/],
		['a savepoint', 'savepoint s1', /SAVEPOINT/],
		['START TRANSACTION', 'start transaction', /START/],
	])('refuses %s (transaction control would split the key from the effect)', (_case, query, message) => {
		expect(() => validateEffectQuery(query)).toThrow(InvalidConfigurationError);
		expect(() => validateEffectQuery(query)).toThrow(message);
	});
});
