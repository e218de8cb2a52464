import fs from 'node:fs';
import path from 'node:path';

import { growthWarnings } from '../support/stack/timings';

// test:all ends with a warning for each step that grew by more than 20 % over the figure
// docs/testing.md records for it: growth is seen before it breaks CI's budget.

const recorded = `
<!-- ci-step-seconds:start -->
| step | seconds |
|---|---|
| lint | 25 |
| end to end (n8n 2.41.1, full tier, queue) | 1100 |
<!-- ci-step-seconds:end -->
`;

describe('growthWarnings', () => {
	it('names a step more than 20 % over its recorded figure, and only that one', () => {
		expect(
			growthWarnings(recorded, [
				{ name: 'lint', seconds: 30 },
				{ name: 'end to end (n8n 2.41.1, full tier, queue)', seconds: 1400 },
				{ name: 'a step with no figure', seconds: 9999 },
			]),
		).toEqual(['', 'warning: end to end (n8n 2.41.1, full tier, queue) took 1400 s, 27 % over the 1100 s recorded in docs/testing.md']);
	});

	it('says so when nothing is recorded', () => {
		expect(growthWarnings('no table here', [{ name: 'lint', seconds: 1 }])).toEqual([
			'',
			'warning: no step times recorded in docs/testing.md: growth not checked',
		]);
	});

	it('docs/testing.md records a figure for every step of a full run, under the names the run prints', () => {
		const text = fs.readFileSync(path.join(__dirname, '..', '..', 'docs', 'testing.md'), 'utf8');
		const names = [
			'lint',
			'types',
			'build',
			'unit + integration + conformance (PostgreSQL 18, embedded)',
			'conformance, Postgres half (PostgreSQL 14 and 16, side by side)',
			"construct matrix (n8n 2.41.1's own nodes, in-process)",
			'end to end (n8n 2.41.1, full tier, queue)',
			'end to end (n8n 2.41.1, full tier, single)',
			'end to end (n8n 1.123.81, compatibility tier, queue)',
			'end to end (n8n 1.123.81, compatibility tier, single)',
			'benchmarks (smoke)',
			'the whole run (after npm ci)',
		];
		// Each at ten times its figure: a step without a figure would give no warning.
		expect(
			growthWarnings(
				text,
				names.map((name) => ({ name, seconds: 1e6 })),
			).filter((line) => line !== ''),
		).toHaveLength(names.length);
	});
});
