// End-to-end suite: a real n8n with this package installed as a community package, real Postgres,
// real HTTP deliveries. One stack for all test files (globalSetup), files run one by one.
// E2E_TOPOLOGY=single (default): one n8n process; E2E_TOPOLOGY=queue: n8n's queue mode (Redis,
// main + 2 workers). E2E_TIER=full (default) runs every file tagged with the topology;
// E2E_TIER=compatibility only those also tagged `compatibility` (each file's "// e2e-tags:" line,
// test/support/e2e/tags.js). scripts/test-e2e.ts (npm run test:e2e) runs both topologies.
// On n8n 1.x, queue mode leaves out what n8n 1.x itself fails (test/support/stack/n8nVersion.ts, queueFilesNotRun).
// The harness is TypeScript run from source (no build step): the same hook child processes use.
require('./test/support/register-ts');
const { TOPOLOGY } = require('./test/support/e2e/topology');
const { selectE2eFiles, selectedTier } = require('./test/support/e2e/tags');
const { selectedN8nVersion, queueFilesNotRun } = require('./test/support/stack/n8nVersion');

const tier = selectedTier();
const n8nVersion = selectedN8nVersion({ argv: [] });

module.exports = {
	displayName: `e2e ${TOPOLOGY} ${tier} (n8n ${n8nVersion})`,
	rootDir: __dirname,
	testMatch: selectE2eFiles({ topology: TOPOLOGY, tier }).map((file) => `<rootDir>/${file}`),
	testPathIgnorePatterns: ['/node_modules/', ...(TOPOLOGY === 'queue' ? queueFilesNotRun(n8nVersion) : [])],
	// Transpile only: the types step (tsconfig.test.json) type-checks the harness once.
	transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.transpile.json' }] },
	testEnvironment: 'node',
	// The stack's work dirs (n8n user folders with installed packages) are not part of the suite.
	modulePathIgnorePatterns: ['<rootDir>/.e2e/', '<rootDir>/.demo/'],
	// Files that share main's folder with the workers run together (each switch restarts the workers).
	testSequencer: '<rootDir>/test/support/e2e/sequencer.ts',
	globalSetup: '<rootDir>/test/support/e2e/globalSetup.ts',
	globalTeardown: '<rootDir>/test/support/e2e/globalTeardown.ts',
	setupFilesAfterEnv: ['<rootDir>/test/support/retry.ts'],
	maxWorkers: 1,
	// The construct matrix's rows (test.concurrent, the only concurrent tests here) mostly wait on n8n
	// and on leases: more of them at once than jest's default of 5.
	maxConcurrency: 16,
	testTimeout: 300000,
	slowTestThreshold: 60,
};
