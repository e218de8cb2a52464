import type { IExecuteFunctions } from 'n8n-workflow';

import { InvalidConfigurationError } from '../../lib/errors';

/**
 * The values for $1, $2, … of one item: an array as it is, a JSON array text parsed, nothing as
 * none, any other single value as $1. Never split on commas: a value may contain one.
 */
export function readQueryParameters(context: IExecuteFunctions, itemIndex: number): unknown[] {
	const value = context.getNodeParameter('queryParameters', itemIndex, '');
	if (Array.isArray(value)) return value;
	if (value === undefined || value === null || value === '') return [];
	if (typeof value === 'string' && value.trim().startsWith('[')) {
		const parsed = parseJson(value);
		if (!Array.isArray(parsed)) {
			throw new InvalidConfigurationError(
				'Query Parameters starts with "[" but is not a JSON array: use an expression such as {{ [$json.body.amount, $json.body.currency] }}.',
			);
		}
		return parsed;
	}
	return [value];
}

function parseJson(text: string): unknown {
	try {
		return JSON.parse(text);
	} catch {
		return undefined;
	}
}
