import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

// Two house rules a reader relies on, kept by a test because review misses them:
// - every doc page has one title: a first line `# …` and no other `#` heading;
// - comments and test names describe the code as it is, not how it came to be (HISTORY_WORDS
//   below): a reader has the code, not its history, and history belongs in git and CHANGELOG.md.
const ROOT = path.join(__dirname, '..', '..');

function filesUnder(dir: string, keep: (file: string) => boolean): string[] {
	const found: string[] = [];
	for (const name of readdirSync(dir)) {
		if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) continue;
		const full = path.join(dir, name);
		if (statSync(full).isDirectory()) found.push(...filesUnder(full, keep));
		else if (keep(full)) found.push(full);
	}
	return found;
}

const relative = (file: string) => path.relative(ROOT, file);

// ---------------------------------------------------------------------------------------------
// doc pages

const docPages = [
	...['README.md', 'CHANGELOG.md', 'BENCHMARKS.md'].map((name) => path.join(ROOT, name)),
	...filesUnder(path.join(ROOT, 'docs'), (file) => file.endsWith('.md')),
];

/** Headings outside fenced code blocks (a `#` inside a fence is code), with their line numbers. */
export function headingsOf(markdown: string): Array<{ line: number; level: number; text: string }> {
	const headings: Array<{ line: number; level: number; text: string }> = [];
	let inFence = false;
	markdown.split('\n').forEach((line, index) => {
		if (/^\s*(```|~~~)/.test(line)) inFence = !inFence;
		else if (!inFence) {
			const heading = /^(#{1,6})\s+(.*)$/.exec(line);
			if (heading) headings.push({ line: index + 1, level: heading[1].length, text: heading[2] });
		}
	});
	return headings;
}

/** What is wrong with a page's titles: '' when its first line is its one `#` heading. */
export function titleProblem(markdown: string): string {
	const firstLine = markdown.split('\n').find((line) => line.trim() !== '') ?? '';
	if (!/^# \S/.test(firstLine)) return `starts with "${firstLine.slice(0, 60)}", not a "# " title`;
	const extra = headingsOf(markdown)
		.filter((heading) => heading.level === 1)
		.slice(1);
	return extra.map((heading) => `second "# " heading at line ${heading.line}: ${heading.text}`).join('; ');
}

describe('doc pages: one title each', () => {
	it('finds the pages it checks', () => {
		expect(docPages.map(relative)).toEqual(expect.arrayContaining(['README.md', 'CHANGELOG.md', 'BENCHMARKS.md', 'docs/installing.md']));
	});

	it('every page starts with one "# " title and has no second', () => {
		const problems = docPages
			.map((file) => [relative(file), titleProblem(readFileSync(file, 'utf8'))])
			.filter(([, problem]) => problem !== '');
		expect(problems).toEqual([]);
	});

	it.each([
		['a page with one title and sections', '# Title\n\ntext\n\n## Section\n', ''],
		['a "#" inside a fenced block', '# Title\n\n```sh\n# a shell comment\n```\n', ''],
		['a page that starts with a section', '## Section\n\n### More\n', 'not a "# " title'],
		['a page with text before its title', 'text\n\n# Title\n', 'not a "# " title'],
		['a page with two titles', '# Title\n\n## Section\n\n# Another\n', 'second "# " heading at line 5'],
	])('%s', (_case, markdown, problem) => {
		if (problem === '') expect(titleProblem(markdown)).toBe('');
		else expect(titleProblem(markdown)).toContain(problem);
	});
});

// ---------------------------------------------------------------------------------------------
// comments and test names

/** Words that tell a story about the code's past instead of describing it. */
const HISTORY_WORDS: Array<[RegExp, string]> = [
	[/\bissues? ?#?\d+/i, 'an issue number'],
	[/(^|[\s(])#\d+\b/, 'an issue or pull request number'],
	[/§ ?\d/, 'a section of an issue'],
	[/\bas before\b/i, '"as before"'],
	[/\bused to\b/i, '"used to"'],
	[/\b(old|new) code\b/i, '"old code"'],
	// "session" alone is Postgres's word (a server session holds locks and prepared statements).
	[/\b(last|previous|earlier|next|work) session\b|\bsession \d/i, 'a work session'],
	[/\bno longer\b/i, '"no longer"'],
	[/\bany ?more\b/i, '"any more"'],
	[/\b(previously|formerly|until now)\b/i, 'a "before" story'],
];

/**
 * Accepted hits, each with why it is about the code and not its history: [file, text, reason].
 * Add one only with a reason.
 */
const ALLOWED: Array<[string, string, string]> = [];

interface Phrase {
	file: string;
	line: number;
	kind: 'comment' | 'test name';
	text: string;
}

const sourceRoots = ['lib', 'nodes', 'credentials', 'test', 'bench', 'scripts', 'sql', 'templates'].map((dir) => path.join(ROOT, dir));
const scriptFiles = (file: string) => /\.(ts|js|mjs|cjs)$/.test(file) && !file.endsWith('.d.ts');
const rootScripts = readdirSync(ROOT)
	.filter((name) => /\.(js|mjs|cjs)$/.test(name))
	.map((name) => path.join(ROOT, name));

const TEST_FUNCTIONS = new Set(['it', 'test', 'describe']);

/** `it`, `test.each(table)`, `describe.skip`: the test function a call's callee is built on. */
function testFunctionOf(callee: ts.Expression): { name: string; table?: ts.Expression } | undefined {
	if (ts.isIdentifier(callee)) return TEST_FUNCTIONS.has(callee.text) ? { name: callee.text } : undefined;
	if (ts.isPropertyAccessExpression(callee)) return testFunctionOf(callee.expression);
	// `(runs ? describe : describe.skip)('title', …)`
	if (ts.isParenthesizedExpression(callee)) return testFunctionOf(callee.expression);
	if (ts.isConditionalExpression(callee)) return testFunctionOf(callee.whenTrue) ?? testFunctionOf(callee.whenFalse);
	if (ts.isCallExpression(callee) && ts.isPropertyAccessExpression(callee.expression) && callee.expression.name.text === 'each') {
		const base = testFunctionOf(callee.expression.expression);
		return base && { ...base, table: callee.arguments[0] };
	}
	return undefined;
}

function literalText(node: ts.Node | undefined): string | undefined {
	if (!node) return undefined;
	if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return node.text;
	if (ts.isTemplateExpression(node)) return [node.head.text, ...node.templateSpans.map((span) => `\${…}${span.literal.text}`)].join('');
	return undefined;
}

/** Every comment, and every test title (with the case names of an `.each` table), of a script file. */
export function phrasesOfScript(file: string, source: string): Phrase[] {
	const sourceFile = ts.createSourceFile(
		file,
		source,
		ts.ScriptTarget.Latest,
		true,
		file.endsWith('.ts') ? ts.ScriptKind.TS : ts.ScriptKind.JS,
	);
	const phrases: Phrase[] = [];
	const lineOf = (pos: number) => sourceFile.getLineAndCharacterOfPosition(pos).line + 1;
	const seen = new Set<number>();
	const visit = (node: ts.Node) => {
		// Every comment is trivia around some token: before it on its own lines (leading), or after it
		// on the token's line (trailing). Reading both for each token finds all.
		if (node.getChildCount(sourceFile) === 0) {
			for (const range of [
				...(ts.getLeadingCommentRanges(source, node.pos) ?? []),
				...(ts.getTrailingCommentRanges(source, node.end) ?? []),
			]) {
				if (seen.has(range.pos)) continue;
				seen.add(range.pos);
				phrases.push({ file, line: lineOf(range.pos), kind: 'comment', text: source.slice(range.pos, range.end) });
			}
		}
		if (ts.isCallExpression(node)) {
			const test = testFunctionOf(node.expression);
			const title = test && literalText(node.arguments[0]);
			if (test && title !== undefined) {
				phrases.push({ file, line: lineOf(node.arguments[0].getStart(sourceFile)), kind: 'test name', text: title });
				if (test.table && ts.isArrayLiteralExpression(test.table)) {
					for (const row of test.table.elements) {
						const name = literalText(ts.isArrayLiteralExpression(row) ? row.elements[0] : row);
						if (name !== undefined) phrases.push({ file, line: lineOf(row.getStart(sourceFile)), kind: 'test name', text: name });
					}
				}
			}
		}
		node.getChildren(sourceFile).forEach(visit);
	};
	visit(sourceFile);
	return phrases;
}

/** Line comments of a shell script (`#`) or an SQL file (`--`). */
function phrasesOfLines(file: string, source: string, marker: RegExp): Phrase[] {
	return source.split('\n').flatMap((line, index) => {
		const comment = marker.exec(line);
		return comment ? [{ file, line: index + 1, kind: 'comment' as const, text: comment[1] }] : [];
	});
}

function phrasesOf(file: string): Phrase[] {
	const source = readFileSync(file, 'utf8');
	if (scriptFiles(file)) return phrasesOfScript(file, source);
	if (file.endsWith('.sql')) return phrasesOfLines(file, source, /--(.*)$/);
	return phrasesOfLines(file, source, /^\s*#(?!!)(.*)$/);
}

export function historyWordsIn(text: string): string[] {
	return HISTORY_WORDS.filter(([pattern]) => pattern.test(text)).map(([, what]) => what);
}

describe('comments and test names: about the code, not its history', () => {
	const files = [
		...sourceRoots.flatMap((dir) => filesUnder(dir, (file) => scriptFiles(file) || file.endsWith('.sql') || file.endsWith('.sh'))),
		...rootScripts,
		path.join(ROOT, '.ci', 'run'),
	];
	const phrases = files.flatMap(phrasesOf);

	it('reads the comments and test names of the whole tree', () => {
		const counted = (kind: Phrase['kind']) => phrases.filter((phrase) => phrase.kind === kind).length;
		expect(counted('comment')).toBeGreaterThan(1000);
		expect(counted('test name')).toBeGreaterThan(500);
		expect(files.map(relative)).toEqual(
			expect.arrayContaining(['scripts/ensure-n8n.sh', 'test/support/stack/n8nVersion.ts', 'eslint.config.mjs', '.ci/run']),
		);
	});

	it('none speaks of issues, sessions, or what the code was before', () => {
		const found = phrases
			.filter((phrase) => historyWordsIn(phrase.text).length > 0)
			.filter((phrase) => !ALLOWED.some(([file, text]) => relative(phrase.file) === file && phrase.text.includes(text)))
			.map(
				(phrase) =>
					`${relative(phrase.file)}:${phrase.line} (${phrase.kind}, ${historyWordsIn(phrase.text).join(', ')}): ${phrase.text.trim().slice(0, 160)}`,
			);
		expect(found).toEqual([]);
		const unused = ALLOWED.filter(
			([file, text]) => !phrases.some((phrase) => relative(phrase.file) === file && phrase.text.includes(text)),
		);
		expect({ unused, withoutReason: ALLOWED.filter(([, , reason]) => reason.trim().length < 20) }).toEqual({
			unused: [],
			withoutReason: [],
		});
	});

	it('finds comments of every kind and test names of every form', () => {
		const source = [
			'// a line comment, issue 10',
			'/* a block comment §3 */',
			'const x = [1, 2 /* inside a list, as before */];',
			'function f() {',
			'\treturn 1; // a trailing comment that used to say more',
			'\t// before a closing brace: the old code',
			'}',
			"describe('a suite that no longer exists', () => {",
			"\tit.each([['a case from last session', 1]])('%s', () => {});",
			'\ttest.skip(`a template title as before ${x}`, () => {});',
			'});',
			"(runs ? describe : describe.skip)('a suite that used to run', () => {});",
		].join('\n');
		const found = phrasesOfScript('example.ts', source).map((phrase) => [phrase.kind, phrase.line, historyWordsIn(phrase.text)]);
		expect(found).toEqual([
			['comment', 1, ['an issue number']],
			['comment', 2, ['a section of an issue']],
			['comment', 3, ['"as before"']],
			['comment', 5, ['"used to"']],
			['comment', 6, ['"old code"']],
			['test name', 8, ['"no longer"']],
			['test name', 9, []],
			['test name', 9, ['a work session']],
			['test name', 10, ['"as before"']],
			['test name', 12, ['"used to"']],
		]);
	});

	it.each([
		['a Postgres session', 'another session holds the row lock', []],
		['a rotation secret', 'a delivery signed with the old secret', []],
		['a key used in a test', 'the key used in the first delivery', []],
		['a CSS colour', "fill: '#555'", []],
		['an issue number', 'as issue #12 asked', ['an issue number', 'an issue or pull request number']],
	])('%s', (_case, text, words) => {
		expect(historyWordsIn(text)).toEqual(words);
	});
});
