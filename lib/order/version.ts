import { InvalidVersionError } from './errors';

/**
 * An object's version as an exact decimal string (what Postgres `numeric` stores), never a float:
 *
 * | input                                            | version                                  |
 * |--------------------------------------------------|------------------------------------------|
 * | JS number, finite, at most 2^53 − 1 in size       | its decimal text (`1732950000`, `2.5`)   |
 * | bigint                                            | its decimal text, any size               |
 * | string of digits, optional sign and fraction      | the same number, exact, any size (≤ 100 digits) |
 * | ISO 8601 date-time with a zone (`Z`, `+02:00`)    | its Unix time in seconds, exact to the nanosecond |
 * | JS Date, or a Luxon DateTime (n8n's `$now`)       | its Unix time in seconds                 |
 *
 * Date-times count in seconds so they compare correctly with Unix timestamps such as Stripe's
 * `created`. A JS number beyond 2^53 may already have been rounded when the JSON was parsed, so it
 * is refused (pass such values as text). Anything else — NaN, Infinity, empty, a date without a
 * zone, booleans, objects — throws InvalidVersionError with the reason.
 */
export function parseVersion(value: unknown): string {
	if (typeof value === 'number') return fromNumber(value);
	if (typeof value === 'bigint') return normalizeDecimal(value.toString());
	if (value instanceof Date) return fromEpochMilliseconds(value.getTime());
	if (isLuxonDateTime(value)) return fromIsoDateTime(value.toISO() ?? '');
	if (typeof value === 'string') {
		const text = value.trim();
		if (text === '') throw new InvalidVersionError('The version is empty.');
		if (DECIMAL.test(text)) return normalizeDecimal(text);
		if (/^\d{4}-\d{2}-\d{2}/.test(text)) return fromIsoDateTime(text);
		throw new InvalidVersionError(
			`The version ${JSON.stringify(text.slice(0, 40))} is neither a number nor an ISO 8601 date-time with a time zone.`,
		);
	}
	if (value === undefined || value === null) throw new InvalidVersionError('The version is missing (the expression gave nothing).');
	throw new InvalidVersionError(`The version must be a number or a date-time, not ${Array.isArray(value) ? 'an array' : typeof value}.`);
}

/** Compares two versions from parseVersion exactly: negative, zero or positive like a sort comparator. */
export function compareVersions(a: string, b: string): number {
	const negativeA = a.startsWith('-');
	const negativeB = b.startsWith('-');
	if (negativeA !== negativeB) return negativeA ? -1 : 1;
	const magnitude = compareMagnitudes(negativeA ? a.slice(1) : a, negativeB ? b.slice(1) : b);
	return negativeA ? -magnitude : magnitude;
}

// Up to 100 integer digits and 30 fraction digits: far beyond any real version, small enough that
// Postgres never refuses the value (which would fail the whole batch instead of one item).
const DECIMAL = /^[+-]?\d{1,100}(\.\d{1,30})?$/;
const ISO_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?(?:([Zz])|([+-])(\d{2})(?::?(\d{2}))?)$/;

function fromNumber(value: number): string {
	if (Number.isNaN(value)) throw new InvalidVersionError('The version is NaN (not a number).');
	if (!Number.isFinite(value)) throw new InvalidVersionError('The version is infinite.');
	if (Math.abs(value) > Number.MAX_SAFE_INTEGER) {
		throw new InvalidVersionError(
			`The version ${value} is beyond 2^53 and may already have been rounded; pass it as text (e.g. a string field) to keep it exact.`,
		);
	}
	// Shortest round-trip text; below 1e-6 it comes in exponent form ("1.5e-7"), spelled out here.
	const text = String(value);
	const exponent = /^(-?)(\d)(?:\.(\d+))?e-(\d+)$/.exec(text);
	if (!exponent) return normalizeDecimal(text);
	const [, sign, firstDigit, moreDigits = '', zeros] = exponent;
	return normalizeDecimal(`${sign}0.${'0'.repeat(Number(zeros) - 1)}${firstDigit}${moreDigits}`);
}

