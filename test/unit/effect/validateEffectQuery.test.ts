import { DatabaseError } from 'pg';

import { bindEffectQuery, parseEffectQuery, postgresRefusedCommit, validateEffectQuery } from '../../../lib/effect/oneTransaction';
import { InvalidConfigurationError } from '../../../lib/errors';

describe('validateEffectQuery', () => {
	it.each([
		'insert into payments (event_key, amount) values ($1, $2)',
		'  with x as (select 1) update t set a = $1',
		'-- a comment\nselect $1::int',
		'/* beginning */ delete from t where k = $1',
		// Transaction words inside strings, comments, quoted identifiers and dollar quotes are data.
		"insert into t (note) values ('; commit')",
		"select e'\\'; commit; --' as note",
		'select $$; commit; $$ as note',
		'select $body$ ; rollback ; $body$ as note',
		'select "commit" from t',
		'select 1 -- ; commit',
		'select 1 /* ; commit /* nested */ ; still a comment; begin */',
		// END closes a CASE; only the first word of a statement is transaction control.
		'update t set a = case when $1 then 1 else 2 end',
		// An identifier may contain $: a$b$ opens no dollar quote.
		"select 1 as a$b$, 'x'",
	])('accepts one ordinary statement: %s', (query) => {
		expect(() => validateEffectQuery(query)).not.toThrow();
	});

	it.each([
		['empty', '   ', /empty/],
		['COMMIT', 'commit', /COMMIT/],
		['ROLLBACK after a comment', '/* x */ rollback', /ROLLBACK/],
		['BEGIN after a line comment', '-- begin here\n  BEGIN', /BEGIN/],
		['END after empty statements', ';; end', /END/],
		['a savepoint', 'savepoint s1', /SAVEPOINT/],
		['START TRANSACTION', 'start transaction', /START/],
		['RELEASE SAVEPOINT', 'release savepoint s1', /RELEASE/],
		['ABORT', 'abort', /ABORT/],
		['PREPARE TRANSACTION', "prepare transaction 'x'", /PREPARE TRANSACTION/],
		['COMMIT PREPARED', "commit prepared 'x'", /COMMIT PREPARED/],
		['ROLLBACK PREPARED', "rollback prepared 'x'", /ROLLBACK PREPARED/],
		// Postgres nests block comments: the first */ does not end the comment.
		['COMMIT after nested comments', '/* /* */ SELECT */ COMMIT', /COMMIT/],
		['COMMIT as a second statement', 'select 1; commit', /COMMIT/],
		['ROLLBACK after a statement and a line comment', "insert into t values ('a;b'); -- x\n rollback", /ROLLBACK/],
		['COMMIT after a dollar-quoted string', 'select $$;$$; commit', /COMMIT/],
		['COMMIT after a quoted identifier', 'select "a;""b"; commit', /COMMIT/],
		// A line comment ends at a carriage return as well as at a newline.
		['COMMIT after a line comment ended by \\r', 'select 1; -- note\rcommit', /COMMIT/],
		// With standard_conforming_strings off, Postgres ends the string at the second quote and runs COMMIT.
		['COMMIT a backslash would reveal', "select 'a\\''; commit; --'", /COMMIT/],
		['a NUL (the protocol would cut the text there)', 'select 1\0; commit', /NUL/],
	])('refuses %s (transaction control would split the key from the effect)', (_case, query, message) => {
		expect(() => validateEffectQuery(query)).toThrow(InvalidConfigurationError);
		expect(() => validateEffectQuery(query)).toThrow(message);
	});
});

describe('bindEffectQuery', () => {
	const bind = (text: string, values: unknown[], key = 'evt:1') => bindEffectQuery(parseEffectQuery(text), values, key);

	it('binds the derived key as the parameter after the Query Parameters, wherever $idempotency_key stands', () => {
		expect(bind('insert into t (k, a) values ($idempotency_key, $1) on conflict (k) do update set k = $idempotency_key', [5])).toEqual({
			text: 'insert into t (k, a) values ($2, $1) on conflict (k) do update set k = $2',
			values: [5, 'evt:1'],
		});
		expect(bind('select $idempotency_key::text as k', [], 'sha256:ab')).toEqual({ text: 'select $1::text as k', values: ['sha256:ab'] });
	});

	it('leaves a query without the placeholder exactly as written (saved workflows keep their parameters)', () => {
		expect(bind('insert into t values ($1, $2)', ['a', 'b'])).toEqual({ text: 'insert into t values ($1, $2)', values: ['a', 'b'] });
		expect(bind('select $1', [])).toEqual({ text: 'select $1', values: [] });
	});

	it('does not touch the placeholder inside strings, comments, quoted identifiers, dollar quotes or longer names', () => {
		const text =
			'select \'$idempotency_key\', "$idempotency_key", $$ $idempotency_key $$, $idempotency_key$ x $idempotency_key$, $idempotency_keys, $idempotency_key -- $idempotency_key';
		expect(bind(text, [])).toEqual({
			text: 'select \'$idempotency_key\', "$idempotency_key", $$ $idempotency_key $$, $idempotency_key$ x $idempotency_key$, $idempotency_keys, $1 -- $idempotency_key',
			values: ['evt:1'],
		});
	});

	it('refuses a $n without a value of its own, which would otherwise be the key', () => {
		expect(() => bind('insert into t values ($idempotency_key, $1, $2)', ['a'])).toThrow(/uses \$2, but Query Parameters gives 1 value/);
	});

	it('refuses a text where the server setting standard_conforming_strings would move the placeholder', () => {
		expect(() => parseEffectQuery("select 'x\\', $idempotency_key, '")).toThrow(/standard_conforming_strings/);
	});
});

describe('postgresRefusedCommit', () => {
	const serverError = (code: string) => Object.assign(new DatabaseError('refused', 0, 'error'), { code });

	it.each(['23505', '23503', '40001', '40P01', 'P0001', '22012'])('a server error %s to COMMIT: rolled back, not committed', (code) => {
		expect(postgresRefusedCommit(serverError(code))).toBe(true);
	});

	it.each([
		['a connection exception', serverError('08006')],
		['a terminated session', serverError('57P01')],
		['a system error', serverError('58030')],
		['an internal error', serverError('XX000')],
		['statement completion unknown', serverError('40003')],
		['a socket error whose code looks like a SQLSTATE', Object.assign(new Error('write EPIPE'), { code: 'EPIPE' })],
		['no answer', new Error('Query read timeout')],
	])('%s: the outcome is unknown', (_case, error) => {
		expect(postgresRefusedCommit(error)).toBe(false);
	});
});
