import { InvalidConfigurationError } from '../../../lib/errors';
import { readQueryParameters } from '../../../nodes/IdempotencyExecuteQuery/parameters';
import { fakeExecuteFunctions } from '../../support/fakeExecuteFunctions';

const read = (queryParameters: unknown) =>
	readQueryParameters(fakeExecuteFunctions({ parameters: { queryParameters }, items: [{ json: {} }], credential: {} }), 0);

describe('Idempotency Execute Query: Query Parameters', () => {
	it.each([
		['an array from an expression', ['evt_1', 500, null], ['evt_1', 500, null]],
		['a JSON array text', '["a, with comma", 2]', ['a, with comma', 2]],
		['nothing', '', []],
		['a single value (never split on commas)', 'a, b', ['a, b']],
		['a single number', 7, [7]],
	])('%s', (_case, value, expected) => {
		expect(read(value)).toEqual(expected);
	});

	it('refuses text that starts like a list but is not one', () => {
		expect(() => read('[1, 2')).toThrow(InvalidConfigurationError);
		expect(() => read('{"a": 1}')).not.toThrow();
		expect(() => read('[1, 2')).toThrow(/not a JSON array/);
	});
});
