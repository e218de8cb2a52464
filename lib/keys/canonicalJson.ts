/**
 * JSON with object keys sorted at every level, so two bodies that differ only in key order hash
 * the same. Arrays keep their order (order is data). Used only when the raw body is not available.
 */
export function canonicalJson(value: unknown): string {
	if (value === null || typeof value !== 'object') {
		// undefined (and functions) have no JSON form; treat them as null so hashing never throws.
		return JSON.stringify(value) ?? 'null';
	}
	if (Array.isArray(value)) {
		return `[${value.map(canonicalJson).join(',')}]`;
	}
	if (typeof (value as { toJSON?: unknown }).toJSON === 'function') {
		return canonicalJson((value as { toJSON: () => unknown }).toJSON());
	}
	const entries = Object.entries(value as Record<string, unknown>)
		.filter(([, member]) => member !== undefined)
		.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
	return `{${entries.map(([name, member]) => `${JSON.stringify(name)}:${canonicalJson(member)}`).join(',')}}`;
}
