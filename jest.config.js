// Fast suites: unit (no database) and integration (a real Postgres: embedded unless DATABASE_URL is set).
const tsJest = ['ts-jest', { tsconfig: 'tsconfig.test.json' }];

module.exports = {
	testTimeout: 60000,
	projects: [
		{
			displayName: 'unit',
			testMatch: ['<rootDir>/test/unit/**/*.test.ts'],
			transform: { '^.+\\.ts$': tsJest },
			testEnvironment: 'node',
		},
		{
			displayName: 'integration',
			testMatch: ['<rootDir>/test/integration/**/*.test.ts'],
			transform: { '^.+\\.ts$': tsJest },
			testEnvironment: 'node',
			globalSetup: '<rootDir>/test/support/globalSetup.ts',
			globalTeardown: '<rootDir>/test/support/globalTeardown.ts',
		},
	],
};
