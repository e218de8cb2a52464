// Fast suites: unit (no database), integration (a real Postgres: embedded unless DATABASE_URL is set)
// and conformance (every store behaviour on both backends: that Postgres, and the embedded store on
// temporary files, which needs a Node with node:sqlite). On a Node without it, `npx jest` and
// `npm test` run themselves again under one that has it (test/support/stack/sqliteNode.ts).
require('./test/support/register-ts');
require('./test/support/stack/sqliteNode').rerunUnderSqliteNode();

// The end-to-end runs and the demo leave packed copies of the package (with their own pg) there.
const modulePathIgnorePatterns = ['<rootDir>/.e2e/', '<rootDir>/.demo/'];
// Transpile only: the types step (tsconfig.test.json) type-checks every file once; ts-jest checking
// each test file again in each worker was more than half of the suites' CPU.
const tsJest = ['ts-jest', { tsconfig: 'tsconfig.transpile.json' }];

module.exports = {
	// Races of 8 OS processes passed 60 s when the full check ran two PostgreSQL lines beside queue
	// mode's n8n stack on two cores.
	testTimeout: 180000,
	projects: [
		{
			displayName: 'unit',
			testMatch: ['<rootDir>/test/unit/**/*.test.ts'],
			transform: { '^.+\\.ts$': tsJest },
			testEnvironment: 'node',
			modulePathIgnorePatterns,
		},
		{
			displayName: 'integration',
			testMatch: ['<rootDir>/test/integration/**/*.test.ts'],
			transform: { '^.+\\.ts$': tsJest },
			testEnvironment: 'node',
			modulePathIgnorePatterns,
			globalSetup: '<rootDir>/test/support/globalSetup.ts',
			globalTeardown: '<rootDir>/test/support/globalTeardown.ts',
		},
		{
			displayName: 'conformance',
			testMatch: ['<rootDir>/test/conformance/**/*.test.ts'],
			transform: { '^.+\\.ts$': tsJest },
			testEnvironment: 'node',
			modulePathIgnorePatterns,
			// The same setup as integration: when both projects run, they share one Postgres.
			globalSetup: '<rootDir>/test/support/globalSetup.ts',
			globalTeardown: '<rootDir>/test/support/globalTeardown.ts',
		},
	],
};
