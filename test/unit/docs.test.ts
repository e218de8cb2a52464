import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

// Every relative link in the README and docs/ must reach a file, and every #anchor a heading of
// that file (GitHub's slug rules), so moving a section cannot silently break a link. The README
// also stays a user's page: the depth lives in docs/.
const ROOT = path.join(__dirname, '..', '..');
const DOCS = path.join(ROOT, 'docs');
const markdownFiles = [
	path.join(ROOT, 'README.md'),
	path.join(ROOT, 'BENCHMARKS.md'),
	...readdirSync(DOCS)
		.filter((name) => name.endsWith('.md'))
		.map((name) => path.join(DOCS, name)),
];

/** The lines outside fenced code blocks (a `#` or `](` inside a fence is code, not Markdown). */
function proseLines(markdown: string): string[] {
	let inFence = false;
	return markdown.split('\n').map((line) => {
		if (/^\s*(```|~~~)/.test(line)) {
			inFence = !inFence;
			return '';
		}
		return inFence ? '' : line;
	});
}

/** GitHub's heading anchor: rendered text, lower case, punctuation dropped, spaces to hyphens. */
export function githubSlug(heading: string): string {
	const text = heading
		.replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
		.replace(/<[^>]+>/g, '')
		.replace(/[`*]/g, '');
	return text
		.trim()
		.toLowerCase()
		.replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
		.replace(/ /g, '-');
}

function anchorsOf(file: string): Set<string> {
	const seen = new Map<string, number>();
	const anchors = new Set<string>();
	for (const line of proseLines(readFileSync(file, 'utf8'))) {
		const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
		if (!heading) continue;
		const slug = githubSlug(heading[1]);
		const count = seen.get(slug) ?? 0;
		seen.set(slug, count + 1);
		anchors.add(count === 0 ? slug : `${slug}-${count}`);
	}
	return anchors;
}

interface Link {
	from: string;
	line: number;
	target: string;
}

function localLinks(file: string): Link[] {
	const links: Link[] = [];
	proseLines(readFileSync(file, 'utf8')).forEach((line, index) => {
		const withoutCode = line.replace(/`[^`]*`/g, '');
		for (const match of withoutCode.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
			const target = match[1];
			if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
			links.push({ from: path.relative(ROOT, file), line: index + 1, target });
		}
	});
	return links;
}

describe('docs: relative links', () => {
	const links = markdownFiles.flatMap(localLinks);

	it('finds the links it checks', () => {
		expect(links.length).toBeGreaterThan(50);
		expect(links.some((link) => link.target.includes('#'))).toBe(true);
	});

	it('reach an existing file and, for #anchors, an existing heading', () => {
		const broken: string[] = [];
		for (const link of links) {
			const [filePart, anchor] = link.target.split('#', 2);
			const target =
				filePart === '' ? path.join(ROOT, link.from) : path.resolve(ROOT, path.dirname(link.from), decodeURIComponent(filePart));
			if (!existsSync(target)) {
				broken.push(`${link.from}:${link.line} → ${link.target} (no such file)`);
				continue;
			}
			if (anchor === undefined) continue;
			if (statSync(target).isDirectory() || !target.endsWith('.md')) {
				broken.push(`${link.from}:${link.line} → ${link.target} (anchor into a file that is not Markdown)`);
				continue;
			}
			if (!anchorsOf(target).has(anchor)) broken.push(`${link.from}:${link.line} → ${link.target} (no such heading)`);
		}
		expect(broken).toEqual([]);
	});
});

describe('docs: GitHub slug rules', () => {
	it.each([
		['Lifecycle: Permanent and Lease', 'lifecycle-permanent-and-lease'],
		['Raw body vs. canonical JSON', 'raw-body-vs-canonical-json'],
		['Idempotency Reserve (`n8n-nodes-idempotency.idempotencyReserve`)', 'idempotency-reserve-n8n-nodes-idempotencyidempotencyreserve'],
		['Scaling out (queue mode)', 'scaling-out-queue-mode'],
		['Key strategies & *exact* keys', 'key-strategies--exact-keys'],
		['Retention: one rule', 'retention-one-rule'],
		['Scheme `snake_case` names', 'scheme-snake_case-names'],
	])('%s → %s', (heading, slug) => {
		expect(githubSlug(heading)).toBe(slug);
	});
});

describe('README', () => {
	it("is a user's page of at most 300 lines", () => {
		const lines = readFileSync(path.join(ROOT, 'README.md'), 'utf8').trimEnd().split('\n').length;
		expect(lines).toBeLessThanOrEqual(300);
	});
});

describe('docs/testing.md', () => {
	it('names the production checklist by the titles its end-to-end tests have', () => {
		const page = readFileSync(path.join(DOCS, 'testing.md'), 'utf8');
		const section = page.slice(page.indexOf('## The production checklist'));
		const named = [...section.matchAll(/^\| \d \| `([^`]+)` \|/gm)].map((match) => match[1]);
		expect(named).toHaveLength(6);
		// The six tests are defined once, for both stores.
		const tests = readFileSync(path.join(ROOT, 'test', 'support', 'e2e', 'checklist.ts'), 'utf8');
		const titles = [...tests.matchAll(/\b(?:it|test)\(\s*(['"`])(.+?)\1/g)].map((match) => match[2]);
		expect(named.filter((name) => !titles.includes(name))).toEqual([]);
	});
});
