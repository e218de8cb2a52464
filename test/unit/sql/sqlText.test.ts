import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { readStatementText, renderForTable } from '../../../lib/store/sqlText';

const dir = mkdtempSync(path.join(os.tmpdir(), 'sql-text-'));
const write = (name: string, text: string) => writeFileSync(path.join(dir, name), text);

describe('a statement file as the package sends it', () => {
	it('has no comments and, when asked, not the marked section', () => {
		write(
			'marked.sql',
			['-- what it does', 'select key', '-- <full-record>', ', payload', '-- </full-record>', 'from processed_events;'].join('\n'),
		);
		expect(readStatementText(dir, 'marked.sql')).toBe('select key\n, payload\nfrom processed_events;');
		expect(readStatementText(dir, 'marked.sql', 'full-record')).toBe('select key\nfrom processed_events;');
	});

	it.each([
		['no section', ['select 1;']],
		['a section not closed', ['-- <full-record>', 'select 1;']],
		['the section twice', ['-- <full-record>', 'a', '-- </full-record>', '-- <full-record>', 'b', '-- </full-record>']],
		['closed before it opens', ['-- </full-record>', 'a', '-- <full-record>']],
	])('refuses to leave out a section from a file with %s', (label, lines) => {
		const file = `${label.replace(/\W+/g, '_')}.sql`;
		write(file, lines.join('\n'));
		expect(() => readStatementText(dir, file, 'full-record')).toThrow(/has no single "-- <full-record>"/);
	});
});

describe('the table a file is written for', () => {
	it('is renamed with its indexes, and never inside another name', () => {
		write(
			'tables.sql',
			'insert into processed_events; create index processed_events_expires_idx; from processed_events_archive, my_processed_events',
		);
		const rename = (index?: string) => (index ? `"t_${index}"` : '"t"');
		expect(renderForTable(dir, 'tables.sql', 'processed_events', 't', rename)).toBe(
			'insert into "t"; create index "t_expires_idx"; from processed_events_archive, my_processed_events',
		);
	});

	it('is rendered once per table: each table its own text, the same text again for the same table', () => {
		write('once.sql', 'select * from processed_events;');
		const first = renderForTable(dir, 'once.sql', 'processed_events', 'a', () => '"a"');
		const other = renderForTable(dir, 'once.sql', 'processed_events', 'b', () => '"b"');
		const rename = jest.fn(() => '"a"');
		expect(renderForTable(dir, 'once.sql', 'processed_events', 'a', rename)).toBe(first);
		expect(rename).not.toHaveBeenCalled();
		expect([first, other]).toEqual(['select * from "a";', 'select * from "b";']);
	});
});
