/**
 * JSON with object keys sorted at every level, so two bodies that differ only in key order hash
 * the same. Arrays keep their order (order is data). Used only when the raw body is not available.
 */
export function canonicalJson(value: unknown, depth = 0): string {
	if (value === null || typeof value !== 'object') {
		// undefined (and functions) have no JSON form; treat them as null so hashing never throws.
		return JSON.stringify(value) ?? 'null';
	}
	// Deeper, the recursion would end in a stack overflow: said plainly instead.
	if (depth >= MAX_CANONICAL_DEPTH) throw new TooDeepToHashError();
	if (Array.isArray(value)) {
		return `[${value.map((member) => canonicalJson(member, depth + 1)).join(',')}]`;
	}
	if (typeof (value as { toJSON?: unknown }).toJSON === 'function') {
		return canonicalJson((value as { toJSON: () => unknown }).toJSON(), depth + 1);
	}
	const entries = Object.entries(value as Record<string, unknown>)
		.filter(([, member]) => member !== undefined)
		.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
	return `{${entries.map(([name, member]) => `${JSON.stringify(name)}:${canonicalJson(member, depth + 1)}`).join(',')}}`;
}

/** Nesting canonicalJson reads: far beyond any event, far below the stack's limit. */
export const MAX_CANONICAL_DEPTH = 1_000;

export class TooDeepToHashError extends Error {
	constructor() {
		super(
			`The body is nested more than ${MAX_CANONICAL_DEPTH.toLocaleString('en-US')} levels deep: its parsed form cannot be hashed. Turn on the Webhook node's Raw Body option (its bytes are hashed as they are), or choose a Key Source that names the event.`,
		);
		this.name = 'TooDeepToHashError';
	}
}
