import { InvalidConfigurationError } from '../errors';

/** One step of a field path: a member name, or a position in an array. */
export type PathStep = string | number;

// Names that reach an object's prototype machinery, never data: refused rather than traversed.
const PROTOTYPE_NAMES = new Set(['__proto__', 'prototype', 'constructor']);
const STEP = /^([^.[\]]+)((?:\[\d+\])*)$/;
const INDEX = /\[(\d+)\]/g;

/**
 * Parses a field path such as `body.data.object.id` or `body.items[0].id` (dots between member
 * names, `[n]` for array positions). Throws InvalidConfigurationError for anything else.
 */
export function parseFieldPath(path: string): readonly PathStep[] {
	// A batch reads the same path for every item: parse it once.
	if (path === lastParsed?.path) return lastParsed.steps;
	const steps = parse(path);
	lastParsed = { path, steps };
	return steps;
}

let lastParsed: { path: string; steps: readonly PathStep[] } | undefined;

function parse(path: string): PathStep[] {
	if (typeof path !== 'string' || path.trim() === '')
		throw new InvalidConfigurationError('Key source "Field" needs a field path, e.g. body.data.object.id.');
	const steps: PathStep[] = [];
	for (const part of path.trim().split('.')) {
		const match = STEP.exec(part);
		if (!match) {
			throw new InvalidConfigurationError(
				`The field path ${JSON.stringify(path)} is not valid: use member names separated by dots and [n] for array positions, e.g. body.data.object.id or body.items[0].id.`,
			);
		}
		const name = match[1];
		if (PROTOTYPE_NAMES.has(name)) {
			throw new InvalidConfigurationError(`The field path ${JSON.stringify(path)} names "${name}", which is not data; it is refused.`);
		}
		steps.push(name);
		for (const [, index] of match[2].matchAll(INDEX)) {
			const position = Number(index);
			if (!Number.isSafeInteger(position))
				throw new InvalidConfigurationError(`The array position [${index}] in the field path is too large.`);
			steps.push(position);
		}
	}
	return steps;
}

/** The value at `steps` in `root`, reading only the objects' own members; undefined when absent. */
export function valueAtPath(root: unknown, steps: readonly PathStep[]): unknown {
	let value = root;
	for (const step of steps) {
		if (typeof step === 'number') {
			if (!Array.isArray(value) || step >= value.length) return undefined;
			value = value[step];
		} else {
			if (value === null || typeof value !== 'object' || Array.isArray(value) || !Object.hasOwn(value, step)) return undefined;
			value = (value as Record<string, unknown>)[step];
		}
	}
	return value;
}
