// End-to-end suite: a real n8n 2.x with this package installed as a community package, real
// Postgres, real HTTP deliveries. One stack for all test files (globalSetup), files run one by one.
module.exports = {
	displayName: 'e2e',
	rootDir: __dirname,
	testMatch: ['<rootDir>/test/e2e/**/*.e2e.test.{js,ts}'],
	transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.test.json' }] },
	testEnvironment: 'node',
	globalSetup: '<rootDir>/test/e2e/support/globalSetup.js',
	globalTeardown: '<rootDir>/test/e2e/support/globalTeardown.js',
	maxWorkers: 1,
	testTimeout: 180000,
	slowTestThreshold: 60,
};
