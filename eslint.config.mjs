import { configWithoutCloudSupport } from '@n8n/node-cli/eslint';
import communityNodes from '@n8n/eslint-plugin-community-nodes';

// Without cloud support: this package has a runtime dependency (pg), which n8n Cloud does not allow.
export default [
	...configWithoutCloudSupport,
	{
		ignores: [
			'dist/**',
			'.e2e/**',
			'.demo/**',
			'coverage/**',
			'gulpfile.js',
			'jest*.config.js',
			// The few plain JavaScript files left on purpose: the hook that runs the TypeScript harness
			// from source, and the bench's floor trigger (a package n8n loads as it is).
			'test/support/register-ts.js',
			'bench/n8n/floor-trigger/**',
		],
	},
	{
		// The harness (tests, their stack, the benchmarks, the scripts) is linted with the product's
		// rules; it prints its progress and reports to the console on purpose.
		// The community-node rules are about code that runs inside n8n, so they stay on the product:
		// a harness spawns processes, evaluates the editor's expressions and holds test secrets.
		files: ['test/**/*.ts', 'bench/**/*.ts', 'scripts/**/*.ts'],
		rules: {
			...Object.fromEntries(Object.keys(communityNodes.rules).map((rule) => [`@n8n/community-nodes/${rule}`, 'off'])),
			'no-console': 'off',
			'@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true }],
		},
	},
	{
		// pg is this package's one runtime dependency, on purpose: n8n ships no Postgres client to
		// community nodes. That makes the package self-hosted only (not n8n Cloud); see README.
		files: ['package.json'],
		rules: { '@n8n/community-nodes/no-runtime-dependencies': 'off' },
	},
	{
		// The core stays n8n-free so it can be tested and reused without n8n.
		files: ['lib/**/*.ts'],
		rules: {
			'no-restricted-imports': ['error', { patterns: ['n8n-workflow', 'n8n-core', 'n8n-workflow/*'] }],
		},
	},
	{
		// Code several nodes use lives once in nodes/shared/ (or lib/): a node never reaches into another node's folder.
		files: ['nodes/**/*.ts'],
		rules: {
			'no-restricted-imports': [
				'error',
				{
					patterns: [
						{
							regex: '^(\\.\\./)+(Idempotency[A-Za-z]*|WebhookSignatureVerify)/',
							message: 'Import what several nodes share from nodes/shared/ (or lib/), not from another node.',
						},
					],
				},
			],
		},
	},
];
