/**
 * The exact text of a member of a JSON object (top-level, or at a path), read from the request's raw bytes.
 * JSON.parse rounds numbers beyond 2^53 (12345678901234567890 becomes 12345678901234567000), so
 * a numeric event id is only exact in the raw body. Like JSON.parse, the last of duplicate
 * members wins, and member names are compared after decoding their escapes ("\u0069d" is "id").
 * Nested objects and strings are skipped without recursion, so no body can exhaust the stack.
 */
export interface RawJsonToken {
	kind: 'number' | 'string' | 'literal' | 'object' | 'array';
	/** The token exactly as it appears in the body. */
	text: string;
}

class MalformedJson extends Error {}

const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const LITERAL = /true|false|null/y;
const HEX4 = /^[0-9a-fA-F]{4}$/;

/** The last top-level member `name` of the JSON object in `raw`; undefined when absent or when `raw` is not one JSON object. */
export function topLevelMember(raw: Buffer | string, name: string): RawJsonToken | undefined {
	return memberAtPath(raw, [name]);
}

/**
 * The value at `path` in the JSON object in `raw`: member names (the last of duplicates, as
 * JSON.parse) and array positions, one level at a time. Undefined when anything on the way is
 * absent, of another kind, or when `raw` is not one well-formed JSON object.
 */
export function memberAtPath(raw: Buffer | string, path: ReadonlyArray<string | number>): RawJsonToken | undefined {
	let text = typeof raw === 'string' ? raw : raw.toString('utf8');
	if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
	let token: RawJsonToken | undefined = { kind: 'object', text };
	try {
		for (const step of path) {
			if (typeof step === 'number') token = token.kind === 'array' ? new Reader(token.text).element(step) : undefined;
			else token = token.kind === 'object' ? new Reader(token.text).lastMember(step) : undefined;
			if (token === undefined) return undefined;
		}
		return token;
	} catch {
		// Not one well-formed JSON object: the exact id cannot be known, so the caller refuses the item.
		return undefined;
	}
}

/**
 * Every element of the JSON array at `path` in `raw` (an empty path: `raw` is the array), each
 * exactly as the body spells it, read in one pass. Undefined when anything on the way is absent, of
 * another kind, or not well-formed JSON.
 */
export function arrayElementsAt(raw: Buffer | string, path: ReadonlyArray<string | number>): RawJsonToken[] | undefined {
	let text = typeof raw === 'string' ? raw : raw.toString('utf8');
	if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
	const token = path.length === 0 ? { kind: 'array', text } : memberAtPath(text, path);
	if (token?.kind !== 'array') return undefined;
	try {
		return new Reader(token.text).elements();
	} catch {
		return undefined;
	}
}

class Reader {
	private position = 0;

	constructor(private readonly text: string) {}

	/** Every element of the JSON array that is the whole text. */
	elements(): RawJsonToken[] {
		const found: RawJsonToken[] = [];
		this.entries('[', ']', (token) => found.push(token));
		return found;
	}

	lastMember(name: string): RawJsonToken | undefined {
		let found: RawJsonToken | undefined;
		this.entries('{', '}', (token, memberName) => {
			if (memberName === name) found = token;
		});
		return found;
	}

	/** The element at `index` of the JSON array that is the whole text. */
	element(index: number): RawJsonToken | undefined {
		let found: RawJsonToken | undefined;
		let position = 0;
		this.entries('[', ']', (token) => {
			if (position++ === index) found = token;
		});
		return found;
	}

	/** Reads the object or array that is the whole text, handing each member or element to `visit`. */
	private entries(open: '{' | '[', close: '}' | ']', visit: (token: RawJsonToken, memberName?: string) => void): void {
		this.skipSpace();
		this.expect(open);
		this.skipSpace();
		if (this.peek() === close) {
			this.position++;
		} else {
			for (;;) {
				this.skipSpace();
				let memberName: string | undefined;
				if (open === '{') {
					memberName = JSON.parse(this.readString()) as string;
					this.skipSpace();
					this.expect(':');
					this.skipSpace();
				}
				const start = this.position;
				const kind = this.skipValue();
				visit({ kind, text: this.text.slice(start, this.position) }, memberName);
				this.skipSpace();
				const next = this.take();
				if (next === close) break;
				if (next !== ',') throw new MalformedJson();
			}
		}
		this.skipSpace();
		if (this.position !== this.text.length) throw new MalformedJson();
	}

	/** Skips one value of any depth; returns what kind of value it was. */
	private skipValue(): RawJsonToken['kind'] {
		const first = this.peek();
		const kind: RawJsonToken['kind'] =
			first === '{'
				? 'object'
				: first === '['
					? 'array'
					: first === '"'
						? 'string'
						: first === '-' || isDigit(first)
							? 'number'
							: 'literal';
		const open: string[] = [];
		for (;;) {
			this.skipSpace();
			const char = this.peek();
			if (char === '{' || char === '[') {
				this.position++;
				this.skipSpace();
				const close = char === '{' ? '}' : ']';
				if (this.peek() === close) {
					this.position++;
				} else {
					open.push(close);
					if (close === '}') this.memberName();
					continue;
				}
			} else {
				this.skipScalar();
			}
			// A value ended: close finished containers, or go on to the next element.
			for (;;) {
				if (open.length === 0) return kind;
				this.skipSpace();
				const next = this.take();
				const close = open[open.length - 1];
				if (next === close) {
					open.pop();
					continue;
				}
				if (next !== ',') throw new MalformedJson();
				if (close === '}') this.memberName();
				break;
			}
		}
	}

	private memberName(): void {
		this.skipSpace();
		this.readString();
		this.skipSpace();
		this.expect(':');
	}

	private skipScalar(): void {
		if (this.peek() === '"') {
			this.readString();
			return;
		}
		for (const pattern of [NUMBER, LITERAL]) {
			pattern.lastIndex = this.position;
			const match = pattern.exec(this.text);
			if (match) {
				this.position += match[0].length;
				return;
			}
		}
		throw new MalformedJson();
	}

	/** Returns the string token with its quotes, validated so JSON.parse can decode it. */
	private readString(): string {
		const start = this.position;
		this.expect('"');
		for (;;) {
			const char = this.take();
			if (char === '"') return this.text.slice(start, this.position);
			if (char === '\\') {
				const escaped = this.take();
				if (escaped === 'u') {
					if (!HEX4.test(this.text.slice(this.position, this.position + 4))) throw new MalformedJson();
					this.position += 4;
				} else if (!'"\\/bfnrt'.includes(escaped)) {
					throw new MalformedJson();
				}
			} else if (char < ' ') {
				throw new MalformedJson();
			}
		}
	}

	private skipSpace(): void {
		while (this.position < this.text.length) {
			const char = this.text[this.position];
			if (char !== ' ' && char !== '\t' && char !== '\n' && char !== '\r') return;
			this.position++;
		}
	}

	private peek(): string {
		return this.text[this.position] ?? '';
	}

	private take(): string {
		if (this.position >= this.text.length) throw new MalformedJson();
		return this.text[this.position++];
	}

	private expect(char: string): void {
		if (this.take() !== char) throw new MalformedJson();
	}
}

function isDigit(char: string): boolean {
	return char >= '0' && char <= '9';
}
