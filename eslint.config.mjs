import { configWithoutCloudSupport } from '@n8n/node-cli/eslint';

// Without cloud support: this package has a runtime dependency (pg), which n8n Cloud does not allow.
export default [
	...configWithoutCloudSupport,
	{ ignores: ['dist/**', '.e2e/**', '.demo/**', 'coverage/**', 'test/**', 'bench/**', 'scripts/**', 'gulpfile.js', 'jest*.config.js'] },
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
