/**
 * Reads the user's SQL the way Postgres's lexer splits it (src/backend/parser/scan.l): nested block
 * comments, line comments, quoted strings ('…', E'…'), dollar-quoted strings ($$…$$, $tag$…$tag$),
 * quoted identifiers ("…"), bind parameters ($1) and statement boundaries (;). Only what the node
 * needs: the first words of every statement, the highest $n, and where the key placeholder stands.
 */

/** The placeholder for the key the node derived; Postgres itself reads `$idempotency_key` as a syntax error, so no valid query has it. */
export const KEY_PLACEHOLDER = '$idempotency_key';
const KEY_PLACEHOLDER_NAME = KEY_PLACEHOLDER.slice(1);

export interface SqlScan {
	/** The first two words of each statement, lower case ('' where there is none or it is not a bare word). */
	statements: Array<[string, string]>;
	/** Offsets of every key placeholder outside comments, strings and quoted identifiers. */
	keyPlaceholders: number[];
	/** The highest $n in the text (0 when there is none). */
	highestParameter: number;
}

// Postgres's identifier characters: ASCII letters, _, and any character beyond ASCII.
const isIdentifierStart = (c: string) => /[A-Za-z_]/.test(c) || c.charCodeAt(0) >= 0x80;
const isDollarTagChar = (c: string) => isIdentifierStart(c) || (c >= '0' && c <= '9');
// Identifiers (not dollar-quote tags) may also contain $: `a$b$` is one identifier, not a quote.
const isIdentifierChar = (c: string) => isDollarTagChar(c) || c === '$';
const isDigit = (c: string) => c >= '0' && c <= '9';
// Postgres's whitespace; anything else beyond ASCII (a no-break space) is part of an identifier.
const isSpace = (c: string) => c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === '\f' || c === '\v';

/**
 * Scans `text`. `backslashEscapes` reads '…' strings as a server with standard_conforming_strings
 * off does (a backslash escapes the next character); E'…' strings always read them so.
 * Unterminated comments and strings run to the end, as Postgres would refuse the text anyway.
 */
export function scanSql(text: string, backslashEscapes: boolean): SqlScan {
	const statements: Array<[string, string]> = [];
	const keyPlaceholders: number[] = [];
	let highestParameter = 0;
	let words: string[] = [];
	let tokens = 0;
	const token = (word: string) => {
		if (tokens < 2) words.push(word);
		tokens++;
	};
	const endStatement = () => {
		if (tokens > 0) statements.push([words[0] ?? '', words[1] ?? '']);
		words = [];
		tokens = 0;
	};
	let previousWord = { text: '', end: -1 };
	let i = 0;
	while (i < text.length) {
		const c = text[i];
		const next = text[i + 1];
		const start = i;
		if (c === '-' && next === '-') {
			// A line comment ends at \n or \r.
			while (i < text.length && text[i] !== '\n' && text[i] !== '\r') i++;
			continue;
		}
		if (c === '/' && next === '*') {
			i = endOfBlockComment(text, i);
			continue;
		}
		if (isSpace(c)) {
			i++;
			continue;
		}
		if (c === ';') {
			endStatement();
			i++;
			continue;
		}
		if (c === "'") {
			const escapeString = previousWord.end === i && previousWord.text.toLowerCase() === 'e';
			i = endOfQuoted(text, i, "'", backslashEscapes || escapeString);
			token('');
		} else if (c === '"') {
			i = endOfQuoted(text, i, '"', false);
			token('');
		} else if (c === '$') {
			const tag = dollarQuoteTag(text, i);
			if (tag !== undefined) {
				const close = text.indexOf(tag, i + tag.length);
				i = close < 0 ? text.length : close + tag.length;
			} else if (isDigit(next ?? '')) {
				let end = i + 1;
				while (end < text.length && isDigit(text[end])) end++;
				highestParameter = Math.max(highestParameter, Number(text.slice(i + 1, end)));
				i = end;
			} else if (text.startsWith(KEY_PLACEHOLDER_NAME, i + 1) && !isIdentifierChar(text[i + KEY_PLACEHOLDER.length] ?? ' ')) {
				keyPlaceholders.push(i);
				i += KEY_PLACEHOLDER.length;
			} else {
				i++;
			}
			token('');
		} else if (isIdentifierStart(c)) {
			let end = i + 1;
			while (end < text.length && isIdentifierChar(text[end])) end++;
			previousWord = { text: text.slice(i, end), end };
			token(previousWord.text.toLowerCase());
			i = end;
			continue;
		} else if (isDigit(c)) {
			while (i < text.length && (isDigit(text[i]) || text[i] === '.' || text[i] === '_')) i++;
			token('');
		} else {
			i++;
			token('');
		}
		if (i === start) i++;
	}
	endStatement();
	return { statements, keyPlaceholders, highestParameter };
}

/** The index after a block comment starting at `start`; Postgres nests them. */
function endOfBlockComment(text: string, start: number): number {
	let depth = 0;
	let i = start;
	while (i < text.length) {
		if (text[i] === '/' && text[i + 1] === '*') {
			depth++;
			i += 2;
		} else if (text[i] === '*' && text[i + 1] === '/') {
			depth--;
			i += 2;
			if (depth === 0) return i;
		} else {
			i++;
		}
	}
	return text.length;
}

/** The index after a quoted string or identifier starting at `start`; a doubled quote is one character. */
function endOfQuoted(text: string, start: number, quote: string, backslashEscapes: boolean): number {
	let i = start + 1;
	while (i < text.length) {
		if (backslashEscapes && text[i] === '\\') {
			i += 2;
		} else if (text[i] === quote) {
			if (text[i + 1] === quote) i += 2;
			else return i + 1;
		} else {
			i++;
		}
	}
	return text.length;
}

/** `$$` or `$tag$` at `start` (the opening delimiter of a dollar-quoted string), or undefined. */
function dollarQuoteTag(text: string, start: number): string | undefined {
	if (text[start + 1] === '$') return '$$';
	if (!isIdentifierStart(text[start + 1] ?? '')) return undefined;
	let end = start + 2;
	while (end < text.length && isDollarTagChar(text[end])) end++;
	return text[end] === '$' ? text.slice(start, end + 1) : undefined;
}
