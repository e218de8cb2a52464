import { readFileSync } from 'node:fs';
import path from 'node:path';

import type { StoreBackend } from './contract';

/**
 * The package's SQL, one folder per backend named as the backend is: `sql/<backend>/queries/` and
 * `sql/<backend>/migrations/<family>/`. From `lib/store/` (tests) and from the built
 * `dist/lib/store/` (gulp copies `sql/` to `dist/sql/`), `sql/` is two levels up.
 */
export const SQL_ROOT = path.join(__dirname, '..', '..', 'sql');

/** The folder of one backend's SQL files; every file a backend names is relative to it. */
export function backendSqlDir(backend: StoreBackend): string {
	return path.join(SQL_ROOT, backend);
}

/**
 * A part of a file between `-- <name>` and `-- </name>` comment lines that one variant of a
 * statement leaves out (the reserve statement's `full-record` columns for the Compact output).
 * The markers are comments, so the file run as it is stays the complete statement.
 */
export type SqlSection = 'full-record';

const textCache = new Map<string, string>();

/**
 * Every backend knows a statement by one name in camelCase, its file's name in snake_case:
 * `claimForReplay` is `queries/claim_for_replay.sql` (under the backend's SQL folder).
 */
export function statementFile(name: string): string {
	return `queries/${name.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`)}.sql`;
}

/**
 * A statement file as the package sends it, read once per process: without its comments (they are
 * for whoever reads the file; dropping them keeps the text small on the wire), and without the
 * `omit` section when one is named. `file` is relative to `dir`.
 */
export function readStatementText(dir: string, file: string, omit?: SqlSection): string {
	const absolute = path.join(dir, file);
	const cacheKey = omit ? `${absolute}#${omit}` : absolute;
	let text = textCache.get(cacheKey);
	if (text === undefined) {
		let lines = readFileSync(absolute, 'utf8').split('\n');
		if (omit) lines = withoutSection(lines, omit, absolute);
		text = lines
			.filter((line) => !line.trimStart().startsWith('--'))
			.join('\n')
			.trim();
		textCache.set(cacheKey, text);
	}
	return text;
}

function withoutSection(lines: string[], section: SqlSection, file: string): string[] {
	const marker = (closing: boolean) => (line: string) => line.trim() === `-- <${closing ? '/' : ''}${section}>`;
	const start = lines.findIndex(marker(false));
	const end = lines.findIndex(marker(true));
	// A programming error (a marker renamed or lost), never user input: fail loudly, not with the wrong columns.
	if (start < 0 || end < start || lines.filter(marker(false)).length !== 1) {
		throw new Error(`${file} has no single "-- <${section}>" … "-- </${section}>" section to leave out.`);
	}
	return [...lines.slice(0, start), ...lines.slice(end + 1)];
}

const renderedCache = new Map<string, string>();

/** Tables that belong to a key table and are named after it (`<table>_answer_counts`). */
export const COMPANION_TABLES = ['answer_counts'] as const;

/** Whether a suffix `rename` is given names a companion table rather than an index. */
export function isCompanionTable(suffix: string): boolean {
	return (COMPANION_TABLES as readonly string[]).includes(suffix);
}

/**
 * A statement file as the package sends it (readStatementText), with the table it is written for
 * (`defaultTable`, its indexes `<defaultTable>_<x>_idx` and its COMPANION_TABLES) renamed by
 * `rename` (given the index or companion suffix, or nothing for the table itself). Rendered once
 * per process for each `tableKey` (the configured table, as `rename` names it): statements are
 * rendered on every store call.
 */
export function renderForTable(
	dir: string,
	file: string,
	defaultTable: string,
	tableKey: string,
	rename: (suffix?: string) => string,
	omit?: SqlSection,
): string {
	const cacheKey = `${path.join(dir, file)}#${omit ?? ''}#${tableKey}`;
	let text = renderedCache.get(cacheKey);
	if (text === undefined) {
		const pattern = new RegExp(`\\b${defaultTable}(?:_([a-z_]+_idx|${COMPANION_TABLES.join('|')}))?\\b`, 'g');
		text = readStatementText(dir, file, omit).replace(pattern, (_match, suffix: string | undefined) => rename(suffix));
		renderedCache.set(cacheKey, text);
	}
	return text;
}