function fromIsoDateTime(text: string): string {
	const match = ISO_DATE_TIME.exec(text);
	if (!match) {
		throw new InvalidVersionError(
			`The version ${JSON.stringify(text.slice(0, 40))} is not an ISO 8601 date-time with a time zone (e.g. 2026-11-30T10:15:00Z): without a zone its order would depend on the database's time zone.`,
		);
	}
	const [, year, month, day, hour, minute, second = '00', fraction = '', zulu, sign, offsetHours = '00', offsetMinutes = '00'] = match;
	const fields = [Number(year), Number(month), Number(day), Number(hour), Number(minute), Number(second)];
	const [y, mo, d, h, mi, s] = fields;
	const utc = Date.UTC(y, mo - 1, d, h, mi, s);
	const check = new Date(utc);
	const valid =
		y >= 1 &&
		check.getUTCFullYear() === y &&
		check.getUTCMonth() === mo - 1 &&
		check.getUTCDate() === d &&
		h <= 23 &&
		mi <= 59 &&
		s <= 59 &&
		Number(offsetHours) <= 15 &&
		Number(offsetMinutes) <= 59;
	if (!valid) throw new InvalidVersionError(`The version ${JSON.stringify(text.slice(0, 40))} is not a real date and time.`);
	// Date.UTC maps years 0–99 to 1900–1999; refused above by comparing the year back.
	const offsetSeconds = zulu ? 0 : (sign === '-' ? -1 : 1) * (Number(offsetHours) * 3600 + Number(offsetMinutes) * 60);
	const nanoseconds = BigInt(utc / 1000 - offsetSeconds) * 1_000_000_000n + BigInt(fraction.padEnd(9, '0'));
	return fromNanoseconds(nanoseconds);
}

function fromEpochMilliseconds(milliseconds: number): string {
	if (!Number.isFinite(milliseconds)) throw new InvalidVersionError('The version is an invalid date.');
	return fromNanoseconds(BigInt(milliseconds) * 1_000_000n);
}

function fromNanoseconds(nanoseconds: bigint): string {
	const negative = nanoseconds < 0n;
	const magnitude = negative ? -nanoseconds : nanoseconds;
	const whole = magnitude / 1_000_000_000n;
	const fraction = (magnitude % 1_000_000_000n).toString().padStart(9, '0');
	return normalizeDecimal(`${negative ? '-' : ''}${whole}.${fraction}`);
}

/** One spelling per value: no plus sign, no leading or trailing zeros, no "-0". */
function normalizeDecimal(text: string): string {
	const negative = text.startsWith('-');
	const unsigned = text.replace(/^[+-]/, '');
	const [integerPart, fractionPart = ''] = unsigned.split('.');
	const integer = integerPart.replace(/^0+(?=\d)/, '');
	const fraction = fractionPart.replace(/0+$/, '');
	const body = fraction ? `${integer}.${fraction}` : integer;
	return negative && body !== '0' ? `-${body}` : body;
}

function compareMagnitudes(a: string, b: string): number {
	const [integerA, fractionA = ''] = a.split('.');
	const [integerB, fractionB = ''] = b.split('.');
	if (integerA.length !== integerB.length) return integerA.length - integerB.length;
	if (integerA !== integerB) return integerA < integerB ? -1 : 1;
	const width = Math.max(fractionA.length, fractionB.length);
	const paddedA = fractionA.padEnd(width, '0');
	const paddedB = fractionB.padEnd(width, '0');
	return paddedA === paddedB ? 0 : paddedA < paddedB ? -1 : 1;
}

function isLuxonDateTime(value: unknown): value is { toISO: () => string | null; isLuxonDateTime: true } {
	return typeof value === 'object' && value !== null && (value as { isLuxonDateTime?: unknown }).isLuxonDateTime === true;
}
